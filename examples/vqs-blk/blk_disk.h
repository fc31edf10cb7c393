/* SPDX-License-Identifier: MIT */
/*
 * The backing file of a vqs-blk disk: whole-request reads and writes straight between the file
 * and guest buffers, flush, and hole punching. Every call may run on any worker at once (the
 * file offset is never used).
 */
#ifndef VQS_BLK_DISK_H
#define VQS_BLK_DISK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

struct blk_disk {
	int fd;
	uint64_t sectors; /* capacity in 512-byte sectors (the file size rounded down) */
};

/* Open (creating it when missing) and, with size > 0, set the file to size bytes. 0 or -errno.
 * Threads: any, once. */
int blk_disk_open(struct blk_disk *d, const char *path, uint64_t size);
void blk_disk_close(struct blk_disk *d);
/* Transfer all of iov[0..n) at byte offset `off`, retrying short transfers. 0, or -errno
 * (-EIO for an unexpected end of file). Threads: any. */
int blk_disk_rw(const struct blk_disk *d, bool write, uint64_t off, const struct iovec *iov,
		unsigned n);
/* Make every completed write durable. Threads: any. */
int blk_disk_flush(const struct blk_disk *d);
/* Deallocate [off, off+len): reads then return zeroes. Threads: any. */
int blk_disk_punch(const struct blk_disk *d, uint64_t off, uint64_t len);

#endif
