/* SPDX-License-Identifier: MIT */
#include "blk_dev.h"

#include <errno.h>
#include <string.h>

/*
 * A request's chain holds the header, the data segments and the status byte; the device asks the
 * scheduler for IOV_PER_REQ iovecs per request and tells the guest seg_max = IOV_PER_REQ - 2 (a
 * longer chain would break the queue). 128 matches what Linux's virtio-blk uses by default.
 */
#define IOV_PER_REQ 130
#define SEG_MAX (IOV_PER_REQ - 2)
#define MAX_DISCARD_SECTORS (32u << 11) /* 32 MiB per segment */
#define MAX_DISCARD_SEG 16

void blk_dev_run(struct blk_dev *dev, struct vqs_req *r)
{
	uint32_t written = blk_req_run(&dev->disk, &dev->lim, &r->elem);
	atomic_fetch_add_explicit(&dev->counters->done, 1, memory_order_relaxed);
	vqs_req_complete(r, written);
}

static unsigned handle(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	struct blk_queue *bq = opaque;
	struct blk_dev *dev = bq->dev;
	atomic_fetch_add_explicit(&dev->counters->taken, n, memory_order_relaxed);
	atomic_fetch_add_explicit(&dev->counters->queue_taken[bq->idx], n, memory_order_relaxed);
	if (dev->io)
		blk_io_submit(dev->io, reqs, n);
	else
		for (unsigned i = 0; i < n; i++)
			blk_dev_run(dev, reqs[i]);
	return n;
}

static vqs_handler_fn queue_handler(void *opaque, unsigned qidx, void **handler_opaque)
{
	struct blk_dev *dev = opaque;
	*handler_opaque = &dev->queues[qidx];
	return handle;
}

static int get_config(void *opaque, uint32_t offset, void *buf, uint32_t len)
{
	struct blk_dev *dev = opaque;
	memcpy(buf, (const uint8_t *)&dev->config + offset, len);
	return 0;
}

/* The only writable field (writeback) needs CONFIG_WCE, which is not offered. */
static int set_config(void *opaque, uint32_t offset, const void *buf, uint32_t len)
{
	return -EPERM;
}

int blk_dev_init(struct blk_dev *dev, const struct blk_dev_opts *o, const struct blk_disk *disk)
{
	if (!o->num_queues || o->num_queues > BLK_QUEUES_MAX || o->blk_size < BLK_SECTOR_SIZE ||
	    (o->blk_size & (o->blk_size - 1)))
		return -EINVAL;
	memset(dev, 0, sizeof(*dev));
	dev->disk = *disk;
	dev->counters = o->counters ? o->counters : &dev->own;
	for (unsigned i = 0; i < o->num_queues; i++)
		dev->queues[i] = (struct blk_queue){ dev, i };
	dev->lim.max_discard_sectors = MAX_DISCARD_SECTORS;
	dev->lim.max_discard_seg = MAX_DISCARD_SEG;
	/* The id is zero padded, with no terminator when it fills all 20 bytes (5.2.6). */
	if (o->serial)
		memcpy(dev->lim.id, o->serial, strnlen(o->serial, sizeof(dev->lim.id)));
	dev->config = (struct blk_config){
		.capacity = disk->sectors,
		.seg_max = SEG_MAX,
		.blk_size = o->blk_size,
		.num_queues = o->num_queues,
		.max_discard_sectors = MAX_DISCARD_SECTORS,
		.max_discard_seg = MAX_DISCARD_SEG,
		.discard_sector_alignment = o->blk_size >> BLK_SECTOR_SHIFT,
		.max_write_zeroes_sectors = MAX_DISCARD_SECTORS,
		.max_write_zeroes_seg = MAX_DISCARD_SEG,
		.write_zeroes_may_unmap = 1,
	};
	dev->ops = (struct vqs_vu_device_ops){
		.size = sizeof(dev->ops),
		.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
			    VQS_BIT(VQS_F_INDIRECT_DESC) | VQS_BIT(BLK_F_SEG_MAX) |
			    VQS_BIT(BLK_F_BLK_SIZE) | VQS_BIT(BLK_F_FLUSH) | VQS_BIT(BLK_F_MQ) |
			    VQS_BIT(BLK_F_DISCARD) | VQS_BIT(BLK_F_WRITE_ZEROES) |
			    (o->packed ? VQS_BIT(VQS_F_RING_PACKED) : 0),
		.protocol_features = VQS_VU_PROTOCOL_SUPPORTED,
		.num_queues = o->num_queues,
		.config_size = sizeof(dev->config),
		.queue_handler = queue_handler,
		.get_config = get_config,
		.set_config = set_config,
		.iov_per_req = IOV_PER_REQ,
	};
	return 0;
}
