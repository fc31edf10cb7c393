/* SPDX-License-Identifier: MIT */
/*
 * Inflight I/O tracking for split queues, in the region layout of QEMU's
 * docs/interop/vhost-user.rst: every popped head is marked in flight with an increasing counter;
 * completions link the heads of a batch (last_batch_head/next), publish the used idx, then clear
 * the marks and record the used idx. A backend that crashed at any point between two of these
 * stores leaves enough behind for its successor to resubmit each in-flight chain exactly once.
 *
 * The region is shared with the frontend (peer-controlled): on restore it is read once into a
 * private list and every index in it is checked. Stores go through relaxed atomics separated by
 * signal fences so the compiler keeps the order a crash-time reader relies on (a crash only stops
 * this thread; the memory itself stays coherent).
 */
#include "ring/vq_internal.h"

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define INFLIGHT_ALIGN 64 /* per-queue region granularity, as libvhost-user lays queues out */

static inline void st8(uint8_t *p, uint8_t v)
{
	atomic_store_explicit((_Atomic uint8_t *)p, v, memory_order_relaxed);
}
static inline void st16(uint16_t *p, uint16_t v)
{
	atomic_store_explicit((_Atomic uint16_t *)p, v, memory_order_relaxed);
}
static inline void st64(uint64_t *p, uint64_t v)
{
	atomic_store_explicit((_Atomic uint64_t *)p, v, memory_order_relaxed);
}
static inline uint8_t ld8(uint8_t *p)
{
	return atomic_load_explicit((_Atomic uint8_t *)p, memory_order_relaxed);
}
static inline uint16_t ld16(uint16_t *p)
{
	return atomic_load_explicit((_Atomic uint16_t *)p, memory_order_relaxed);
}
static inline uint64_t ld64(uint64_t *p)
{
	return atomic_load_explicit((_Atomic uint64_t *)p, memory_order_relaxed);
}
/* Compiler-only ordering between region stores: what a crash may interrupt. */
static inline void crash_order(void) { atomic_signal_fence(memory_order_seq_cst); }

size_t vqs_split_inflight_size(unsigned num)
{
	size_t n = sizeof(struct vqs_split_inflight) + num * sizeof(struct vqs_split_inflight_desc);
	return (n + INFLIGHT_ALIGN - 1) / INFLIGHT_ALIGN * INFLIGHT_ALIGN;
}

unsigned vqs_split_inflight_pending(const struct vqs_vq *vq)
{
	return (unsigned)(vq->u.split.nresubmit - vq->u.split.resubmit_pos);
}

static void detach(struct vqs_split_ring *s)
{
	free(s->resubmit);
	s->resubmit = NULL;
	s->nresubmit = 0;
	s->resubmit_pos = 0;
	s->infl = NULL;
}

static void init_region(struct vqs_split_ring *s, struct vqs_split_inflight *r, unsigned num)
{
	memset(r->desc, 0, num * sizeof(r->desc[0]));
	st64(&r->features, 0);
	st16(&r->desc_num, (uint16_t)num);
	st16(&r->last_batch_head, 0);
	st16(&r->used_idx, s->used_idx);
	crash_order();
	/* Written last: version != 0 is what marks the region as initialised. */
	st16(&r->version, VQS_SPLIT_INFLIGHT_VERSION);
	s->infl_counter = 1;
}

static int by_counter(const void *a, const void *b)
{
	const struct vqs_split_resubmit *x = a, *y = b;
	if (x->counter != y->counter)
		return x->counter < y->counter ? -1 : 1;
	return (x->head > y->head) - (x->head < y->head);
}

/*
 * A crash between the used idx store and the inflight used_idx update left the last batch
 * marked in flight although the driver already got it: unmark that batch.
 */
static int repair_torn_batch(struct vqs_split_inflight *r, unsigned num, uint16_t ring_used)
{
	uint16_t recorded = ld16(&r->used_idx);
	unsigned batch = (uint16_t)(ring_used - recorded);
	if (batch > num)
		return -EINVAL;
	uint16_t h = ld16(&r->last_batch_head);
	for (unsigned i = 0; i < batch; i++) {
		if (h >= num)
			return -EINVAL;
		st8(&r->desc[h].inflight, 0);
		h = ld16(&r->desc[h].next);
	}
	crash_order();
	st16(&r->used_idx, ring_used);
	return 0;
}

static int restore(struct vqs_vq *vq, struct vqs_split_inflight *r)
{
	struct vqs_split_ring *s = &vq->u.split;
	unsigned num = vq->cfg.num;
	uint16_t ring_used = le16toh(ld16(&s->used->idx));
	int rc = repair_torn_batch(r, num, ring_used);
	if (rc)
		return rc;
	struct vqs_split_resubmit *list = malloc(num * sizeof(*list));
	if (!list)
		return -ENOMEM;
	unsigned n = 0;
	uint64_t max_counter = 0;
	for (unsigned i = 0; i < num; i++) {
		if (!ld8(&r->desc[i].inflight))
			continue;
		uint64_t counter = ld64(&r->desc[i].counter);
		list[n++] = (struct vqs_split_resubmit){.counter = counter, .head = (uint16_t)i};
		if (counter > max_counter)
			max_counter = counter;
	}
	qsort(list, n, sizeof(*list), by_counter);
	if (n == 0) {
		free(list);
		list = NULL;
	}
	memset(s->busy, 0, vq->cfg.num);
	for (unsigned i = 0; i < n; i++)
		s->busy[list[i].head] = true;
	s->resubmit = list;
	s->nresubmit = (uint16_t)n;
	s->resubmit_pos = 0;
	s->inuse = (uint16_t)n;
	s->pending = 0;
	s->infl_counter = max_counter + 1;
	/* The ring is where the driver stands: continue from its used idx. Every chain popped
	 * before the crash is either used (counted there) or in flight (resubmitted), so avail
	 * entries resume right after them. */
	s->used_idx = ring_used;
	s->signalled_valid = false;
	s->last_avail_idx = (uint16_t)(ring_used + n);
	s->avail_idx = s->last_avail_idx;
	s->avail_since_restore = 0;
	return 0;
}

int vqs_split_set_inflight(struct vqs_vq *vq, void *region, size_t len, bool restore_it)
{
	struct vqs_split_ring *s = &vq->u.split;
	unsigned num = vq->cfg.num;
	detach(s);
	if (!region)
		return 0;
	if ((uintptr_t)region % _Alignof(struct vqs_split_inflight) ||
	    len < sizeof(struct vqs_split_inflight) + num * sizeof(struct vqs_split_inflight_desc))
		return -EINVAL;
	struct vqs_split_inflight *r = region;
	uint16_t version = ld16(&r->version);
	/* Version 0 is a region nobody initialised yet: nothing to restore. */
	if (!restore_it || version == 0) {
		init_region(s, r, num);
		s->infl = r;
		return 0;
	}
	if (version != VQS_SPLIT_INFLIGHT_VERSION || ld16(&r->desc_num) != num)
		return -EINVAL;
	int rc = restore(vq, r);
	if (rc)
		return rc;
	s->infl = r;
	return 0;
}

void vqs_split_infl_popped(struct vqs_vq *vq, uint16_t head)
{
	struct vqs_split_ring *s = &vq->u.split;
	st64(&s->infl->desc[head].counter, s->infl_counter++);
	crash_order();
	st8(&s->infl->desc[head].inflight, 1);
}

void vqs_split_infl_unpopped(struct vqs_vq *vq, uint16_t head)
{
	st8(&vq->u.split.infl->desc[head].inflight, 0);
}

void vqs_split_infl_filled(struct vqs_vq *vq, uint16_t head)
{
	struct vqs_split_inflight *r = vq->u.split.infl;
	st16(&r->desc[head].next, ld16(&r->last_batch_head));
	crash_order();
	st16(&r->last_batch_head, head);
}

void vqs_split_infl_flushed(struct vqs_vq *vq, unsigned n)
{
	struct vqs_split_ring *s = &vq->u.split;
	struct vqs_split_inflight *r = s->infl;
	unsigned num = vq->cfg.num;
	crash_order();
	uint16_t h = ld16(&r->last_batch_head);
	for (unsigned i = 0; i < n && h < num; i++) {
		st8(&r->desc[h].inflight, 0);
		h = ld16(&r->desc[h].next);
	}
	crash_order();
	st16(&r->used_idx, s->used_idx);
}
