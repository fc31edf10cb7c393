/* SPDX-License-Identifier: MIT */
/*
 * Packed virtqueue, device side (virtio 1.x 2.8): pop chains from the descriptor ring, stage and
 * publish used descriptors, event suppression in both directions, ring state. Buffer validation
 * is the shared chain builder's (chain.c); this file only knows the packed wire format.
 *
 * Every descriptor is read once: its flags with an acquire load (pairs with the driver's release
 * store of the flags that made it available), then the other fields, into a local snapshot that
 * is all the rest of the code looks at. The next head's flags may have been read by begin (or
 * enable_notify), which keeps them for the pop instead of the pop reading them again.
 */
#include "ring/vq_internal.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

static struct vqs_packed_ring *ring(struct vqs_vq *vq) { return &vq->u.packed; }

static bool has(const struct vqs_vq *vq, unsigned feature)
{
	return vq->cfg.features & VQS_BIT(feature);
}

static void snapshot(struct vqs_vring_packed_desc *d, uint16_t flags,
		     struct vqs_vring_packed_desc *out)
{
	out->addr = le64toh(atomic_load_explicit((_Atomic uint64_t *)&d->addr, memory_order_relaxed));
	out->len = le32toh(atomic_load_explicit((_Atomic uint32_t *)&d->len, memory_order_relaxed));
	out->id = le16toh(atomic_load_explicit((_Atomic uint16_t *)&d->id, memory_order_relaxed));
	out->flags = flags;
}

static enum vqs_vq_err packed_resolve(struct vqs_vq *vq, const struct vqs_mem_table *t)
{
	struct vqs_packed_ring *p = ring(vq);
	const struct vqs_vq_config *c = &vq->cfg;
	void *desc = vqs_vq_ring_area(vq, t, c->desc_addr, vqs_vring_packed_desc_size(c->num));
	void *drv = vqs_vq_ring_area(vq, t, c->driver_addr, sizeof(struct vqs_vring_packed_event));
	void *dev = vqs_vq_ring_area(vq, t, c->device_addr, sizeof(struct vqs_vring_packed_event));
	if (!desc || !drv || !dev)
		return VQS_VQ_ERR_RING_UNMAPPED;
	p->desc = desc;
	p->driver_event = drv;
	p->device_event = dev;
	return VQS_VQ_OK;
}

/* Where the descriptors of the chain being popped come from: the ring, or (resubmission after
 * a restart) the inflight region's copy of a chain popped by the previous backend. */
struct desc_cursor {
	bool from_region;
	uint16_t slot; /* ring: next slot and the wrap counter it must be available with */
	bool wrap;
	uint16_t entry; /* region: next entry */
	unsigned left;  /* region: descriptors the record says the chain has */
	/* ring: the fast path of a two-descriptor chain looked at the next slot already
	 * (NEXT_READ: its snapshot is `next`, the slot stepped over; NEXT_UNAVAIL: it was not
	 * available), so that the walk reads no descriptor twice */
	enum { NEXT_UNREAD, NEXT_READ, NEXT_UNAVAIL } pend;
	struct vqs_vring_packed_desc next;
};

/* Snapshot of the cursor's next descriptor after the chain's first. VQS_VQ_OK or a reason. */
static enum vqs_vq_err cursor_next(struct vqs_vq *vq, struct desc_cursor *c,
				   struct vqs_vring_packed_desc *d)
{
	struct vqs_packed_ring *p = ring(vq);
	if (c->from_region) {
		if (c->left == 0)
			return VQS_VQ_ERR_CHAIN_LEN; /* record says shorter than its NEXT flags */
		c->left--;
		int next = vqs_packed_inflight_desc(vq, c->entry, d);
		if (next < 0)
			return VQS_VQ_ERR_NEXT_RANGE;
		c->entry = (uint16_t)next;
		return VQS_VQ_OK;
	}
	if (c->pend == NEXT_READ) {
		c->pend = NEXT_UNREAD;
		*d = c->next;
		return VQS_VQ_OK;
	}
	struct vqs_vring_packed_desc *slot = &p->desc[c->slot];
	uint16_t flags = c->pend == NEXT_UNAVAIL ? 0 : vqs_packed_flags_acquire(slot);
	/* 2.8.6: the driver makes a whole chain available before its head, so a descriptor in
	 * the middle that is not available with the head's wrap counter is a corrupt ring. */
	if (c->pend == NEXT_UNAVAIL || !vqs_packed_desc_is_avail(flags, c->wrap))
		return VQS_VQ_ERR_WRAP;
	snapshot(slot, flags, d);
	vqs_packed_advance(&c->slot, &c->wrap, 1, vq->cfg.num);
	return VQS_VQ_OK;
}

/* Add the buffers of an indirect table (2.8.19), copied out of guest memory once. */
static enum vqs_vq_err add_indirect(struct vqs_vq *vq, const struct vqs_mem_table *t,
				    struct vqs_chain *ch, const struct vqs_vring_packed_desc *d)
{
	if (!has(vq, VQS_F_INDIRECT_DESC))
		return VQS_VQ_ERR_INDIRECT_FEATURE;
	if (d->len == 0 || d->len % 16 || d->len / 16 > vq->cfg.num)
		return VQS_VQ_ERR_INDIRECT_LEN;
	struct vqs_vring_packed_desc *tab = vq->indirect_buf;
	unsigned n = d->len / 16;
	if (vqs_mem_copy_from(t, d->addr, tab, d->len))
		return VQS_VQ_ERR_ADDR;
	for (unsigned i = 0; i < n; i++) {
		uint16_t flags = le16toh(tab[i].flags);
		if (flags & VQS_VRING_DESC_F_INDIRECT)
			return VQS_VQ_ERR_NESTED_INDIRECT;
		/* Only WRITE is meaningful inside a table: its entries are used in order, so NEXT
		 * (or any other flag) means the driver wrote something else than a table. */
		if (flags & ~VQS_VRING_DESC_F_WRITE)
			return VQS_VQ_ERR_INDIRECT_FLAGS;
		enum vqs_vq_err err = vqs_chain_add(ch, t, le64toh(tab[i].addr), le32toh(tab[i].len),
						    flags & VQS_VRING_DESC_F_WRITE);
		if (err || ch->must_wait)
			return err;
	}
	return VQS_VQ_OK;
}

/*
 * Walk one chain whose first descriptor is *d (already snapshotted), building e; with an
 * inflight region attached, ring descriptors are recorded there as they are read. Returns
 * VQS_VQ_OK with *ndescs set and *d the last descriptor (it carries the buffer id), or a reason;
 * ch->must_wait when the chain waits for the long-chain area.
 */
static enum vqs_vq_err walk_chain(struct vqs_vq *vq, const struct vqs_mem_table *t,
				  struct desc_cursor *cur, struct vqs_vring_packed_desc *d,
				  struct vqs_chain *ch, unsigned *ndescs)
{
	struct vqs_packed_ring *p = ring(vq);
	unsigned num = vq->cfg.num;
	uint16_t entry = 0;
	if (p->inflight && !cur->from_region)
		entry = vqs_packed_inflight_first(vq);
	for (unsigned n = 1;; n++) {
		if (p->inflight && !cur->from_region)
			entry = vqs_packed_inflight_record(vq, entry, d);
		enum vqs_vq_err err;
		if (d->flags & VQS_VRING_DESC_F_INDIRECT) {
			/* 2.8.19: an indirect descriptor stands alone, never in a NEXT list. */
			if (n > 1 || (d->flags & VQS_VRING_DESC_F_NEXT))
				return VQS_VQ_ERR_INDIRECT_NEXT;
			err = add_indirect(vq, t, ch, d);
		} else {
			err = vqs_chain_add(ch, t, d->addr, d->len, d->flags & VQS_VRING_DESC_F_WRITE);
		}
		if (err || ch->must_wait)
			return err;
		if (!(d->flags & VQS_VRING_DESC_F_NEXT)) {
			*ndescs = n;
			return VQS_VQ_OK;
		}
		if (n >= num)
			return VQS_VQ_ERR_CHAIN_LEN;
		if ((err = cursor_next(vq, cur, d)))
			return err;
	}
}

/* The flags of the ring's next descriptor, slot (at last_avail_idx): those begin or
 * enable_notify read already, else read now, with acquire (pairs with the driver's release store
 * of the flags that made it available). */
static inline uint16_t head_flags(struct vqs_packed_ring *p, struct vqs_vring_packed_desc *slot)
{
	if (p->head_seen) {
		p->head_seen = false;
		return p->head_flags;
	}
	return vqs_packed_flags_acquire(slot);
}

/* The popped chain e (ndescs descriptors, its buffer id `id`, not in flight) is the device's
 * now: mark the id in flight, record it in the inflight region, move past its slots (ring chains:
 * cur says where the next one starts) or take it off the pending ones (resubmitted: `head` is
 * its region entry). */
static void take(struct vqs_vq *vq, struct vqs_elem *e, uint16_t id, unsigned ndescs, int head,
		 const struct desc_cursor *cur, bool in_area)
{
	struct vqs_packed_ring *p = ring(vq);
	uint16_t entry = 0;
	if (head >= 0) {
		vqs_packed_inflight_resubmitted(vq, (uint16_t)head);
		entry = (uint16_t)head;
	} else {
		if (p->inflight)
			entry = vqs_packed_inflight_commit(vq, ndescs);
		p->last_avail_idx = cur->slot;
		p->avail_wrap = cur->wrap;
	}
	p->ids[id] = (uint16_t)(p->inflight ? VQS_PACKED_ID_INFLIGHT + entry : ndescs);
	p->unfilled_descs += ndescs;
	e->id = id;
	if (in_area)
		vqs_long_hold(&vq->lg, e, id);
}

/* Iovecs of the scratch a by-id walk builds its chain in (see pop_walk). */
#define WALK_SCRATCH 16u

/*
 * Move the chain the walk built in the scratch element *sc into dst, the element of its id:
 * into dst's own storage when it fits there, else into the long-chain area (where the walk may
 * have built it already). False when it fits in neither (the area is held by chains in flight):
 * the chain waits, nothing consumed. *in_area: in, the walk built it in the area; out, it stays
 * there.
 */
static bool place(struct vqs_vq *vq, const struct vqs_elem *sc, struct vqs_elem *dst,
		  bool *in_area)
{
	struct vqs_long_area *lg = &vq->lg;
	const unsigned n = (unsigned)sc->out_num + sc->in_num;
	struct iovec *iov = dst->iov;
	if (n > dst->iov_cap) {
		if (!*in_area) {
			if (vq->cfg.max_iov - lg->used <= n)
				return false;
			iov = lg->iov + lg->used;
			*in_area = true;
		} else {
			iov = sc->iov;
		}
	} else {
		*in_area = false;
	}
	if (n && iov != sc->iov)
		memcpy(iov, sc->iov, n * sizeof(*iov));
	dst->iov = iov;
	dst->ndescs = sc->ndescs;
	dst->out_num = sc->out_num;
	dst->in_num = sc->in_num;
	dst->out_len = sc->out_len;
	dst->in_len = sc->in_len;
	return true;
}

/* Pop the chain whose first descriptor is *d (snapshotted; cur goes on after what was read) by
 * the general walk into to's element at place i: 0 (*nd: its descriptors), or -EBUSY (waits for
 * the long-chain area, nothing consumed), or -EIO. By id, the id is in the chain's last
 * descriptor: the walk builds the chain in a scratch element, and only a chain whose id is not in
 * flight is placed in the id's element. */
static __attribute__((noinline)) int pop_walk(struct vqs_vq *vq, const struct vqs_mem_table *t,
					      struct vqs_mem_win win[2], const struct vqs_pop_to *to,
					      unsigned i, struct desc_cursor *cur,
					      struct vqs_vring_packed_desc *d, int head,
					      unsigned *nd)
{
	struct iovec scratch[WALK_SCRATCH];
	struct vqs_elem sc = {.iov = scratch, .iov_cap = WALK_SCRATCH};
	struct vqs_elem *e = to->by_id ? &sc : vqs_pop_elem(to, i);
	struct vqs_chain ch;
	unsigned ndescs = 0;
	vq->walks++;
	vqs_chain_begin(&ch, e, vq);
	enum vqs_vq_err err = walk_chain(vq, t, cur, d, &ch, &ndescs);
	vqs_pop_wins(vq, t, win); /* the walk may have moved the hints */
	if (err)
		return vqs_vq_break(vq, err);
	if (ch.must_wait)
		return -EBUSY;
	if (cur->from_region && cur->left != 0)
		return vqs_vq_break(vq, VQS_VQ_ERR_CHAIN_LEN);
	vqs_chain_end(&ch);
	e->ndescs = (uint16_t)ndescs;
	/* 2.8.6: the buffer id is the one in the chain's last descriptor. */
	const uint16_t id = d->id;
	if (id >= vq->cfg.num || ring(vq)->ids[id] != VQS_PACKED_ID_FREE)
		return vqs_vq_break(vq, VQS_VQ_ERR_BUFFER_ID);
	bool in_area = ch.in_area;
	if (to->by_id) {
		struct vqs_elem *dst = vqs_pop_elem(to, id);
		if (!place(vq, &sc, dst, &in_area))
			return -EBUSY;
		e = dst;
	}
	take(vq, e, id, ndescs, head, cur, in_area);
	if (to->ids)
		to->ids[i] = id;
	*nd = ndescs;
	return 0;
}

/* One chain while the inflight region is involved (a chain to resubmit, or a ring chain to
 * record as it is read): 0, -EAGAIN (none available), -EBUSY or -EIO. */
static __attribute__((noinline)) int pop_recorded(struct vqs_vq *vq,
						  const struct vqs_mem_table *t,
						  struct vqs_mem_win win[2], const struct vqs_pop_to *to,
						  unsigned i)
{
	struct vqs_packed_ring *p = ring(vq);
	struct desc_cursor cur = {.slot = p->last_avail_idx, .wrap = p->avail_wrap};
	struct vqs_vring_packed_desc d;
	unsigned left = 0;
	int head = -1;
	if (p->resubmit_pending && (head = vqs_packed_inflight_next(vq, &left)) >= 0) {
		cur.from_region = true;
		cur.entry = (uint16_t)head;
		cur.left = left;
		enum vqs_vq_err err = cursor_next(vq, &cur, &d);
		if (err)
			return vqs_vq_break(vq, err);
	} else {
		struct vqs_vring_packed_desc *slot = &p->desc[cur.slot];
		uint16_t flags = head_flags(p, slot);
		if (!vqs_packed_desc_is_avail(flags, cur.wrap))
			return -EAGAIN;
		snapshot(slot, flags, &d);
		vqs_packed_advance(&cur.slot, &cur.wrap, 1, vq->cfg.num);
	}
	unsigned nd;
	return pop_walk(vq, t, win, to, i, &cur, &d, head, &nd);
}

/* The chains popped from ring position `from` (vqs_packed_linear) on end before (idx, wrap):
 * their slots are in flight, and the next pop starts there. */
static inline void advance_to(struct vqs_packed_ring *p, unsigned from, unsigned idx, bool wrap,
			      unsigned num)
{
	p->unfilled_descs += (vqs_packed_linear((uint16_t)idx, wrap, num) + 2 * num - from) %
			     (2 * num);
	p->last_avail_idx = (uint16_t)idx;
	p->avail_wrap = wrap;
}

/* A run of straight-line pops (pop_straight): the ring as the run sees it, and where it
 * stopped. */
struct packed_run {
	struct vqs_vring_packed_desc *desc;
	uint16_t *ids;
	/* the element of the chain at place i (by id: with id d) at base + i (d) * stride, and
	 * (by id) where the popped ids go */
	char *base;
	size_t stride;
	uint16_t *out;
	struct vqs_mem_win win[2]; /* the hinted regions (vqs_pop_wins) */
	unsigned num;
	/* a chain's first descriptor with these flags may start a pair (none when the ring or
	 * the device's iovec limit has no room for two: no pair run then) */
	uint16_t pair_first;
	unsigned idx;           /* the next head's slot */
	uint16_t want;          /* the AVAIL and USED bits an available descriptor at idx has */
	uint16_t f0;            /* the next head's flags, read once (unless the run ended) */
	enum { RUN_END, RUN_UNAVAIL, RUN_SHAPE, RUN_WALK, RUN_BAD_ID } stop;
	/* RUN_WALK: the snapshots taken, for the general walk (pend as desc_cursor's) */
	int pend;
	struct vqs_vring_packed_desc d, d1;
};

/*
 * Pop elems[i..m) while each next head is available and a chain of the run's shape in the
 * windows: one descriptor, or (pair) two (a readable first with NEXT, then neither NEXT nor
 * INDIRECT). Straight lines in a leaf function, one instance per shape, so that the state of
 * each stays in registers. The shape is judged by the head's flags before the rest of it is
 * read (RUN_SHAPE: nothing of it read but f0), so a head left to the other shape's run is read
 * once; a chain of the shape that does not fit the straight line is left to the walk with its
 * snapshots (RUN_WALK). Availability is found as each head's flags are read (AVAIL equal to
 * the wrap counter, USED not: 2.8.1). Returns where it stopped.
 */
static inline __attribute__((always_inline)) unsigned
pop_run(struct packed_run *r, unsigned i, unsigned m, const bool pair, const bool by_id)
{
	const uint16_t au = VQS_PACKED_F_AVAIL | VQS_PACKED_F_USED;
	const uint16_t chained = VQS_VRING_DESC_F_NEXT | VQS_VRING_DESC_F_INDIRECT;
	uint16_t *ids = r->ids;
	const unsigned num = r->num;
	/* the windows from memory: their values are operands, not registers */
	const struct vqs_mem_win *w = r->win;
	/* the next head as a pointer: no index to scale on every read */
	struct vqs_vring_packed_desc *dp = r->desc + r->idx, *const dend = r->desc + num;
	/* the head's availability and shape in one test: the flags it must have (the AVAIL and
	 * USED bits as available at dp, then the shape's) under the bits they are judged by */
	const uint16_t judged = au | chained | (pair ? VQS_VRING_DESC_F_WRITE : 0);
	uint16_t want = r->want | (pair ? r->pair_first : 0), f0 = r->f0;
	/* by place: the element as a pointer, no index to scale; by id: where the next id goes
	 * as a pointer */
	const size_t stride = r->stride;
	char *const start = by_id ? r->base : r->base + i * stride, *ep = start;
	char *const eend = by_id ? NULL : r->base + m * stride;
	uint16_t *op = by_id ? r->out + i : NULL, *const oend = by_id ? r->out + m : NULL;
	/* the heads before this one have their slot VQS_PACKED_AHEAD on inside the ring (none
	 * in a ring that short): no prefetch across the ring's end, whose first lines are then
	 * fetched by their reads (4 lines a lap of 64 in a ring of 256) */
	struct vqs_vring_packed_desc *const plim =
		num > VQS_PACKED_AHEAD ? dend - VQS_PACKED_AHEAD : r->desc;
	for (;;) {
		if ((f0 & judged) != want) {
			r->stop = (f0 & au) != (want & au) ? RUN_UNAVAIL : RUN_SHAPE;
			break;
		}
		/* read, not for writing, though the fill stores the used descriptor in each
		 * head's slot: 16 slots on, the driver may still be writing the line, and taking it
		 * for writing (PREFETCHW) took it from the driver mid-batch, 0.86-0.92x the rate
		 * of the rings alone (docs/bench.md). Nothing is trusted from a prefetch: the flags
		 * are read as ever. */
		if (dp < plim)
			__builtin_prefetch(dp + VQS_PACKED_AHEAD, 0);
		struct vqs_vring_packed_desc d;
		if (!pair) {
			snapshot(dp, f0, &d);
			/* (the id before the element is written: by id it is the element) */
			if (d.id >= num || ids[d.id] != VQS_PACKED_ID_FREE) {
				r->stop = RUN_BAD_ID;
				break;
			}
			struct vqs_elem *e =
				(struct vqs_elem *)(by_id ? start + d.id * stride : ep);
			if (!vqs_chain_single(e, w, d.id, d.addr, d.len,
					      f0 & VQS_VRING_DESC_F_WRITE)) {
				r->d = d;
				r->pend = NEXT_UNREAD;
				r->stop = RUN_WALK;
				break;
			}
		} else {
			/* (its id is not read: a chain's id is its last descriptor's) */
			d.addr = le64toh(atomic_load_explicit((_Atomic uint64_t *)&dp->addr,
							      memory_order_relaxed));
			d.len = le32toh(atomic_load_explicit((_Atomic uint32_t *)&dp->len,
							     memory_order_relaxed));
			d.id = 0;
			d.flags = f0;
			/* a second descriptor across the ring's end (at most one chain a lap) is
			 * the walk's: the run's expects no wrap counter but `want` */
			struct vqs_vring_packed_desc *const d1p = dp + 1;
			if (d1p == dend) {
				r->d = d;
				r->pend = NEXT_UNREAD;
				r->stop = RUN_WALK;
				break;
			}
			uint16_t f1 = vqs_packed_flags_acquire(d1p);
			if ((f1 & au) != (want & au)) {
				r->d = d;
				r->pend = NEXT_UNAVAIL;
				r->stop = RUN_WALK;
				break;
			}
			struct vqs_vring_packed_desc d1;
			snapshot(d1p, f1, &d1);
			if (f1 & chained) {
				r->d = d;
				r->d1 = d1;
				r->pend = NEXT_READ;
				r->stop = RUN_WALK;
				break;
			}
			/* 2.8.6: the buffer id is the one in the chain's last descriptor (checked
			 * before the element is written: by id it is the element) */
			if (d1.id >= num || ids[d1.id] != VQS_PACKED_ID_FREE) {
				r->stop = RUN_BAD_ID;
				break;
			}
			struct vqs_elem *e =
				(struct vqs_elem *)(by_id ? start + d1.id * stride : ep);
			if (!vqs_chain_pair(e, w, true, d1.id, d.addr, d.len, d1.addr, d1.len,
					    f1 & VQS_VRING_DESC_F_WRITE)) {
				r->d = d;
				r->d1 = d1;
				r->pend = NEXT_READ;
				r->stop = RUN_WALK;
				break;
			}
			d.id = d1.id;
		}
		ids[d.id] = pair ? 2 : 1; /* in flight: the slots it took */
		if (by_id)
			*op = d.id;
		dp += pair ? 2 : 1;
		if (dp >= dend) {
			dp -= num;
			want ^= au;
		}
		if (by_id ? ++op == oend : (ep += stride) == eend) {
			r->stop = RUN_END;
			break;
		}
		f0 = vqs_packed_flags_acquire(dp);
	}
	r->idx = (unsigned)(dp - r->desc);
	r->want = want & au;
	r->f0 = f0;
	return by_id ? (unsigned)(op - r->out) : i + (unsigned)((size_t)(ep - start) / stride);
}

/* One leaf function per shape and destination form. */
#define POP_RUN_LEAF(name, pair, by_id) \
	static __attribute__((noinline)) unsigned name(struct packed_run *r, unsigned i, unsigned m) \
	{ \
		return pop_run(r, i, m, pair, by_id); \
	}
POP_RUN_LEAF(pop_run1, false, false)
POP_RUN_LEAF(pop_run2, true, false)
POP_RUN_LEAF(pop_run1_id, false, true)
POP_RUN_LEAF(pop_run2_id, true, true)
#undef POP_RUN_LEAF

/*
 * Pop up to max ring chains with no inflight region: the runs of one shape (pop_run), the
 * general walk for each chain they leave, handed what was read already, and the runs again
 * after it. How many, with *rc the reason it stopped short (-EAGAIN, -EBUSY, -EIO).
 */
static inline unsigned pop_straight(struct vqs_vq *vq, const struct vqs_mem_table *t,
				    const struct vqs_pop_to *to, unsigned n, unsigned max, int *rc)
{
	struct vqs_packed_ring *p = ring(vq);
	const unsigned num = vq->cfg.num;
	const uint16_t chained = VQS_VRING_DESC_F_NEXT | VQS_VRING_DESC_F_INDIRECT;
	struct packed_run r = {
		.desc = p->desc, .ids = p->ids, .base = to->base, .stride = to->stride,
		.out = to->ids, .num = num,
		.pair_first = num >= 2 && vq->cfg.max_iov >= 2 ? VQS_VRING_DESC_F_NEXT : 0xffff,
		.idx = p->last_avail_idx,
		.want = p->avail_wrap ? VQS_PACKED_F_AVAIL : VQS_PACKED_F_USED,
		.f0 = head_flags(p, &p->desc[p->last_avail_idx])};
	vqs_pop_wins(vq, t, r.win);
	unsigned from = vqs_packed_linear(p->last_avail_idx, p->avail_wrap, num);
	/* the shape of the chain before, in this pop or the last: its run goes on */
	bool pair = p->pair_run && r.pair_first != 0xffff;
	*rc = 0;
	while (n < max) {
		n = to->by_id ? (pair ? pop_run2_id(&r, n, max) : pop_run1_id(&r, n, max))
			      : (pair ? pop_run2(&r, n, max) : pop_run1(&r, n, max));
		if (r.stop == RUN_END)
			break;
		if (r.stop == RUN_UNAVAIL) {
			*rc = -EAGAIN;
			break;
		}
		if (r.stop == RUN_BAD_ID) {
			*rc = vqs_vq_break(vq, VQS_VQ_ERR_BUFFER_ID);
			break;
		}
		if (r.stop == RUN_SHAPE) {
			/* the other run's shape (it takes it or leaves it to the walk), else the
			 * walk's */
			bool other = pair ? !(r.f0 & chained)
					  : (r.f0 & (chained | VQS_VRING_DESC_F_WRITE)) ==
						    r.pair_first;
			if (other) {
				pair = !pair;
				continue;
			}
			snapshot(&r.desc[r.idx], r.f0, &r.d);
			r.pend = NEXT_UNREAD;
		}
		/* The slots before this chain are taken; the walk goes on after those read. */
		advance_to(p, from, r.idx, r.want == VQS_PACKED_F_AVAIL, num);
		struct desc_cursor cur = {.slot = (uint16_t)r.idx, .wrap = p->avail_wrap,
					  .pend = r.pend, .next = r.d1};
		vqs_packed_advance(&cur.slot, &cur.wrap, r.pend == NEXT_READ ? 2 : 1, num);
		unsigned nd;
		if ((*rc = pop_walk(vq, t, r.win, to, n, &cur, &r.d, -1, &nd)) != 0)
			return n;
		pair = nd == 2 && r.pair_first != 0xffff;
		n++;
		r.idx = p->last_avail_idx;
		r.want = p->avail_wrap ? VQS_PACKED_F_AVAIL : VQS_PACKED_F_USED;
		from = vqs_packed_linear(p->last_avail_idx, p->avail_wrap, num);
		if (n < max)
			r.f0 = vqs_packed_flags_acquire(&r.desc[r.idx]);
	}
	advance_to(p, from, r.idx, r.want == VQS_PACKED_F_AVAIL, num);
	p->pair_run = pair;
	return n;
}

static int packed_pop(struct vqs_vq *vq, const struct vqs_mem_table *t,
		      const struct vqs_pop_to *to, unsigned max)
{
	struct vqs_packed_ring *p = ring(vq);
	unsigned n = 0;
	int rc = 0;
	if (p->resubmit_pending || p->inflight) {
		struct vqs_mem_win win[2];
		vqs_pop_wins(vq, t, win);
		while (n < max && (p->resubmit_pending || p->inflight) &&
		       (rc = pop_recorded(vq, t, win, to, n)) == 0)
			n++;
	}
	if (n < max && !rc)
		n = pop_straight(vq, t, to, n, max, &rc);
	/* by place the runs leave the ids in the elements */
	if (to->ids && !to->by_id)
		for (unsigned k = 0; k < n; k++)
			to->ids[k] = vqs_pop_elem(to, k)->id;
	return n ? (int)n : rc;
}

static int packed_begin(struct vqs_vq *vq)
{
	/* One flags read: the next slot's. When it is available, the most chains the driver can
	 * have made available, one a slot, in the slots not in flight: the count sizes batches,
	 * and a pop finds how many there are as it reads each head's flags (which it then does not
	 * read here). A chain longer than any look counts too. */
	struct vqs_packed_ring *p = ring(vq);
	unsigned n = p->resubmit_pending;
	if (!p->desc)
		return (int)n;
	if (!p->head_seen) {
		uint16_t flags = vqs_packed_flags_acquire(&p->desc[p->last_avail_idx]);
		if (!vqs_packed_desc_is_avail(flags, p->avail_wrap))
			return (int)n;
		p->head_flags = flags;
		p->head_seen = true;
	}
	return (int)(n + vq->cfg.num - p->unfilled_descs);
}

/* The slots of e's chain (in flight): the queue's own count, or with an inflight region (whose
 * entry the id's state holds) the element's, checked (0 when e is not in flight or out of
 * range). */
static unsigned chain_slots(const struct vqs_vq *vq, const struct vqs_elem *e)
{
	const struct vqs_packed_ring *p = &vq->u.packed;
	if (e->id >= vq->cfg.num || p->ids[e->id] == VQS_PACKED_ID_FREE)
		return 0;
	if (!p->inflight)
		return p->ids[e->id];
	return e->ndescs <= vq->cfg.num ? e->ndescs : 0;
}

static int packed_unpop(struct vqs_vq *vq, const struct vqs_elem *elems, unsigned n)
{
	struct vqs_packed_ring *p = ring(vq);
	uint64_t total = 0;
	for (unsigned i = 0; i < n; i++) {
		unsigned slots = chain_slots(vq, &elems[i]);
		if (!slots)
			return -EINVAL;
		total += slots;
	}
	if (total > p->unfilled_descs)
		return -EINVAL;
	p->head_seen = false;
	for (unsigned i = n; i-- > 0;) {
		const struct vqs_elem *e = &elems[i];
		const unsigned back = chain_slots(vq, e);
		uint16_t state = p->ids[e->id];
		p->ids[e->id] = VQS_PACKED_ID_FREE;
		vqs_long_release(&vq->lg, e->id);
		p->unfilled_descs -= back;
		/* Resubmitted chains go back to the region's pending list; ring chains give their
		 * slots back, stepping the wrap counter back when the rewind crosses slot 0. */
		if (p->inflight && vqs_packed_inflight_unpop(vq, state - VQS_PACKED_ID_INFLIGHT))
			continue;
		if (p->last_avail_idx >= back) {
			p->last_avail_idx = (uint16_t)(p->last_avail_idx - back);
		} else {
			p->last_avail_idx = (uint16_t)(p->last_avail_idx + vq->cfg.num - back);
			p->avail_wrap = !p->avail_wrap;
		}
	}
	return 0;
}

/* The fill's state, in registers while it runs (fill_one is inlined into its loops). */
struct fill_state {
	uint16_t *ids;
	unsigned num, first;            /* first: used_idx, where the batch's first goes */
	unsigned stage, last;           /* stage_idx, stage_last */
	unsigned unfilled;              /* unfilled_descs, with an inflight region */
	/* the AVAIL and USED bits of a used descriptor there (last: IN_ORDER only), where the
	 * flags are in the descriptor's second 8 bytes (FILL_FLAGS_AT): or-ed in as they are */
	uint64_t stage_au, last_au;
	bool fold;                      /* the next entry folds into last (IN_ORDER) */
};
#define FILL_FLAGS_AT 48

/*
 * The used descriptor for e with len bytes written: false when e is refused. first: whether it
 * is the batch's first used descriptor (its flags wait for flush): 1 it is, 0 it is not, -1 find
 * out.
 * The flags of all but the first are stored relaxed, with len and id in one 8-byte store: the
 * driver reads used descriptors in ring order, so it looks at one of them only after the
 * acquire load of the first one's flags, which flush stores last, with release. in_order and
 * region (an inflight region attached; head: e is the first staged since the flush) are
 * constants where it is inlined.
 */
static inline __attribute__((always_inline)) bool
fill_one(struct vqs_vq *vq, struct fill_state *f, const struct vqs_elem *e, uint32_t len,
	 const int first, const bool in_order, const bool region, bool head)
{
	const uint16_t id = e->id;
	if (id >= f->num)
		return false;
	/* in flight (the slots its chain took are its state; with a region, the element's
	 * count, not above the slots not filled yet: nd <= unfilled <= num), no more bytes than
	 * room */
	const unsigned state = f->ids[id];
	const unsigned nd = region ? e->ndescs : state;
	if (state == VQS_PACKED_ID_FREE || (region && nd - 1 >= f->unfilled) || len > e->in_len)
		return false;
	/* the slot: stage's, or (IN_ORDER) last's when the entry folds into it */
	if (in_order && !f->fold) {
		f->last = f->stage;
		f->last_au = f->stage_au;
	}
	const unsigned at = in_order ? f->last : f->stage;
	/* the ring's base from the queue: a memory operand, not a register */
	struct vqs_vring_packed_desc *slot = &vq->u.packed.desc[at];
	const uint64_t flags = (in_order ? f->last_au : f->stage_au) |
			       (uint64_t)(len ? VQS_VRING_DESC_F_WRITE : 0) << FILL_FLAGS_AT;
	if (first == 1 || (first < 0 && at == f->first)) {
		atomic_store_explicit((_Atomic uint16_t *)&slot->id, htole16(id),
				      memory_order_relaxed);
		atomic_store_explicit((_Atomic uint32_t *)&slot->len, htole32(len),
				      memory_order_relaxed);
		/* (at most once a fill) */
		vq->u.packed.stage_first_flags = (uint16_t)(flags >> FILL_FLAGS_AT);
	} else {
		/* len, id, flags: the descriptor's second 8 bytes */
		const uint64_t w = (uint64_t)len | (uint64_t)id << 32 | flags;
		atomic_store_explicit((_Atomic uint64_t *)(void *)&slot->len, htole64(w),
				      memory_order_relaxed);
	}
	if (region)
		vqs_packed_inflight_stage(vq, state - VQS_PACKED_ID_INFLIGHT, head);
	f->ids[id] = VQS_PACKED_ID_FREE;
	if (region) /* (else fill_entries counts the slots by the stage's advance) */
		f->unfilled -= nd;
	f->fold = in_order && len == 0;
	f->stage += nd;
	if (f->stage >= f->num) {
		f->stage -= f->num;
		f->stage_au ^= (uint64_t)(VQS_PACKED_F_AVAIL | VQS_PACKED_F_USED) << FILL_FLAGS_AT;
	}
	return true;
}

/*
 * Used descriptors for elems[0..n), one a chain at its first slot, id, len and flags (2.8.7:
 * AVAIL and USED both equal to the used wrap counter; WRITE when bytes were written) straight
 * into the ring. in_order and region are constants in each call, so that the loop without them
 * carries none of their work; without IN_ORDER only the first entry after a flush can be the
 * first used descriptor, so it is taken before the loop, which then never asks.
 */
static inline __attribute__((always_inline)) int
fill_entries(struct vqs_vq *vq, const struct vqs_elem *const *elems, const uint32_t *written,
	     unsigned n, const bool in_order, const bool region)
{
	struct vqs_packed_ring *p = ring(vq);
	const bool none_staged = !p->staged;
	const uint64_t au = (uint64_t)(VQS_PACKED_F_AVAIL | VQS_PACKED_F_USED) << FILL_FLAGS_AT;
	/* 2.8.9: with IN_ORDER one used descriptor may stand for a batch of buffers (all up to
	 * the id it names). A staged entry that reports no bytes loses nothing by that, so it is
	 * taken over by the next fill instead of that fill taking a descriptor of its own. */
	struct fill_state f = {
		.ids = p->ids, .num = vq->cfg.num, .first = p->used_idx,
		.stage = p->stage_idx, .last = p->stage_last,
		.unfilled = p->unfilled_descs, .stage_au = p->stage_wrap ? au : 0,
		.last_au = p->stage_last_wrap ? au : 0,
		.fold = in_order && !none_staged && p->stage_last_empty};
	/* pointers, not a count beside them: one register fewer */
	const struct vqs_elem *const *ep = elems, *const *const end = elems + n;
	if (!in_order && none_staged && ep < end &&
	    fill_one(vq, &f, *ep, *written, 1, false, region, true)) {
		ep++;
		written++;
	}
	if (in_order || !none_staged || ep > elems)
		for (; ep < end; ep++, written++)
			if (!fill_one(vq, &f, *ep, *written, in_order ? -1 : 0, in_order, region,
				      none_staged && ep == elems))
				break;
	const unsigned k = (unsigned)(ep - elems);
	if (k) {
		/* without a region the slots filled are the stage's advance (at most num) */
		const unsigned num = vq->cfg.num;
		p->unfilled_descs =
			region ? f.unfilled
			       : p->unfilled_descs -
					 (vqs_packed_linear((uint16_t)f.stage, f.stage_au, num) + 2 * num -
					  vqs_packed_linear(p->stage_idx, p->stage_wrap, num)) %
						 (2 * num);
		p->stage_idx = (uint16_t)f.stage;
		p->stage_wrap = f.stage_au;
		if (in_order) { /* no other fill reads them */
			p->stage_last = (uint16_t)f.last;
			p->stage_last_wrap = f.last_au;
			p->stage_last_empty = f.fold;
		}
		p->staged = (uint16_t)(p->staged + k);
	}
	vqs_long_release_filled(&vq->lg, elems, k);
	return k ? (int)k : -EINVAL;
}

/* The common fill, a leaf function of its own: its state stays in registers. */
static __attribute__((noinline)) int fill_plain(struct vqs_vq *vq,
						const struct vqs_elem *const *elems,
						const uint32_t *written, unsigned n)
{
	return fill_entries(vq, elems, written, n, false, false);
}

static int packed_fill(struct vqs_vq *vq, const struct vqs_elem *const *elems,
		       const uint32_t *written, unsigned n)
{
	if (!vq->u.packed.desc)
		return -EINVAL;
	if (vq->u.packed.inflight)
		return fill_entries(vq, elems, written, n, has(vq, VQS_F_IN_ORDER), true);
	return has(vq, VQS_F_IN_ORDER) ? fill_entries(vq, elems, written, n, true, false)
				       : fill_plain(vq, elems, written, n);
}

static unsigned packed_flush(struct vqs_vq *vq)
{
	struct vqs_packed_ring *p = ring(vq);
	unsigned n = p->staged;
	if (n == 0)
		return 0;
	if (p->inflight)
		vqs_packed_inflight_flush_begin(vq);
	/* 2.8.7: the first used descriptor's flags go last, with a release store: pairs with the
	 * driver's acquire load of the flags, so it sees every id/len (and later flags) above. */
	vqs_packed_flags_release(&p->desc[p->used_idx], p->stage_first_flags);
	p->used_idx = p->stage_idx;
	p->used_wrap = p->stage_wrap;
	p->staged = 0;
	if (p->inflight)
		vqs_packed_inflight_flush_end(vq, n);
	return n;
}

static bool packed_need_call(struct vqs_vq *vq)
{
	struct vqs_packed_ring *p = ring(vq);
	unsigned num = vq->cfg.num;
	unsigned old_pos = vqs_packed_linear(p->signalled_idx, p->signalled_wrap, num);
	unsigned new_pos = vqs_packed_linear(p->used_idx, p->used_wrap, num);
	if (old_pos == new_pos || !p->driver_event)
		return false;
	bool valid = p->signalled_valid;
	p->signalled_idx = p->used_idx;
	p->signalled_wrap = p->used_wrap;
	p->signalled_valid = true;
	/* Orders the used flags stored by flush before the read of the driver's event
	 * suppression: pairs with the fence in the driver's enable_cb between writing that
	 * structure and re-checking for used descriptors. */
	atomic_thread_fence(memory_order_seq_cst);
	uint32_t ev = vqs_packed_event_load(p->driver_event);
	uint16_t flags = (uint16_t)(ev >> 16), off_wrap = (uint16_t)ev;
	if (flags == VQS_RING_EVENT_FLAGS_DISABLE)
		return false;
	if (flags == VQS_RING_EVENT_FLAGS_DESC && has(vq, VQS_F_EVENT_IDX))
		return !valid || vqs_packed_need_event(off_wrap, new_pos, old_pos, num);
	return true; /* ENABLE, or a value we do not know: a spurious call is harmless */
}

static void packed_disable_notify(struct vqs_vq *vq)
{
	struct vqs_packed_ring *p = ring(vq);
	if (p->device_event)
		vqs_packed_event_store(p->device_event, 0, VQS_RING_EVENT_FLAGS_DISABLE);
}

static bool packed_enable_notify(struct vqs_vq *vq)
{
	struct vqs_packed_ring *p = ring(vq);
	if (p->resubmit_pending)
		return true;
	if (!p->device_event)
		return false;
	uint16_t off_wrap = (uint16_t)(p->last_avail_idx | (p->avail_wrap ? VQS_PACKED_WRAP_BIT : 0));
	if (has(vq, VQS_F_EVENT_IDX))
		vqs_packed_event_store(p->device_event, off_wrap, VQS_RING_EVENT_FLAGS_DESC);
	else
		vqs_packed_event_store(p->device_event, 0, VQS_RING_EVENT_FLAGS_ENABLE);
	/* Orders the store above before the re-check below: pairs with the fence in the
	 * driver's kick_prepare between publishing descriptors and reading this structure, so
	 * either the driver sees notifications enabled or we see its descriptors. */
	atomic_thread_fence(memory_order_seq_cst);
	if (p->head_seen)
		return true;
	uint16_t flags = vqs_packed_flags_acquire(&p->desc[p->last_avail_idx]);
	if (!vqs_packed_desc_is_avail(flags, p->avail_wrap))
		return false;
	/* the pop that follows takes them from here */
	p->head_flags = flags;
	p->head_seen = true;
	return true;
}

/* Both write the device event area when the driver gave one, except an enable that found
 * chains to resubmit. */
static bool packed_notify_written(const struct vqs_vq *vq, bool enable, uint64_t *off,
				  uint32_t *len)
{
	const struct vqs_packed_ring *p = &vq->u.packed;
	*off = 0;
	*len = sizeof(struct vqs_vring_packed_event);
	return p->device_event && !(enable && p->resubmit_pending);
}

static void packed_get_state(const struct vqs_vq *vq, struct vqs_vq_state *st)
{
	const struct vqs_packed_ring *p = &vq->u.packed;
	st->last_avail_idx = p->last_avail_idx;
	st->avail_wrap = p->avail_wrap;
	st->used_idx = p->used_idx;
	st->used_wrap = p->used_wrap;
}

static int packed_set_state(struct vqs_vq *vq, const struct vqs_vq_state *st)
{
	struct vqs_packed_ring *p = ring(vq);
	if (st->last_avail_idx >= vq->cfg.num || st->used_idx >= vq->cfg.num)
		return -EINVAL;
	p->last_avail_idx = st->last_avail_idx;
	p->avail_wrap = st->avail_wrap;
	p->head_seen = false;
	p->used_idx = p->stage_idx = p->signalled_idx = st->used_idx;
	p->used_wrap = p->stage_wrap = p->signalled_wrap = st->used_wrap;
	p->signalled_valid = false;
	p->staged = 0;
	p->unfilled_descs = 0;
	memset(p->ids, 0, vq->cfg.num * sizeof(p->ids[0]));
	return 0;
}

static void packed_reset_state(struct vqs_vq *vq)
{
	/* 2.8.1: both wrap counters start at 1. Ring pointers are re-resolved on the next pop. */
	struct vqs_packed_ring *p = ring(vq);
	memset(p, 0, sizeof(*p));
	p->ids = vq->id_state;
	memset(p->ids, 0, vq->cfg.num * sizeof(p->ids[0]));
	p->avail_wrap = p->used_wrap = p->stage_wrap = p->signalled_wrap = true;
	p->signalled_valid = true; /* a fresh ring: nothing was published before */
}

const struct vqs_ring_ops vqs_packed_ops = {
	.resolve = packed_resolve,
	.begin = packed_begin,
	.pop = packed_pop,
	.unpop = packed_unpop,
	.fill = packed_fill,
	.flush = packed_flush,
	.need_call = packed_need_call,
	.disable_notify = packed_disable_notify,
	.enable_notify = packed_enable_notify,
	.notify_written = packed_notify_written,
	.get_state = packed_get_state,
	.set_state = packed_set_state,
	.inflight_size = vqs_packed_inflight_size,
	.set_inflight = vqs_packed_set_inflight,
	.inflight_pending = vqs_packed_inflight_pending,
	.reset_state = packed_reset_state,
	.id_state_size = sizeof(uint16_t),
};
