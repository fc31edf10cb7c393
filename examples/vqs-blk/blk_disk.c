/* SPDX-License-Identifier: MIT */
#include "blk_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blk_spec.h"

int blk_disk_open(struct blk_disk *d, const char *path, uint64_t size)
{
	d->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (d->fd < 0)
		return -errno;
	struct stat st;
	int err = size && ftruncate(d->fd, (off_t)size) < 0 ? -errno : 0;
	if (err == 0 && fstat(d->fd, &st) < 0)
		err = -errno;
	if (err < 0) {
		close(d->fd);
		d->fd = -1;
		return err;
	}
	d->sectors = (uint64_t)st.st_size >> BLK_SECTOR_SHIFT;
	return 0;
}

void blk_disk_close(struct blk_disk *d)
{
	if (d->fd >= 0)
		close(d->fd);
	d->fd = -1;
}

int blk_disk_rw(const struct blk_disk *d, bool write, uint64_t off, const struct iovec *iov,
		unsigned n)
{
	/* A short transfer (a signal, a page boundary of a huge write) leaves the rest to do: work
	 * on a copy of the vector so it can be advanced. */
	struct iovec v[IOV_MAX];
	if (n > IOV_MAX)
		return -EINVAL;
	memcpy(v, iov, n * sizeof(*v));
	unsigned at = 0;
	while (at < n) {
		if (v[at].iov_len == 0) {
			at++;
			continue;
		}
		ssize_t r = write ? pwritev(d->fd, v + at, (int)(n - at), (off_t)off)
				  : preadv(d->fd, v + at, (int)(n - at), (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EIO;
		off += (uint64_t)r;
		while (r > 0) {
			size_t c = (size_t)r < v[at].iov_len ? (size_t)r : v[at].iov_len;
			v[at].iov_base = (char *)v[at].iov_base + c;
			v[at].iov_len -= c;
			r -= (ssize_t)c;
			if (v[at].iov_len == 0)
				at++;
		}
	}
	return 0;
}

int blk_disk_flush(const struct blk_disk *d)
{
	return fdatasync(d->fd) < 0 ? -errno : 0;
}

int blk_disk_punch(const struct blk_disk *d, uint64_t off, uint64_t len)
{
	if (fallocate(d->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	if (errno != EOPNOTSUPP)
		return -errno;
	/* A file system without holes: zeroes still make later reads return zeroes. */
	if (fallocate(d->fd, FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len) == 0)
		return 0;
	return -errno;
}
