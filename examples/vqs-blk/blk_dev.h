/* SPDX-License-Identifier: MIT */
/*
 * The virtio-blk device vqs-blk serves over vhost-user: its features, configuration space and the
 * queue handler that runs requests on the scheduler's workers.
 */
#ifndef VQS_BLK_DEV_H
#define VQS_BLK_DEV_H

#include <stdatomic.h>
#include <vqsched/vqsched.h>

#include "blk_disk.h"
#include "blk_io.h"
#include "blk_req.h"
#include "blk_spec.h"

struct blk_dev_opts {
	uint16_t num_queues; /* 1..256 */
	uint32_t blk_size;   /* logical block size reported to the guest (power of two >= 512) */
	const char *serial;  /* GET_ID answer, at most 20 bytes used */
	bool packed;         /* offer VIRTIO_F_RING_PACKED */
};

struct blk_dev {
	struct vqs_vu_device_ops ops;
	struct blk_disk disk;
	struct blk_limits lim;
	struct blk_config config;
	struct blk_io *io;         /* NULL: requests run on the scheduler's worker */
	_Atomic uint64_t requests; /* completed, for the exit summary */
};

/* Describe disk (already open, now owned by dev) as a virtio-blk device. 0 or -EINVAL.
 * Threads: any, before the backend starts. */
int blk_dev_init(struct blk_dev *dev, const struct blk_dev_opts *o, const struct blk_disk *disk);

/* Run request r and complete it. Threads: a worker or an I/O thread. */
void blk_dev_run(struct blk_dev *dev, struct vqs_req *r);

#endif
