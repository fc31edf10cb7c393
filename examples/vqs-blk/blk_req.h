/* SPDX-License-Identifier: MIT */
/*
 * One virtio-blk request, from a popped chain to its status byte. The chain comes from a guest
 * and is hostile: the header is copied out once, every length and sector range is checked
 * before the disk is touched, and a request that breaks a rule gets an error status (or, when it
 * has no room even for the status byte, nothing) instead of crashing or reaching past the disk.
 */
#ifndef VQS_BLK_REQ_H
#define VQS_BLK_REQ_H

#include <vqsched/vqsched.h>

#include "blk_disk.h"

struct blk_limits {
	uint32_t max_discard_sectors;
	uint32_t max_discard_seg;
	char id[20]; /* GET_ID answer, zero padded */
};

/* Run the request in chain e against d; returns the byte count to report as written (the whole
 * writable part, which ends with the status byte), 0 when there is no writable byte.
 * Threads: any (a worker). */
uint32_t blk_req_run(const struct blk_disk *d, const struct blk_limits *lim,
		     const struct vqs_elem *e);

#endif
