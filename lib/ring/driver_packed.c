/* SPDX-License-Identifier: MIT */
/*
 * Packed virtqueue, driver side (virtio 1.x 2.8): one descriptor ring, buffer ids from a private
 * free list, the avail and used wrap counters, event suppression both ways (flags, or EVENT_IDX
 * descriptor positions).
 *
 * Descriptor flags are the only field either side polls: they are stored with release and loaded
 * with acquire, everything else in a descriptor is ordered by them. Chains added since the last
 * kick_prepare stay invisible because the first one's head flags are held back until then; the
 * later heads may be written at once, as the device never reads past an unavailable slot. Used
 * descriptors come from the device: each is read once and its id checked against the ids in
 * flight before it is trusted.
 */
#include "ring/driver_internal.h"
#include "ring/packed.h"

#include <errno.h>
#include <stdlib.h>

#include "util/log.h"
#include "util/alloc.h"

struct vqs_drv_packed {
	struct vqs_drv_vq base; /* first: driver.c sees only this */
	struct vqs_vring_packed_desc *desc;
	struct vqs_vring_packed_event *driver_event; /* ours */
	struct vqs_vring_packed_event *device_event; /* the device's */
	uint16_t *next_id;  /* free buffer-id list, private so the device cannot corrupt it */
	uint16_t free_id;
	uint16_t avail_idx; /* next slot to write, and the wrap counter it gets */
	bool avail_wrap;
	uint16_t kicked_idx; /* position published by the last kick_prepare */
	bool kicked_wrap;
	bool held;           /* a head's flags are held back until kick_prepare */
	uint16_t held_idx;
	uint16_t held_flags;
	uint16_t last_used;  /* next slot to look for a used descriptor in */
	bool used_wrap;
	uint16_t reap_step;  /* slots of the chain reaped last: the reap's guess for the next */
	uint16_t in_flight;  /* chains added and not yet consumed */
	/* IN_ORDER: ids in the order they were made available (a ring of num), and the batch a
	 * used descriptor naming a later id completes (2.8.9); batch_end -1 when none. */
	uint16_t *order;
	unsigned order_head;
	int32_t batch_end;
	uint32_t batch_len;
	bool cb_disabled;
};

static struct vqs_drv_packed *to_packed(struct vqs_drv_vq *dq)
{
	return (struct vqs_drv_packed *)dq;
}

static const struct vqs_drv_packed *to_cpacked(const struct vqs_drv_vq *dq)
{
	return (const struct vqs_drv_packed *)dq;
}

static void packed_destroy(struct vqs_drv_vq *dq)
{
	struct vqs_drv_packed *p = to_packed(dq);
	free(p->next_id);
	free(p->order);
	vqs_drv_base_fini(dq);
	free(p);
}

static int packed_create(struct vqs_drv_vq **out, const struct vqs_drv_vq_config *cfg)
{
	unsigned num = cfg->num;
	struct vqs_drv_packed *p = vqs_alloc_lines(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	struct vqs_drv_vq *dq = &p->base;
	dq->ops = &vqs_drv_packed_ops; /* so packed_destroy can run on failure */
	int rc = vqs_drv_base_init(dq, cfg);
	bool in_order = cfg->features & VQS_BIT(VQS_F_IN_ORDER);
	if (rc || !(p->next_id = vqs_alloc_lines(num, sizeof(*p->next_id))) ||
	    (in_order && !(p->order = vqs_alloc_lines(num, sizeof(*p->order))))) {
		packed_destroy(dq);
		return rc ? rc : -ENOMEM;
	}
	p->batch_end = -1;
	size_t ev = sizeof(struct vqs_vring_packed_event);
	dq->desc_gpa = vqs_gmem_alloc(cfg->gmem, vqs_vring_packed_desc_size(num),
				      VQS_VRING_PACKED_DESC_ALIGN);
	dq->driver_gpa = vqs_gmem_alloc(cfg->gmem, ev, VQS_VRING_PACKED_EVENT_ALIGN);
	dq->device_gpa = vqs_gmem_alloc(cfg->gmem, ev, VQS_VRING_PACKED_EVENT_ALIGN);
	if (!dq->desc_gpa || !dq->driver_gpa || !dq->device_gpa) {
		packed_destroy(dq);
		return -ENOSPC;
	}
	/* The arena is zeroed: flags 0 read as neither available nor used for wrap counter 1,
	 * and both event structures start as ENABLE. */
	p->desc = vqs_drv_area(dq, dq->desc_gpa, vqs_vring_packed_desc_size(num));
	p->driver_event = vqs_drv_area(dq, dq->driver_gpa, ev);
	p->device_event = vqs_drv_area(dq, dq->device_gpa, ev);
	for (unsigned i = 0; i < num; i++)
		p->next_id[i] = (uint16_t)(i + 1);
	p->avail_wrap = p->kicked_wrap = p->used_wrap = true;
	*out = dq;
	return 0;
}

/* Flags that make a descriptor available for wrap counter `wrap` (2.8.1). */
static uint16_t avail_bits(bool wrap)
{
	return wrap ? VQS_PACKED_F_AVAIL : VQS_PACKED_F_USED;
}

static void write_desc(struct vqs_vring_packed_desc *d, uint64_t addr, uint32_t len, uint16_t id)
{
	d->addr = htole64(addr);
	d->len = htole32(len);
	d->id = htole16(id);
}

/* Chain c of a batch into the ring at (*idx, *wrap) with buffer id `id`, its slots stepped
 * over; the head's flags, for the caller to publish last (2.8.21.1), or -1 when the arena has no
 * room for the slot's first indirect table. */
static int32_t add_one(struct vqs_drv_packed *p, const struct vqs_drv_buf *bufs, unsigned out_num,
		       unsigned total, uint16_t id, bool indirect, uint16_t *idx, bool *wrap)
{
	struct vqs_drv_vq *dq = &p->base;
	unsigned num = dq->num;
	uint16_t head_flags;
	if (indirect) {
		uint64_t table_gpa;
		struct vqs_vring_packed_desc *t = vqs_drv_indirect_table(dq, id, &table_gpa);
		if (!t)
			return -1;
		/* Inside a table only WRITE may be set (2.8.19); entries are used in order. */
		for (unsigned k = 0; k < total; k++) {
			write_desc(&t[k], bufs[k].gpa, bufs[k].len, 0);
			t[k].flags = htole16(k >= out_num ? VQS_VRING_DESC_F_WRITE : 0);
		}
		write_desc(&p->desc[*idx], table_gpa, 16u * total, id);
		head_flags = (uint16_t)(VQS_VRING_DESC_F_INDIRECT | avail_bits(*wrap));
		vqs_packed_advance(idx, wrap, 1, num);
		return head_flags;
	}
	/* 2.8.6: the buffer id goes in the last descriptor; the others carry it too, which costs
	 * nothing and reads better in a dump. */
	head_flags = (uint16_t)((out_num ? 0 : VQS_VRING_DESC_F_WRITE) |
				(total > 1 ? VQS_VRING_DESC_F_NEXT : 0) | avail_bits(*wrap));
	write_desc(&p->desc[*idx], bufs[0].gpa, bufs[0].len, id);
	vqs_packed_advance(idx, wrap, 1, num);
	for (unsigned k = 1; k < total; k++) {
		uint16_t f = (uint16_t)((k >= out_num ? VQS_VRING_DESC_F_WRITE : 0) |
					(k + 1 < total ? VQS_VRING_DESC_F_NEXT : 0) |
					avail_bits(*wrap));
		struct vqs_vring_packed_desc *d = &p->desc[*idx];
		write_desc(d, bufs[k].gpa, bufs[k].len, id);
		/* Before the head's flags (which publish the chain): pairs with the device's
		 * acquire load of these flags, as all flags do. */
		vqs_packed_flags_release(d, f);
		vqs_packed_advance(idx, wrap, 1, num);
	}
	return head_flags;
}

/*
 * Fetch the lines of the n slots from idx (free slots, which only the driver writes now), all
 * before the first store: stores leave the store buffer one after another, each waiting for its
 * line, where the prefetches overlap the fetches. A read prefetch: the device wrote its used
 * descriptors on each line and the reap read them, so the lines are here shared and the stores
 * still take them over, but PREFETCHW (taking them for writing at once) measured the same
 * (docs/bench.md). One prefetch a line (every 4 slots from idx, and the last slot's line: idx
 * need not start a line).
 */
static inline void prefetch_slots(struct vqs_vring_packed_desc *desc, unsigned num, unsigned idx,
				  unsigned n)
{
	unsigned first = n < num - idx ? n : num - idx;
	for (unsigned s = 0; s < first; s += 4)
		__builtin_prefetch(&desc[idx + s], 0);
	for (unsigned s = 0; s < n - first; s += 4)
		__builtin_prefetch(&desc[s], 0);
	if (n)
		__builtin_prefetch(&desc[idx + n - 1 < num ? idx + n - 1 : idx + n - 1 - num], 0);
}

/* A chain of `total` (1 or 2) descriptors of a batch, checked before any of it is written: its
 * token is set and its buffers add up to at most 2^32-1 bytes (the sum's upper half). */
static inline bool short_ok(const struct vqs_drv_buf *bufs, unsigned total, const void *token)
{
	return token && ((uint64_t)bufs[0].len + (total == 2 ? bufs[1].len : 0)) >> 32 == 0;
}

/*
 * Chains of `total` (1 or 2) descriptors, not indirect, the shape of most requests: a leaf loop
 * per shape (total is a constant where it is inlined), its state in registers. Adds the chains
 * up to the first malformed one (*err -EINVAL) or the first that does not fit; the first head's
 * flags are held for kick_prepare when none is yet, the others stored after their chain.
 */
static inline __attribute__((always_inline)) unsigned
add_short(struct vqs_drv_packed *p, const struct vqs_drv_buf *bufs, unsigned out_num,
	  const unsigned total, void *const *tokens, unsigned n, int *err)
{
	struct vqs_drv_vq *dq = &p->base;
	const uint16_t au = VQS_PACKED_F_AVAIL | VQS_PACKED_F_USED;
	/* the next slot as a pointer, no index to scale; av: the AVAIL and USED bits that make
	 * a descriptor there available (2.8.1), flipped at the ring's end */
	struct vqs_vring_packed_desc *const desc = p->desc, *const dend = desc + dq->num;
	struct vqs_vring_packed_desc *dp = desc + p->avail_idx;
	uint16_t av = avail_bits(p->avail_wrap);
	struct vqs_drv_slot *slots = dq->slots;
	uint16_t *next_id = p->next_id, id = p->free_id;
	unsigned room = dq->num_free / total, c;
	bool held = p->held;
	uint16_t f0 = (uint16_t)((out_num ? 0 : VQS_VRING_DESC_F_WRITE) |
				 (total == 2 ? VQS_VRING_DESC_F_NEXT : 0));
	uint16_t f1 = out_num <= 1 ? VQS_VRING_DESC_F_WRITE : 0;
	uint64_t w0 = out_num == 0 ? ~0ull : 0, w1 = out_num <= 1 ? ~0ull : 0;
	/* the room as the loop's bound, one test a chain fewer; a chain that does not fit is
	 * still checked, for the error when it is the first */
	const unsigned lim = n < room ? n : room;
	if (lim == 0 && n && !short_ok(bufs, total, tokens[0]))
		*err = -EINVAL;
	if (lim > 1) /* (a chain alone: its stores wait for the same lines at once) */
		prefetch_slots(desc, dq->num, p->avail_idx, lim * total);
	for (c = 0; c < lim; c++, bufs += total) {
		void *token = tokens[c];
		uint64_t l0 = bufs[0].len, l1 = total == 2 ? bufs[1].len : 0;
		if (!short_ok(bufs, total, token)) {
			*err = -EINVAL;
			break;
		}
		struct vqs_vring_packed_desc *const head = dp;
		const uint16_t head_flags = (uint16_t)(f0 | av);
		write_desc(dp, bufs[0].gpa, (uint32_t)l0, id);
		if (++dp == dend) {
			dp = desc;
			av ^= au;
		}
		if (total == 2) {
			write_desc(dp, bufs[1].gpa, (uint32_t)l1, id);
			/* Before the head's flags (which publish the chain): pairs with the
			 * device's acquire load of these flags, as all flags do. */
			vqs_packed_flags_release(dp, (uint16_t)(f1 | av));
			if (++dp == dend) {
				dp = desc;
				av ^= au;
			}
		}
		/* 2.8.21.1: the head's flags last; the batch's first head waits for
		 * kick_prepare. */
		if (!held) {
			held = true;
			p->held = true;
			p->held_idx = (uint16_t)(head - desc);
			p->held_flags = head_flags;
		} else {
			vqs_packed_flags_release(head, head_flags);
		}
		struct vqs_drv_slot *slot = &slots[id];
		slot->token = token;
		slot->in_len = (uint32_t)((l0 & w0) + (l1 & w1));
		slot->ndescs = (uint16_t)total;
		id = next_id[id];
	}
	p->free_id = id;
	p->avail_idx = (uint16_t)(dp - desc);
	p->avail_wrap = av == VQS_PACKED_F_AVAIL;
	return c;
}

/* c chains of ndescs ring descriptors each were added: count them in flight. c, or err when
 * none was. */
static inline __attribute__((always_inline)) int added(struct vqs_drv_packed *p, unsigned c,
							unsigned ndescs, int err)
{
	if (c == 0)
		return err;
	p->base.num_free -= c * ndescs;
	p->in_flight = (uint16_t)(p->in_flight + c);
	return (int)c;
}

/* Up to n chains of `total` (1 or 2) descriptors, not indirect, without IN_ORDER: the batch
 * add's short shapes, and inlined with n 1 the whole of the one-chain add (packed_add1), its
 * loop and setup folded away by the constant. */
static inline __attribute__((always_inline)) int
add_short_any(struct vqs_drv_packed *p, const struct vqs_drv_buf *bufs, unsigned out_num,
	      unsigned total, void *const *tokens, unsigned n)
{
	int err = -ENOSPC;
	unsigned c = total == 1 ? add_short(p, bufs, out_num, 1, tokens, n, &err)
				: add_short(p, bufs, out_num, 2, tokens, n, &err);
	return added(p, c, total, err);
}

static int packed_add(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
		      unsigned in_num, void *const *tokens, unsigned n, bool indirect)
{
	struct vqs_drv_packed *p = to_packed(dq);
	unsigned total = out_num + in_num, ndescs = indirect ? 1 : total, c;
	unsigned room = dq->num_free / ndescs;
	uint16_t idx = p->avail_idx;
	bool wrap = p->avail_wrap;
	int err = -ENOSPC;
	if (!indirect && !p->order && total <= 2)
		return add_short_any(p, bufs, out_num, total, tokens, n);
	for (c = 0; c < n; c++, bufs += total) {
		uint32_t in_len;
		if (!vqs_drv_chain_ok(bufs, out_num, total, tokens[c], &in_len)) {
			err = -EINVAL;
			break;
		}
		/* Ids in flight <= descriptors in flight, so a free descriptor means a free id. */
		uint16_t id = p->free_id, head_idx = idx;
		int32_t head_flags =
			c < room ? add_one(p, bufs, out_num, total, id, indirect, &idx, &wrap) : -1;
		if (head_flags < 0)
			break;
		/* 2.8.21.1: the driver MUST NOT make the first descriptor available before the
		 * rest of the chain: its flags go last. The batch's first head waits for
		 * kick_prepare. */
		if (!p->held) {
			p->held = true;
			p->held_idx = head_idx;
			p->held_flags = (uint16_t)head_flags;
		} else {
			vqs_packed_flags_release(&p->desc[head_idx], (uint16_t)head_flags);
		}
		struct vqs_drv_slot *slot = &dq->slots[id];
		slot->token = tokens[c];
		slot->in_len = in_len;
		slot->ndescs = (uint16_t)ndescs;
		p->free_id = p->next_id[id];
		if (p->order)
			p->order[(p->order_head + p->in_flight + c) % dq->num] = id;
	}
	p->avail_idx = idx;
	p->avail_wrap = wrap;
	return added(p, c, ndescs, err);
}

static int packed_add1(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
		       unsigned total, void *token)
{
	struct vqs_drv_packed *p = to_packed(dq);
	int rc = p->order ? packed_add(dq, bufs, out_num, total - out_num, &token, 1, false)
			  : add_short_any(p, bufs, out_num, total, &token, 1);
	return rc < 0 ? rc : 0;
}

static bool packed_kick_prepare(struct vqs_drv_vq *dq)
{
	struct vqs_drv_packed *p = to_packed(dq);
	unsigned num = dq->num;
	unsigned old_pos = vqs_packed_linear(p->kicked_idx, p->kicked_wrap, num);
	unsigned new_pos = vqs_packed_linear(p->avail_idx, p->avail_wrap, num);
	if (p->held) {
		/* Pairs with the device's acquire load of the flags in pop: the whole batch (and
		 * the later heads, stored before) is visible once this head is. */
		vqs_packed_flags_release(&p->desc[p->held_idx], p->held_flags);
		p->held = false;
	}
	/* Pairs with the device's full barrier in enable_notify, between its write of the device
	 * event suppression and its re-check of the next slot: either it sees our descriptors
	 * there, or we see its request for a kick below. */
	atomic_thread_fence(memory_order_seq_cst);
	p->kicked_idx = p->avail_idx;
	p->kicked_wrap = p->avail_wrap;
	if (new_pos == old_pos)
		return false;
	uint32_t ev = vqs_packed_event_load(p->device_event);
	uint16_t flags = (uint16_t)(ev >> 16), off_wrap = (uint16_t)ev;
	if (flags == VQS_RING_EVENT_FLAGS_DISABLE)
		return false;
	if (flags == VQS_RING_EVENT_FLAGS_DESC && dq->event_idx)
		return vqs_packed_need_event(off_wrap, new_pos, old_pos, num);
	return true;
}

/* Ask for an interrupt when the device writes the used descriptor at (idx, wrap), or passes
 * it (EVENT_IDX), or for every used descriptor. */
static void request_event(struct vqs_drv_packed *p, uint16_t idx, bool wrap)
{
	if (p->base.event_idx)
		vqs_packed_event_store(p->driver_event,
				       (uint16_t)(idx | (wrap ? VQS_PACKED_WRAP_BIT : 0)),
				       VQS_RING_EVENT_FLAGS_DESC);
	else
		vqs_packed_event_store(p->driver_event, 0, VQS_RING_EVENT_FLAGS_ENABLE);
	/* Pairs with the device's full barrier in need_call, between its release store of used
	 * flags and its read of this structure: either it sees our request, or the caller's next
	 * look at the ring sees its used descriptors. */
	atomic_thread_fence(memory_order_seq_cst);
}

static bool packed_has_used(const struct vqs_drv_vq *dq)
{
	const struct vqs_drv_packed *p = to_cpacked(dq);
	return p->batch_end >= 0 ||
	       vqs_packed_desc_is_used(vqs_packed_flags_acquire(&p->desc[p->last_used]),
				       p->used_wrap);
}

/* The next used descriptor: true with its id and written length, false when there is none. */
static bool read_used(struct vqs_drv_packed *p, uint16_t *id, uint32_t *written)
{
	struct vqs_vring_packed_desc *d = &p->desc[p->last_used];
	/* Pairs with the device's release store of these flags in flush (2.8.21.2: it writes
	 * them after id and len). */
	uint16_t flags = vqs_packed_flags_acquire(d);
	if (!vqs_packed_desc_is_used(flags, p->used_wrap))
		return false;
	*id = le16toh(atomic_load_explicit((_Atomic uint16_t *)(void *)&d->id,
					   memory_order_relaxed));
	/* 2.8.7: len is meaningful only with WRITE set in the used descriptor. */
	*written = (flags & VQS_VRING_DESC_F_WRITE)
			   ? le32toh(atomic_load_explicit((_Atomic uint32_t *)(void *)&d->len,
							  memory_order_relaxed))
			   : 0;
	return true;
}

/* The reap's next slot n slots on from *d (left: slots from *d to the ring's end), *want's AVAIL
 * and USED bits flipped at the end. */
static inline __attribute__((always_inline)) void
step_used(struct vqs_vring_packed_desc **d, unsigned *left, uint16_t *want, unsigned n,
	  unsigned num)
{
	if (n < *left) {
		*d += n;
		*left -= n;
	} else {
		*d -= num - n;
		*left += num - n;
		*want ^= VQS_PACKED_F_AVAIL | VQS_PACKED_F_USED;
	}
}

/*
 * Up to max used descriptors, any order: each read once (flags with acquire, then id and len)
 * and its id checked against the ids in flight. Stops at the first slot not used, or at a bad
 * id (queue broken).
 *
 * The next used descriptor is as many slots on as the chain just reaped took (2.8.7), a count
 * known only after its id was read from the line the device wrote, most often a miss: stepped by
 * that count, each descriptor's address would wait for the line before, one miss after another
 * however far the prefetches reach. So the loop steps by a count held in a register for the run
 * of chains of one length (k: the last chain's), and a chain of another length ends the run, a
 * branch the processor predicts instead of a value it waits for.
 */
static inline __attribute__((always_inline)) unsigned
reap_any_order(struct vqs_drv_packed *p, void **tokens, uint32_t *lens, unsigned max)
{
	struct vqs_drv_vq *dq = &p->base;
	struct vqs_drv_slot *slots = dq->slots;
	uint16_t *next_id = p->next_id, free_id = p->free_id;
	const unsigned num = dq->num;
	const uint16_t au = VQS_PACKED_F_AVAIL | VQS_PACKED_F_USED;
	/* the next slot as a pointer, no index to scale; want: the AVAIL and USED bits of a
	 * used descriptor there (both equal to the used wrap counter, 2.8.1), flipped at the
	 * ring's end */
	struct vqs_vring_packed_desc *const desc = p->desc, *d = desc + p->last_used;
	uint16_t want = p->used_wrap ? au : 0;
	/* slots from d to the ring's end: the wrap test without the end pointer's spill */
	unsigned left = num - p->last_used;
	/* pointers, not a count beside them: one register fewer */
	void **tp = tokens, **const tend = tokens + max;
	unsigned k = p->reap_step, nd = k;
	for (;;) {
		while (tp < tend) {
			/* read, not for writing: past the last used descriptor the device may
			 * still be writing the line (the add fetches the lines it reuses itself);
			 * none across the ring's end (the start's prefetches below fetch the first
			 * lines of each call) */
			if (left > VQS_PACKED_AHEAD)
				__builtin_prefetch(d + VQS_PACKED_AHEAD);
			/* Pairs with the device's release store of these flags in flush
			 * (2.8.21.2: it writes them after id and len). */
			uint16_t flags = vqs_packed_flags_acquire(d);
			if ((flags & au) != want)
				break;
			uint16_t id = le16toh(atomic_load_explicit(
				(_Atomic uint16_t *)(void *)&d->id, memory_order_relaxed));
			if (id >= num || !slots[id].token) {
				vqs_drv_break(dq, "used buffer id not in flight", id);
				break;
			}
			struct vqs_drv_slot *slot = &slots[id];
			/* 2.8.7: len is meaningful only with WRITE set in the used descriptor. */
			uint32_t written = (flags & VQS_VRING_DESC_F_WRITE)
						   ? le32toh(atomic_load_explicit(
							     (_Atomic uint32_t *)(void *)&d->len,
							     memory_order_relaxed))
						   : 0;
			*tp++ = slot->token;
			*lens++ = written <= slot->in_len
					  ? written
					  : vqs_drv_len_clamped(&p->base, written, slot->in_len);
			slot->token = NULL;
			next_id[id] = free_id;
			free_id = id;
			/* The device skips the rest of the chain's slots (2.8.7); ndescs is
			 * ours, at most num (no pointer is formed past the ring's end). */
			nd = slot->ndescs;
			/* in memory, not a register */
			dq->num_free += nd;
			if (nd != k)
				break;
			step_used(&d, &left, &want, k, num);
		}
		/* stopped (the end, a slot not used, a bad id), or a chain of another length
		 * ended the run: stepped over here, the next run steps by its length */
		if (nd == k)
			break;
		step_used(&d, &left, &want, nd, num);
		k = nd;
	}
	p->reap_step = (uint16_t)k;
	p->last_used = (uint16_t)(d - desc);
	p->used_wrap = want != 0;
	p->free_id = free_id;
	return (unsigned)(tp - tokens);
}

/* IN_ORDER: a used descriptor completes every buffer up to its id, the earlier ones with nothing
 * written (2.8.9); handed out one by one, oldest first. */
static __attribute__((noinline)) unsigned reap_in_order(struct vqs_drv_packed *p,
							 void **tokens, uint32_t *lens,
							 unsigned max)
{
	struct vqs_drv_vq *dq = &p->base;
	unsigned got;
	for (got = 0; got < max; got++) {
		uint16_t id = 0;
		uint32_t written = 0;
		if (p->batch_end < 0) {
			if (!read_used(p, &id, &written))
				break;
			if (id >= dq->num || !dq->slots[id].token) {
				vqs_drv_break(dq, "used buffer id not in flight", id);
				break;
			}
			p->batch_end = id;
			p->batch_len = written;
		}
		id = p->order[p->order_head];
		p->order_head = (p->order_head + 1) % dq->num;
		written = id == p->batch_end ? p->batch_len : 0;
		if (id == p->batch_end)
			p->batch_end = -1;
		struct vqs_drv_slot *slot = &dq->slots[id];
		tokens[got] = slot->token;
		lens[got] = written <= slot->in_len
				    ? written
				    : vqs_drv_len_clamped(&p->base, written, slot->in_len);
		slot->token = NULL;
		/* The device skips the rest of the batch's slots. */
		vqs_packed_advance(&p->last_used, &p->used_wrap, slot->ndescs, dq->num);
		p->next_id[id] = p->free_id;
		p->free_id = id;
		dq->num_free += slot->ndescs;
	}
	return got;
}

/* Up to max completions: the batch reap, and inlined with max 1 the one-completion reap
 * (packed_get_used1), the any-order loop folded to one entry by the constant. */
static inline __attribute__((always_inline)) unsigned
get_used_n(struct vqs_drv_vq *dq, void **tokens, uint32_t *lens, unsigned max)
{
	struct vqs_drv_packed *p = to_packed(dq);
	unsigned got = p->order ? reap_in_order(p, tokens, lens, max)
				: reap_any_order(p, tokens, lens, max);
	p->in_flight = (uint16_t)(p->in_flight - got);
	/* While interrupts are wanted, want the one for the next used descriptor. */
	if (got && dq->event_idx && !p->cb_disabled && p->batch_end < 0)
		request_event(p, p->last_used, p->used_wrap);
	return got;
}

static unsigned packed_get_used(struct vqs_drv_vq *dq, void **tokens, uint32_t *lens,
				unsigned max)
{
	return get_used_n(dq, tokens, lens, max);
}

static void *packed_get_used1(struct vqs_drv_vq *dq, uint32_t *len)
{
	void *token;
	return get_used_n(dq, &token, len, 1) ? token : NULL;
}

static void packed_disable_cb(struct vqs_drv_vq *dq)
{
	struct vqs_drv_packed *p = to_packed(dq);
	if (p->cb_disabled)
		return;
	p->cb_disabled = true;
	vqs_packed_event_store(p->driver_event, 0, VQS_RING_EVENT_FLAGS_DISABLE);
}

static bool packed_enable_cb(struct vqs_drv_vq *dq)
{
	struct vqs_drv_packed *p = to_packed(dq);
	p->cb_disabled = false;
	request_event(p, p->last_used, p->used_wrap);
	return packed_has_used(dq);
}

/* Ask for the interrupt only after about 3/4 of the descriptors in flight are used. Returns
 * whether used descriptors are already pending: the device may have passed the event before
 * it was written, so the caller drains instead of waiting. */
static bool packed_enable_cb_delayed(struct vqs_drv_vq *dq)
{
	struct vqs_drv_packed *p = to_packed(dq);
	if (!dq->event_idx)
		return packed_enable_cb(dq);
	p->cb_disabled = false;
	uint16_t idx = p->last_used;
	bool wrap = p->used_wrap;
	vqs_packed_advance(&idx, &wrap, (dq->num - dq->num_free) * 3u / 4u, dq->num);
	request_event(p, idx, wrap);
	return packed_has_used(dq);
}

/*
 * The device's used position: from the next slot to consume, skip every used descriptor already
 * written, each by its chain's slots (IN_ORDER: by the slots of every chain up to the one it
 * names, as get_used does; a batch half handed out continues from where it stands). Read only:
 * consuming stays the owner's business.
 */
static int packed_position(const struct vqs_drv_vq *dq, struct vqs_drv_pos *pos)
{
	const struct vqs_drv_packed *p = to_cpacked(dq);
	uint16_t idx = p->last_used;
	bool wrap = p->used_wrap;
	int32_t batch_end = p->batch_end;
	unsigned passed = 0; /* chains skipped: never more than are in flight */
	for (;;) {
		if (batch_end < 0) {
			struct vqs_vring_packed_desc *d = &p->desc[idx];
			/* Pairs with the device's release store of these flags in flush. */
			if (!vqs_packed_desc_is_used(vqs_packed_flags_acquire(d), wrap))
				break;
			uint16_t id = le16toh(atomic_load_explicit(
				(_Atomic uint16_t *)(uintptr_t)&d->id, memory_order_relaxed));
			if (id >= dq->num || !dq->slots[id].token)
				return -EIO;
			if (!p->order) {
				if (++passed > p->in_flight)
					return -EIO;
				vqs_packed_advance(&idx, &wrap, dq->slots[id].ndescs, dq->num);
				continue;
			}
			batch_end = id;
		}
		uint16_t id;
		do {
			if (passed >= p->in_flight)
				return -EIO;
			id = p->order[(p->order_head + passed++) % dq->num];
			vqs_packed_advance(&idx, &wrap, dq->slots[id].ndescs, dq->num);
		} while (id != batch_end);
		batch_end = -1;
	}
	pos->avail_idx = p->kicked_idx;
	pos->avail_wrap = p->kicked_wrap;
	pos->used_idx = idx;
	pos->used_wrap = wrap;
	return 0;
}

const struct vqs_drv_ops vqs_drv_packed_ops = {
	.create = packed_create,
	.destroy = packed_destroy,
	.add = packed_add,
	.add1 = packed_add1,
	.kick_prepare = packed_kick_prepare,
	.get_used = packed_get_used,
	.get_used1 = packed_get_used1,
	.disable_cb = packed_disable_cb,
	.enable_cb = packed_enable_cb,
	.enable_cb_delayed = packed_enable_cb_delayed,
	.has_used = packed_has_used,
	.position = packed_position,
};
