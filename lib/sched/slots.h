/* SPDX-License-Identifier: MIT */
/*
 * Request slots (one per chain id) and the memory-table pins their batches share, the IN_ORDER record of popped
 * requests, and what the turn (turn.c) and the completion API (complete.c) both do to a request.
 * Owner of the queue only. Inline: several run once per request.
 */
#ifndef VQS_SCHED_SLOTS_H
#define VQS_SCHED_SLOTS_H

#include "mem/pin.h"
#include "sched/internal.h"
#include "util/log.h"

/* The request of chain id. */
static inline struct req_slot *slot_of(const struct vqs_queue *q, unsigned id)
{
	return (struct req_slot *)(q->reqs + (size_t)id * q->req_stride);
}

/* The requests of long chains freed since the last pop (filled or given back): their elements
 * name their own iovecs again, before the ring pops into them. Owner of q. */
static inline void restore_long(struct vqs_queue *q)
{
	unsigned k = 0;
	for (unsigned i = 0; i < q->nlong; i++) {
		struct req_slot *r = slot_of(q, q->long_ids[i]);
		if (r->st == SLOT_FREE || r->st == SLOT_DONE_HERE)
			r->req.elem.iov = r->iov;
		else
			q->long_ids[k++] = q->long_ids[i];
	}
	q->nlong = k;
}

/* Drop n of pin's references; the last one unpins the table. */
static inline void pin_drop(struct vqs_queue *q, struct pin_ref *pin, unsigned n)
{
	if ((pin->refs -= n))
		return;
	vqs_mem_table_put(pin->t);
	pin->next_free = q->free_pins;
	q->free_pins = pin;
}

/* Drop the owner's own reference on q's current pin (vqs_queue.pin_cur). Owner of q. */
static inline void queue_unpin(struct vqs_queue *q)
{
	if (q->pin_cur) {
		pin_drop(q, q->pin_cur, 1);
		q->pin_cur = NULL;
	}
}

/* Free r, whose reference on its batch's pin the caller drops. */
static inline void slot_free(struct vqs_queue *q, struct req_slot *r)
{
	r->st = SLOT_FREE;
	q->nout--;
}

static inline void slot_put(struct vqs_queue *q, struct req_slot *r)
{
	pin_drop(q, r->pin, 1);
	slot_free(q, r);
}

/* Count the latency of n requests noticed at t0, from then to `now`. Owner of q. */
static inline void stat_latency(struct vqs_queue *q, uint64_t t0, uint64_t now, unsigned n)
{
	stat_add(&q->c.latency_hist[stat_bucket(now - t0, VQS_STATS_LAT_BUCKETS)], n);
}

/* What a handler reported written, within r's writable bytes. */
static inline uint32_t checked_written(const struct req_slot *r, uint32_t written)
{
	if (written > r->req.elem.in_len) {
		vqs_warn("sched: handler reported %u bytes written into a %u-byte buffer", written,
			 r->req.elem.in_len);
		return r->req.elem.in_len;
	}
	return written;
}

/* r, a request of the batch whose handler runs on this thread (SLOT_HANDED), completed with
 * `written` bytes, within its writable bytes (the caller checked: the fast paths leave a longer
 * report, to be clamped with a warning, to an out-of-line path): staged at *fe, *fw, a place of
 * its worker's fill arrays, in the order of completion (the fill's order unless the queue is
 * IN_ORDER, whose turn stages again in pop order: stage_in_order), so that a batch the handler
 * completes in its call takes no second pass over it. */
static inline void stage_here(const struct vqs_elem **fe, uint32_t *fw, struct req_slot *r,
			      uint32_t written)
{
	r->written = written;
	r->st = SLOT_DONE_HERE;
	*fe = &r->req.elem;
	*fw = written;
}

static inline void sched_queue_order_init(struct vqs_queue *q)
{
	struct vqs_vq_config c;
	/* Only while nothing is outstanding: the order holds every request popped since. */
	if (!q->nout && vqs_vq_get_config(q->vq, &c) == 0)
		q->in_order = c.features & VQS_BIT(VQS_F_IN_ORDER);
}

static inline unsigned order_at(const struct vqs_queue *q, unsigned i)
{
	unsigned k = q->ord_head + i;
	return k < q->nslots ? k : k - q->nslots;
}

/* The m oldest requests left the order (published). */
static inline void order_advance(struct vqs_queue *q, unsigned m)
{
	q->ord_head = order_at(q, m);
	q->ord_len -= m;
}

static inline void warn_rejected(const struct vqs_elem *e)
{
	vqs_warn("sched: used entry for chain %u rejected (queue reset?)", e->id);
}

#endif
