/* SPDX-License-Identifier: MIT */
/*
 * Public entry points of the driver-side queue: validate what the caller passes, then dispatch to
 * the layout's ops table (driver_split.c, driver_packed.c). Rules shared by both layouts live here
 * so each layout only deals with its wire format.
 */
#include "ring/driver_internal.h"

#include <errno.h>
#include <stdlib.h>

#include "util/log.h"
#include "util/alloc.h"

/* Most descriptors in one indirect table: tables are kept per slot for the queue's lifetime, so
 * this bounds the arena a queue's indirect tables can use (num * 2 KiB). */
#define VQS_DRV_INDIRECT_MAX 128u

int vqs_drv_base_init(struct vqs_drv_vq *dq, const struct vqs_drv_vq_config *cfg)
{
	dq->gmem = cfg->gmem;
	dq->num = cfg->num;
	dq->features = cfg->features;
	dq->event_idx = cfg->features & VQS_BIT(VQS_F_EVENT_IDX);
	dq->indirect = cfg->features & VQS_BIT(VQS_F_INDIRECT_DESC);
	dq->indirect_max = dq->indirect ? (cfg->num < VQS_DRV_INDIRECT_MAX ? cfg->num
									   : VQS_DRV_INDIRECT_MAX)
					: 0;
	dq->num_free = cfg->num;
	dq->slots = vqs_alloc_lines(cfg->num, sizeof(*dq->slots));
	return dq->slots ? 0 : -ENOMEM;
}

void vqs_drv_base_fini(struct vqs_drv_vq *dq)
{
	free(dq->slots);
	dq->slots = NULL;
}

void *vqs_drv_indirect_table(struct vqs_drv_vq *dq, unsigned slot, uint64_t *gpa)
{
	struct vqs_drv_slot *s = &dq->slots[slot];
	if (!s->indirect_gpa) {
		size_t len = 16u * (size_t)dq->indirect_max;
		uint64_t g = vqs_gmem_alloc(dq->gmem, len, 16);
		if (!g)
			return NULL;
		s->indirect_host = vqs_drv_area(dq, g, len);
		s->indirect_gpa = g;
	}
	*gpa = s->indirect_gpa;
	return s->indirect_host;
}

void *vqs_drv_area(const struct vqs_drv_vq *dq, uint64_t gpa, size_t len)
{
	return vqs_gmem_host(dq->gmem, gpa, len);
}

void vqs_drv_break(struct vqs_drv_vq *dq, const char *why, unsigned long long value)
{
	if (dq->broken)
		return;
	dq->broken = true;
	vqs_err("driver queue (num %u): device broke the ring: %s (%llu); queue stopped", dq->num,
		why, value);
}

uint32_t vqs_drv_len_clamped(struct vqs_drv_vq *dq, uint32_t written, uint32_t in_len)
{
	if (!dq->len_warned)
		vqs_warn("driver queue (num %u): device reported %u bytes written into a chain of "
			 "%u writable bytes; clamped", dq->num, written, in_len);
	dq->len_warned = true;
	return in_len;
}

/*
 * -EINVAL for a malformed config (NULL, size too small, no arena, num 0 or above 32768; split
 * also needs a power of two), -ENOTSUP for a feature the layout does not implement, -ENOSPC when
 * the arena cannot hold the ring areas, -ENOMEM.
 */
int vqs_drv_vq_create(struct vqs_drv_vq **out, const struct vqs_drv_vq_config *cfg)
{
	if (!out || !cfg || cfg->size < sizeof(*cfg) || !cfg->gmem || cfg->num == 0 ||
	    cfg->num > VQS_VQ_MAX_SIZE)
		return -EINVAL;
	const struct vqs_drv_ops *ops = (cfg->features & VQS_BIT(VQS_F_RING_PACKED))
						? &vqs_drv_packed_ops
						: &vqs_drv_split_ops;
	struct vqs_drv_vq *dq = NULL;
	int rc = ops->create(&dq, cfg);
	if (rc)
		return rc;
	dq->ops = ops;
	*out = dq;
	return 0;
}

void vqs_drv_vq_destroy(struct vqs_drv_vq *dq)
{
	if (dq)
		dq->ops->destroy(dq);
}

void vqs_drv_vq_addrs(const struct vqs_drv_vq *dq, uint64_t *desc, uint64_t *driver,
		      uint64_t *device)
{
	*desc = dq->desc_gpa;
	*driver = dq->driver_gpa;
	*device = dq->device_gpa;
}

/*
 * The checks both add calls share, then the layout's add. Beyond the header's -ENOSPC/-EINVAL:
 * -EINVAL also for a chain longer than the queue size or than 2^32-1 bytes, and for indirect
 * without INDIRECT_DESC or longer than one indirect table (128 descriptors, or num if smaller);
 * -ENOSPC also when the arena has no room for the slot's first indirect table; -EIO once the
 * device broke the ring.
 */
static inline int add_checked(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs,
			      unsigned out_num, unsigned in_num, void *const *tokens, unsigned n,
			      bool indirect)
{
	uint64_t total = (uint64_t)out_num + in_num;
	if (dq->broken)
		return -EIO;
	if (n == 0)
		return 0;
	if (!tokens || !bufs || total == 0 || total > dq->num)
		return -EINVAL;
	if (indirect && (!dq->indirect || total > dq->indirect_max))
		return -EINVAL;
	return dq->ops->add(dq, bufs, out_num, in_num, tokens, n, indirect);
}

int vqs_drv_add_batch(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
		      unsigned in_num, void *const *tokens, unsigned n, bool indirect)
{
	return add_checked(dq, bufs, out_num, in_num, tokens, n, indirect);
}

/* vqs_drv_add's every other case and every error, out of its line: vqs_drv_add stays a test
 * and a tail call. */
static __attribute__((noinline)) int add_one_checked(struct vqs_drv_vq *dq,
						     const struct vqs_drv_buf *bufs,
						     unsigned out_num, unsigned in_num, void *token,
						     bool indirect)
{
	int rc = add_checked(dq, bufs, out_num, in_num, &token, 1, indirect);
	return rc < 0 ? rc : 0;
}

/* A chain of one or two descriptors, not indirect, takes the layout's add1. */
int vqs_drv_add(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
		unsigned in_num, void *token, bool indirect)
{
	uint64_t total = (uint64_t)out_num + in_num;
	if (!dq->broken && !indirect && token && bufs && total - 1 < 2 && total <= dq->num)
		return dq->ops->add1(dq, bufs, out_num, (unsigned)total, token);
	return add_one_checked(dq, bufs, out_num, in_num, token, indirect);
}

bool vqs_drv_kick_prepare(struct vqs_drv_vq *dq)
{
	return !dq->broken && dq->ops->kick_prepare(dq);
}

unsigned vqs_drv_get_used_batch(struct vqs_drv_vq *dq, void **tokens, uint32_t *lens,
				unsigned max)
{
	if (dq->broken || max == 0)
		return 0;
	return dq->ops->get_used(dq, tokens, lens, max);
}

void *vqs_drv_get_used(struct vqs_drv_vq *dq, uint32_t *len)
{
	uint32_t dummy;
	if (dq->broken)
		return NULL;
	return dq->ops->get_used1(dq, len ? len : &dummy);
}

unsigned vqs_drv_free_count(const struct vqs_drv_vq *dq)
{
	return dq->num_free;
}

void vqs_drv_disable_cb(struct vqs_drv_vq *dq)
{
	dq->ops->disable_cb(dq);
}

bool vqs_drv_enable_cb(struct vqs_drv_vq *dq)
{
	return !dq->broken && dq->ops->enable_cb(dq);
}

bool vqs_drv_enable_cb_delayed(struct vqs_drv_vq *dq)
{
	return !dq->broken && dq->ops->enable_cb_delayed(dq);
}

bool vqs_drv_has_used(const struct vqs_drv_vq *dq)
{
	return !dq->broken && dq->ops->has_used(dq);
}

int vqs_drv_position(const struct vqs_drv_vq *dq, struct vqs_drv_pos *pos)
{
	*pos = (struct vqs_drv_pos){ 0 };
	return dq->broken ? -EIO : dq->ops->position(dq, pos);
}
