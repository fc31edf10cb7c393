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

#define BLK_QUEUES_MAX 256

/*
 * What the device has done, laid out as 64-bit words (taken, done, then taken per queue) so that
 * vqs-blk --counters can keep it in a file a test reads after the process was killed. A request
 * counts as taken when the handler gets it and as done just before its completion is published:
 * taken > done after a kill means the kill hit requests still in flight on the ring.
 */
struct blk_counters {
	_Atomic uint64_t taken;
	_Atomic uint64_t done;
	_Atomic uint64_t queue_taken[BLK_QUEUES_MAX];
};

struct blk_dev_opts {
	uint16_t num_queues; /* 1..BLK_QUEUES_MAX */
	uint32_t blk_size;   /* logical block size reported to the guest (power of two >= 512) */
	const char *serial;  /* GET_ID answer, at most 20 bytes used */
	bool packed;         /* offer VIRTIO_F_RING_PACKED */
	struct blk_counters *counters; /* zeroed storage for the counters; NULL: the device's own */
};

struct blk_dev;

/* A queue's handler opaque: which queue its requests come from. */
struct blk_queue {
	struct blk_dev *dev;
	unsigned idx;
};

struct blk_dev {
	struct vqs_vu_device_ops ops;
	struct blk_disk disk;
	struct blk_limits lim;
	struct blk_config config;
	struct blk_io *io;         /* NULL: requests run on the scheduler's worker */
	struct blk_counters *counters;
	struct blk_counters own;
	struct blk_queue queues[BLK_QUEUES_MAX];
};

/* Describe disk (already open, now owned by dev) as a virtio-blk device. 0 or -EINVAL.
 * Threads: any, before the backend starts. */
int blk_dev_init(struct blk_dev *dev, const struct blk_dev_opts *o, const struct blk_disk *disk);

/* Run request r and complete it. Threads: a worker or an I/O thread. */
void blk_dev_run(struct blk_dev *dev, struct vqs_req *r);

#endif
