/* SPDX-License-Identifier: MIT */
/*
 * Split virtqueue, driver side (virtio 1.x, 2.7): descriptor table, avail ring (+ used_event) and
 * used ring (+ avail_event) in the guest-memory arena, a free list of descriptors, notification
 * suppression both ways (flags, or EVENT_IDX), and in-order use (IN_ORDER: descriptors taken in
 * ring order, and a device may answer a batch with one used entry, 2.7.9).
 *
 * Fields the device writes while we may read them (used idx, used flags, avail_event) and fields
 * we write while it may read them (avail idx, avail flags, used_event) are accessed as atomics;
 * descriptors, avail entries and used entries are plain memory ordered by the index that
 * publishes them. Used entries come from the device: each is read once, and its id is checked
 * against the chains in flight before it is trusted.
 */
#include "ring/driver_internal.h"

#include <endian.h>
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"
#include "util/alloc.h"

/* A cache line: a multiple of the desc, avail and used alignments of 2.7. */
#define DRV_SPLIT_AREA_ALIGN 64u
_Static_assert(DRV_SPLIT_AREA_ALIGN % VQS_VRING_DESC_ALIGN == 0 &&
		       DRV_SPLIT_AREA_ALIGN % VQS_VRING_AVAIL_ALIGN == 0 &&
		       DRV_SPLIT_AREA_ALIGN % VQS_VRING_USED_ALIGN == 0,
	       "ring areas keep the spec's alignment");

struct vqs_drv_split {
	struct vqs_drv_vq base; /* first: driver.c sees only this */
	struct vqs_vring_desc *desc;
	struct vqs_vring_avail *avail;
	struct vqs_vring_used *used;
	uint16_t *used_event;  /* avail->ring[num]: ours */
	uint16_t *avail_event; /* after used->ring[num]: the device's */
	uint16_t *next;        /* free list links, private so the device cannot corrupt them */
	uint16_t free_head;    /* IN_ORDER: the next descriptor in ring order */
	uint16_t oldest;       /* IN_ORDER: head of the oldest chain in flight */
	/* IN_ORDER: the used entry of the batch being consumed (its id is the batch's last head);
	 * batch_open is false when the next chain needs a fresh entry. */
	bool batch_open;
	uint16_t batch_last;
	uint32_t batch_len;
	uint16_t avail_idx;     /* chains added: the avail idx the next kick_prepare publishes */
	uint16_t kicked_idx;    /* avail idx published by the last kick_prepare */
	uint16_t last_used_idx; /* next used entry to consume */
	uint16_t used_idx_seen; /* used idx as last read (validated) */
	uint16_t in_flight;     /* chains added and not yet consumed */
	bool in_order;          /* VQS_F_IN_ORDER negotiated */
	bool cb_disabled;
};

static struct vqs_drv_split *to_split(struct vqs_drv_vq *dq)
{
	return (struct vqs_drv_split *)dq;
}

static const struct vqs_drv_split *to_csplit(const struct vqs_drv_vq *dq)
{
	return (const struct vqs_drv_split *)dq;
}

/* The ring's shared 16-bit fields, as atomics (same size and alignment as uint16_t). */
static _Atomic uint16_t *shared16(const uint16_t *p)
{
	return (_Atomic uint16_t *)(uintptr_t)p;
}

static uint16_t load_relaxed(const uint16_t *p)
{
	return le16toh(atomic_load_explicit(shared16(p), memory_order_relaxed));
}

static void store_relaxed(uint16_t *p, uint16_t v)
{
	atomic_store_explicit(shared16(p), htole16(v), memory_order_relaxed);
}

static uint16_t load_used_idx(const struct vqs_drv_split *s)
{
	/* Pairs with the device's release store of used idx in flush: the used entries below the
	 * index, and what the device wrote into the buffers, are visible once we see it. */
	return le16toh(atomic_load_explicit(shared16(&s->used->idx), memory_order_acquire));
}

static void split_destroy(struct vqs_drv_vq *dq)
{
	struct vqs_drv_split *s = to_split(dq);
	free(s->next);
	vqs_drv_base_fini(dq);
	free(s);
}

static int split_create(struct vqs_drv_vq **out, const struct vqs_drv_vq_config *cfg)
{
	unsigned num = cfg->num;
	if (num & (num - 1))
		return -EINVAL;
	struct vqs_drv_split *s = vqs_alloc_lines(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	struct vqs_drv_vq *dq = &s->base;
	int rc = vqs_drv_base_init(dq, cfg);
	if (rc || !(s->next = vqs_alloc_lines(num, sizeof(*s->next)))) {
		split_destroy(dq);
		return rc ? rc : -ENOMEM;
	}
	/* Each area on its own cache lines (the spec asks for less, 2.7): at the spec's 2- and
	 * 4-byte alignments the used ring's flags and idx, which the device stores every batch,
	 * would share a line with the avail ring's tail and used_event, which we store. */
	dq->desc_gpa = vqs_gmem_alloc(cfg->gmem, vqs_vring_desc_size(num), DRV_SPLIT_AREA_ALIGN);
	dq->driver_gpa = vqs_gmem_alloc(cfg->gmem, vqs_vring_avail_size(num), DRV_SPLIT_AREA_ALIGN);
	dq->device_gpa = vqs_gmem_alloc(cfg->gmem, vqs_vring_used_size(num), DRV_SPLIT_AREA_ALIGN);
	if (!dq->desc_gpa || !dq->driver_gpa || !dq->device_gpa) {
		split_destroy(dq);
		return -ENOSPC;
	}
	s->desc = vqs_drv_area(dq, dq->desc_gpa, vqs_vring_desc_size(num));
	s->avail = vqs_drv_area(dq, dq->driver_gpa, vqs_vring_avail_size(num));
	s->used = vqs_drv_area(dq, dq->device_gpa, vqs_vring_used_size(num));
	s->in_order = cfg->features & VQS_BIT(VQS_F_IN_ORDER);
	s->used_event = &s->avail->ring[num];
	s->avail_event = (uint16_t *)(void *)&s->used->ring[num];
	/* Ring order for IN_ORDER (2.7.5: next is x + 1, and 0 after the last descriptor); for
	 * the free list, a list in that same order to start with. */
	for (unsigned i = 0; i < num; i++)
		s->next[i] = (uint16_t)((i + 1) & (num - 1));
	*out = dq;
	return 0;
}

/* A descriptor's len, flags and next as the one little-endian word they make at offset 8. */
static inline uint64_t desc_word(uint32_t len, uint16_t flags, uint16_t next)
{
	return htole64((uint64_t)len | (uint64_t)flags << 32 | (uint64_t)next << 48);
}

static inline void store_word(struct vqs_vring_desc *d, uint64_t w)
{
	memcpy((unsigned char *)d + offsetof(struct vqs_vring_desc, len), &w, sizeof(w));
}

/* A descriptor in two stores: addr, then the word. */
static void write_desc(struct vqs_vring_desc *d, uint64_t addr, uint32_t len, uint16_t flags,
		       uint16_t next)
{
	d->addr = htole64(addr);
	store_word(d, desc_word(len, flags, next));
}

/*
 * write_desc for the short shapes, storing nothing when the descriptor already holds these
 * values (a chain reusing its slot's buffers: the free list hands back the descriptors reaped
 * last). The device only reads the table, so its line stays shared and the device's next read
 * of it hits, where a store would take the line from the device's cache and make that read a
 * miss on a line the driver just wrote (one rr transaction's descriptor line). The table is
 * ours: the loads hit in our cache. An unchanged descriptor is published by the same release
 * store of avail idx as a stored one: our earlier store of it precedes that store too.
 */
static inline void write_desc_changed(struct vqs_vring_desc *d, uint64_t addr, uint32_t len,
				      uint16_t flags, uint16_t next)
{
	uint64_t w = desc_word(len, flags, next), old[2];
	memcpy(old, d, sizeof(old));
	if (old[0] != htole64(addr))
		d->addr = htole64(addr);
	if (old[1] != w)
		store_word(d, w);
}
_Static_assert(offsetof(struct vqs_vring_desc, len) == 8 &&
		       offsetof(struct vqs_vring_desc, flags) == 12 &&
		       offsetof(struct vqs_vring_desc, next) == 14,
	       "len, flags and next make one 8-byte word");

/* Flags of buffer k of a chain of `total`, the first out_num readable. */
static uint16_t chain_flags(unsigned k, unsigned out_num, unsigned total)
{
	return (uint16_t)((k >= out_num ? VQS_VRING_DESC_F_WRITE : 0) |
			  (k + 1 < total ? VQS_VRING_DESC_F_NEXT : 0));
}

/* A chain into the ring from free_head on (its table taken when indirect); its head, or -1 when
 * the arena has no room for the slot's first indirect table. */
static int add_one(struct vqs_drv_split *s, const struct vqs_drv_buf *bufs, unsigned out_num,
		   unsigned total, bool indirect)
{
	uint16_t head = s->free_head, i = head;
	unsigned k = 0;
	if (indirect) {
		uint64_t table_gpa;
		struct vqs_vring_desc *t = vqs_drv_indirect_table(&s->base, head, &table_gpa);
		if (!t)
			return -1;
		for (; k < total; k++) {
			uint16_t f = chain_flags(k, out_num, total);
			write_desc(&t[k], bufs[k].gpa, bufs[k].len, f,
				   (f & VQS_VRING_DESC_F_NEXT) ? (uint16_t)(k + 1) : 0);
		}
		/* INDIRECT alone: never with NEXT (2.7.5.3.1), WRITE is ignored on it. */
		write_desc(&s->desc[head], table_gpa, 16u * total, VQS_VRING_DESC_F_INDIRECT, 0);
	} else {
		for (; k + 1 < total; k++) {
			uint16_t nx = s->next[i];
			write_desc(&s->desc[i], bufs[k].gpa, bufs[k].len,
				   chain_flags(k, out_num, total), nx);
			i = nx;
		}
		write_desc(&s->desc[i], bufs[k].gpa, bufs[k].len, chain_flags(k, out_num, total),
			   0);
	}
	/* IN_ORDER: chains come back in order, so the free descriptors are always the run after
	 * the last chain added, and the links above never change. */
	s->free_head = s->next[i];
	s->base.slots[head].last = i;
	return head;
}

/*
 * Chains of `total` (1 or 2) descriptors, not indirect, the shape of most requests: a leaf loop
 * per shape (total is a constant where it is inlined), its state in registers. Adds the chains
 * up to the first malformed one (*err -EINVAL) or the first that does not fit.
 */
static inline __attribute__((always_inline)) unsigned
add_short(struct vqs_drv_split *s, const struct vqs_drv_buf *bufs, unsigned out_num,
	  const unsigned total, void *const *tokens, unsigned n, int *err)
{
	struct vqs_drv_vq *dq = &s->base;
	struct vqs_vring_desc *desc = s->desc;
	struct vqs_drv_slot *slots = dq->slots;
	const uint16_t *next = s->next;
	uint16_t *ring = s->avail->ring;
	unsigned room = dq->num_free / total, mask = dq->num - 1, c;
	uint16_t f0 = chain_flags(0, out_num, total), f1 = chain_flags(1, out_num, total);
	uint16_t fh = s->free_head, avail_idx = s->avail_idx;
	/* the writable lengths, as masks: buffer k is writable when k >= out_num */
	uint64_t w0 = out_num == 0 ? ~0ull : 0, w1 = out_num <= 1 ? ~0ull : 0;
	for (c = 0; c < n; c++, bufs += total) {
		void *token = tokens[c];
		uint64_t l0 = bufs[0].len, l1 = total == 2 ? bufs[1].len : 0;
		if (!token || l0 + l1 > UINT32_MAX) {
			*err = -EINVAL;
			break;
		}
		if (c >= room)
			break;
		uint16_t head = fh, i = head;
		if (total == 2) {
			uint16_t nx = next[i];
			write_desc_changed(&desc[i], bufs[0].gpa, (uint32_t)l0, f0, nx);
			i = nx;
			write_desc_changed(&desc[i], bufs[1].gpa, (uint32_t)l1, f1, 0);
		} else {
			write_desc_changed(&desc[i], bufs[0].gpa, (uint32_t)l0, f0, 0);
		}
		fh = next[i];
		struct vqs_drv_slot *slot = &slots[head];
		slot->token = token;
		slot->in_len = (uint32_t)((l0 & w0) + (l1 & w1));
		slot->ndescs = (uint16_t)total;
		slot->last = i;
		/* As the descriptors: an entry already naming this head (one request in flight
		 * takes the same head each time) stays as it is, its line shared with the device. */
		uint16_t *entry = &ring[(uint16_t)(avail_idx + c) & mask];
		if (*entry != htole16(head))
			*entry = htole16(head);
	}
	s->free_head = fh;
	return c;
}

/* c chains of ndescs ring descriptors each were added: publish them to the next kick_prepare.
 * c, or err when none was. */
static inline __attribute__((always_inline)) int added(struct vqs_drv_split *s, unsigned c,
							unsigned ndescs, int err)
{
	if (c == 0)
		return err;
	s->avail_idx = (uint16_t)(s->avail_idx + c);
	s->in_flight = (uint16_t)(s->in_flight + c);
	s->base.num_free -= c * ndescs;
	return (int)c;
}

/* Up to n chains of `total` (1 or 2) descriptors, not indirect: the batch add's short shapes,
 * and inlined with n 1 the whole of the one-chain add (split_add1), its loop and setup folded
 * away by the constant. */
static inline __attribute__((always_inline)) int
add_short_any(struct vqs_drv_split *s, const struct vqs_drv_buf *bufs, unsigned out_num,
	      unsigned total, void *const *tokens, unsigned n)
{
	int err = -ENOSPC;
	unsigned c = total == 1 ? add_short(s, bufs, out_num, 1, tokens, n, &err)
				: add_short(s, bufs, out_num, 2, tokens, n, &err);
	return added(s, c, total, err);
}

/* The batch's short shapes in a function of their own: their loops keep their state in
 * registers, out of reach of the general loop's. */
static __attribute__((noinline)) int add_short_batch(struct vqs_drv_split *s,
						     const struct vqs_drv_buf *bufs,
						     unsigned out_num, unsigned total,
						     void *const *tokens, unsigned n)
{
	return add_short_any(s, bufs, out_num, total, tokens, n);
}

static int split_add1(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
		      unsigned total, void *token)
{
	int rc = add_short_any(to_split(dq), bufs, out_num, total, &token, 1);
	return rc < 0 ? rc : 0;
}

/* Chains of any other shape: longer, or indirect. */
static __attribute__((noinline)) int add_long(struct vqs_drv_split *s,
					      const struct vqs_drv_buf *bufs, unsigned out_num,
					      unsigned total, void *const *tokens, unsigned n,
					      bool indirect)
{
	struct vqs_drv_vq *dq = &s->base;
	unsigned ndescs = indirect ? 1 : total;
	unsigned room = dq->num_free / ndescs, mask = dq->num - 1, c;
	uint16_t avail_idx = s->avail_idx;
	int err = -ENOSPC;
	for (c = 0; c < n; c++, bufs += total) {
		uint32_t in_len;
		if (!vqs_drv_chain_ok(bufs, out_num, total, tokens[c], &in_len)) {
			err = -EINVAL;
			break;
		}
		int head = c < room ? add_one(s, bufs, out_num, total, indirect) : -1;
		if (head < 0)
			break;
		struct vqs_drv_slot *slot = &dq->slots[head];
		slot->token = tokens[c];
		slot->in_len = in_len;
		slot->ndescs = (uint16_t)ndescs;
		s->avail->ring[(uint16_t)(avail_idx + c) & mask] = htole16((uint16_t)head);
	}
	return added(s, c, ndescs, err);
}

static int split_add(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
		     unsigned in_num, void *const *tokens, unsigned n, bool indirect)
{
	unsigned total = out_num + in_num;
	if (!indirect && total <= 2)
		return add_short_batch(to_split(dq), bufs, out_num, total, tokens, n);
	return add_long(to_split(dq), bufs, out_num, total, tokens, n, indirect);
}

static bool split_kick_prepare(struct vqs_drv_vq *dq)
{
	struct vqs_drv_split *s = to_split(dq);
	uint16_t old = s->kicked_idx, new_idx = s->avail_idx;
	/* Pairs with the device's acquire load of avail idx in pop: the descriptors and avail
	 * entries written by add are visible before the index that exposes them. */
	atomic_store_explicit(shared16(&s->avail->idx), htole16(new_idx), memory_order_release);
	/* Pairs with the device's full barrier in enable_notify, between its write of avail_event
	 * (or clearing NO_NOTIFY) and its re-read of avail idx: either it sees our new idx there,
	 * or we see its request for a kick below. */
	atomic_thread_fence(memory_order_seq_cst);
	s->kicked_idx = new_idx;
	if (new_idx == old)
		return false;
	if (dq->event_idx)
		return vqs_vring_need_event(load_relaxed(s->avail_event), new_idx, old);
	return !(load_relaxed(&s->used->flags) & VQS_VRING_USED_F_NO_NOTIFY);
}

/* Ask for an interrupt once the device passes used entry `event` (EVENT_IDX). */
static void request_used_event(struct vqs_drv_split *s, uint16_t event)
{
	store_relaxed(s->used_event, event);
	/* Pairs with the device's full barrier in need_call, between its release store of used idx
	 * and its read of used_event (or avail flags): either it sees our request, or the
	 * caller's next look at used idx sees its entries. */
	atomic_thread_fence(memory_order_seq_cst);
}

/*
 * IN_ORDER: the next completed chain is always the oldest in flight. A device may answer a batch
 * with one used entry, at the position of the batch's first chain, naming the batch's last head
 * and its length; the chains before it were used completely (2.7.9). false (queue broken) when
 * the entry names no chain in flight within what the device published.
 */
static bool next_used_in_order(struct vqs_drv_split *s, uint32_t *id, uint32_t *written)
{
	struct vqs_drv_vq *dq = &s->base;
	unsigned mask = dq->num - 1;
	if (!s->batch_open) {
		const volatile struct vqs_vring_used_elem *ue = &s->used->ring[s->last_used_idx & mask];
		uint32_t last = le32toh(ue->id);
		uint16_t published = (uint16_t)(s->used_idx_seen - s->last_used_idx);
		uint16_t h = s->oldest;
		for (unsigned k = 1; h != last; k++) {
			if (k >= published) {
				vqs_drv_break(dq, "in-order used id not within the published batch",
					      last);
				return false;
			}
			h = (uint16_t)((h + dq->slots[h].ndescs) & mask);
		}
		s->batch_open = true;
		s->batch_last = h;
		s->batch_len = le32toh(ue->len);
	}
	struct vqs_drv_slot *slot = &dq->slots[s->oldest];
	*id = s->oldest;
	if (s->oldest == s->batch_last) {
		s->batch_open = false;
		*written = s->batch_len;
	} else {
		*written = slot->in_len;
	}
	s->oldest = (uint16_t)((s->oldest + slot->ndescs) & mask);
	return true;
}

/* n published used entries, any order: each read once and checked against the chains in
 * flight, the chain's descriptors spliced back onto the free list. Stops at a bad id (queue
 * broken). */
static inline __attribute__((always_inline)) unsigned
reap_any_order(struct vqs_drv_split *s, void **tokens, uint32_t *lens, unsigned n)
{
	struct vqs_drv_vq *dq = &s->base;
	struct vqs_drv_slot *slots = dq->slots;
	const volatile struct vqs_vring_used_elem *ring = s->used->ring;
	uint16_t *next = s->next, fh = s->free_head, at = s->last_used_idx;
	const unsigned num = dq->num;
	/* pointers, not a count beside them: one register fewer */
	void **tp = tokens, **const tend = tokens + n;
	for (; tp < tend; tp++, lens++, at++) {
		const volatile struct vqs_vring_used_elem *ue = &ring[at & (num - 1)];
		uint32_t id = le32toh(ue->id), written = le32toh(ue->len);
		if (id >= num || !slots[id].token) {
			vqs_drv_break(dq, "used id not in flight", id);
			break;
		}
		struct vqs_drv_slot *slot = &slots[id];
		*tp = slot->token;
		*lens = written <= slot->in_len
				 ? written
				 : vqs_drv_len_clamped(&s->base, written, slot->in_len);
		slot->token = NULL;
		next[slot->last] = fh;
		fh = (uint16_t)id;
		/* in memory, not a register */
		dq->num_free += slot->ndescs;
	}
	s->free_head = fh;
	s->last_used_idx = at;
	return (unsigned)(tp - tokens);
}

/* n chains, IN_ORDER: oldest first, a used entry answering for the chains of its batch. */
static __attribute__((noinline)) unsigned reap_in_order(struct vqs_drv_split *s,
							 void **tokens, uint32_t *lens,
							 unsigned n)
{
	struct vqs_drv_vq *dq = &s->base;
	unsigned got, freed = 0;
	for (got = 0; got < n; got++) {
		uint32_t id, written;
		if (!next_used_in_order(s, &id, &written))
			break;
		s->last_used_idx++;
		struct vqs_drv_slot *slot = &dq->slots[id];
		tokens[got] = slot->token;
		lens[got] = written <= slot->in_len
				    ? written
				    : vqs_drv_len_clamped(&s->base, written, slot->in_len);
		slot->token = NULL;
		/* The ring-order links stay: the freed run is the one after the last chain added,
		 * which free_head reaches by those links. */
		freed += slot->ndescs;
	}
	dq->num_free += freed;
	return got;
}

/* Up to max completions: the batch reap, and inlined with max 1 the one-completion reap
 * (split_get_used1), the any-order loop folded to one entry by the constant. */
static inline __attribute__((always_inline)) unsigned
get_used_n(struct vqs_drv_vq *dq, void **tokens, uint32_t *lens, unsigned max)
{
	struct vqs_drv_split *s = to_split(dq);
	uint16_t pending = (uint16_t)(s->used_idx_seen - s->last_used_idx);
	if (pending < max) {
		uint16_t idx = load_used_idx(s);
		if ((uint16_t)(idx - s->last_used_idx) > s->in_flight) {
			vqs_drv_break(dq, "used idx ahead of the chains in flight", idx);
			return 0;
		}
		s->used_idx_seen = idx;
		pending = (uint16_t)(idx - s->last_used_idx);
	}
	unsigned n = pending < max ? pending : max;
	if (n == 0)
		return 0;
	unsigned got = s->in_order ? reap_in_order(s, tokens, lens, n)
				   : reap_any_order(s, tokens, lens, n);
	s->in_flight = (uint16_t)(s->in_flight - got);
	/* While interrupts are wanted, want the one for the next completion (as callbacks stay
	 * enabled without another enable_cb). */
	if (got && dq->event_idx && !s->cb_disabled)
		request_used_event(s, s->last_used_idx);
	return got;
}

static unsigned split_get_used(struct vqs_drv_vq *dq, void **tokens, uint32_t *lens,
			       unsigned max)
{
	return get_used_n(dq, tokens, lens, max);
}

static void *split_get_used1(struct vqs_drv_vq *dq, uint32_t *len)
{
	void *token;
	return get_used_n(dq, &token, len, 1) ? token : NULL;
}

static bool split_has_used(const struct vqs_drv_vq *dq)
{
	const struct vqs_drv_split *s = to_csplit(dq);
	return s->used_idx_seen != s->last_used_idx || load_used_idx(s) != s->last_used_idx;
}

static void split_disable_cb(struct vqs_drv_vq *dq)
{
	struct vqs_drv_split *s = to_split(dq);
	if (s->cb_disabled)
		return;
	s->cb_disabled = true;
	/* With EVENT_IDX avail flags must stay 0 (2.7.7.1): point used_event at an entry the
	 * device has already passed instead, so it crosses it again only 64K completions on. */
	if (dq->event_idx)
		store_relaxed(s->used_event, (uint16_t)(s->last_used_idx - 1));
	else
		store_relaxed(&s->avail->flags, VQS_VRING_AVAIL_F_NO_INTERRUPT);
}

static bool split_enable_cb(struct vqs_drv_vq *dq)
{
	struct vqs_drv_split *s = to_split(dq);
	s->cb_disabled = false;
	if (dq->event_idx) {
		request_used_event(s, s->last_used_idx);
	} else {
		store_relaxed(&s->avail->flags, 0);
		/* Pairs with the device's full barrier in need_call, as in request_used_event. */
		atomic_thread_fence(memory_order_seq_cst);
	}
	return split_has_used(dq);
}

/* true when more than `bufs` used entries are already pending: the device may have passed the
 * event before it was written, so no interrupt is guaranteed; the caller must drain. */
static bool split_enable_cb_delayed(struct vqs_drv_vq *dq)
{
	struct vqs_drv_split *s = to_split(dq);
	if (!dq->event_idx)
		return split_enable_cb(dq);
	s->cb_disabled = false;
	uint16_t bufs = (uint16_t)(s->in_flight * 3u / 4u);
	request_used_event(s, (uint16_t)(s->last_used_idx + bufs));
	return (uint16_t)(load_used_idx(s) - s->last_used_idx) > bufs;
}

static int split_position(const struct vqs_drv_vq *dq, struct vqs_drv_pos *pos)
{
	const struct vqs_drv_split *s = to_csplit(dq);
	uint16_t used = load_used_idx(s);
	/* More used entries than chains in flight: the device broke the ring. */
	if ((uint16_t)(used - s->last_used_idx) > s->in_flight)
		return -EIO;
	pos->avail_idx = s->kicked_idx;
	pos->used_idx = used;
	return 0;
}

const struct vqs_drv_ops vqs_drv_split_ops = {
	.create = split_create,
	.destroy = split_destroy,
	.add = split_add,
	.add1 = split_add1,
	.kick_prepare = split_kick_prepare,
	.get_used = split_get_used,
	.get_used1 = split_get_used1,
	.disable_cb = split_disable_cb,
	.enable_cb = split_enable_cb,
	.enable_cb_delayed = split_enable_cb_delayed,
	.has_used = split_has_used,
	.position = split_position,
};
