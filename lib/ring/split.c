/* SPDX-License-Identifier: MIT */
/*
 * Device side of the split virtqueue (virtio 1.x 2.7). The driver owns the descriptor table and
 * the avail ring and may rewrite them at any moment: every index, ring entry and descriptor is
 * loaded once into a local copy, validated, and only the copy is used.
 */
#include "ring/vq_internal.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

/* Shared 16-bit ring fields, accessed as atomics because the driver writes them concurrently. */
static inline _Atomic uint16_t *a16(uint16_t *p) { return (_Atomic uint16_t *)p; }

static inline uint16_t load16(uint16_t *p)
{
	return le16toh(atomic_load_explicit(a16(p), memory_order_relaxed));
}

static inline void store16(uint16_t *p, uint16_t v)
{
	atomic_store_explicit(a16(p), htole16(v), memory_order_relaxed);
}

static inline bool busy_test(const struct vqs_split_ring *s, unsigned head)
{
	return s->busy[head];
}

static inline void busy_set(struct vqs_split_ring *s, unsigned head, bool busy)
{
	s->busy[head] = busy;
}

/*
 * One descriptor, copied once: two relaxed 8-byte loads (the table is 16-byte aligned), so that
 * the length, flags and next come from one snapshot even while the driver rewrites them, and
 * only the copy is used. Split into fields at once: the fast run tests the flags as a 32-bit
 * value (no 64-bit masks to keep in registers).
 */
struct desc_fast {
	uint64_t addr;
	uint32_t len;
	uint32_t fn; /* flags | next << 16 */
};

static inline struct desc_fast desc_fast_read(const struct vqs_vring_desc *src)
{
	const _Atomic uint64_t *w = (const _Atomic uint64_t *)(const void *)src;
	uint64_t lo = le64toh(atomic_load_explicit(&w[0], memory_order_relaxed));
	uint64_t hi = le64toh(atomic_load_explicit(&w[1], memory_order_relaxed));
	return (struct desc_fast){lo, (uint32_t)hi, (uint32_t)(hi >> 32)};
}

static inline struct vqs_vring_desc desc_fast_decode(struct desc_fast f)
{
	return (struct vqs_vring_desc){f.addr, f.len, (uint16_t)f.fn, (uint16_t)(f.fn >> 16)};
}

static inline void desc_snapshot(const struct vqs_vring_desc *src, struct vqs_vring_desc *d)
{
	*d = desc_fast_decode(desc_fast_read(src));
}

static enum vqs_vq_err split_resolve(struct vqs_vq *vq, const struct vqs_mem_table *t)
{
	struct vqs_split_ring *s = &vq->u.split;
	unsigned num = vq->cfg.num;
	/* The EVENT_IDX trailers (used_event, avail_event) are part of the areas. */
	size_t trailer = s->event_idx ? sizeof(uint16_t) : 0;
	void *desc = vqs_vq_ring_area(vq, t, vq->cfg.desc_addr, vqs_vring_desc_size(num));
	void *avail = vqs_vq_ring_area(vq, t, vq->cfg.driver_addr,
				       vqs_vring_avail_size(num) - 2 + trailer);
	void *used = vqs_vq_ring_area(vq, t, vq->cfg.device_addr,
				      vqs_vring_used_size(num) - 2 + trailer);
	if (!desc || !avail || !used)
		return VQS_VQ_ERR_RING_UNMAPPED;
	s->desc = desc;
	s->avail = avail;
	s->used = used;
	return VQS_VQ_OK;
}

static void split_reset_state(struct vqs_vq *vq)
{
	struct vqs_split_ring *s = &vq->u.split;
	memset(s, 0, sizeof(*s));
	s->busy = vq->id_state;
	memset(s->busy, 0, vq->cfg.num);
	s->mask = (uint16_t)(vq->cfg.num - 1);
	s->event_idx = vq->cfg.features & VQS_BIT(VQS_F_EVENT_IDX);
	s->indirect = vq->cfg.features & VQS_BIT(VQS_F_INDIRECT_DESC);
	s->notify_on_empty = vq->cfg.features & VQS_BIT(VQS_F_NOTIFY_ON_EMPTY);
	s->in_order_fold = (vq->cfg.features & VQS_BIT(VQS_F_IN_ORDER)) && vq->cfg.in_order_fold;
}

/*
 * Walk the chain whose head descriptor is d (snapshotted) into e (2.7.5). second: the snapshot of
 * the descriptor d.next names, when the fast path already read it (d has NEXT and no INDIRECT,
 * d.next < num), so that no descriptor is read twice. Descriptors are counted per table for loop
 * detection (more steps than the table has entries means a revisit) and across tables for the
 * queue-size limit on chain length (2.7.5.3.1).
 */
static enum vqs_vq_err walk_chain(struct vqs_vq *vq, const struct vqs_mem_table *t,
				  struct vqs_vring_desc d, const struct vqs_vring_desc *second,
				  struct vqs_chain *c)
{
	struct vqs_split_ring *s = &vq->u.split;
	unsigned num = vq->cfg.num;
	const struct vqs_vring_desc *table = s->desc;
	unsigned size = num, steps = 0, total = 0;
	for (;;) {
		if (++steps > size)
			return VQS_VQ_ERR_LOOP;
		if (d.flags & VQS_VRING_DESC_F_INDIRECT) {
			if (table != s->desc)
				return VQS_VQ_ERR_NESTED_INDIRECT;
			if (!s->indirect)
				return VQS_VQ_ERR_INDIRECT_FEATURE;
			if (d.flags & VQS_VRING_DESC_F_NEXT)
				return VQS_VQ_ERR_INDIRECT_NEXT;
			/* 2.7.5.3: whole descriptors; no more than a chain may hold (queue size). */
			if (d.len == 0 || d.len % sizeof(d) || d.len / sizeof(d) > num)
				return VQS_VQ_ERR_INDIRECT_LEN;
			/* One copy of the whole table (it may span regions); the walk reads only it.
			 * The WRITE flag of this descriptor is ignored (2.7.5.3.2). */
			if (vqs_mem_copy_from(t, d.addr, vq->indirect_buf, d.len))
				return VQS_VQ_ERR_ADDR;
			table = vq->indirect_buf;
			size = d.len / sizeof(d);
			steps = 0;
			desc_snapshot(&table[0], &d);
			continue;
		}
		if (++total > num)
			return VQS_VQ_ERR_CHAIN_LEN;
		enum vqs_vq_err err =
			vqs_chain_add(c, t, d.addr, d.len, d.flags & VQS_VRING_DESC_F_WRITE);
		if (err != VQS_VQ_OK || c->must_wait)
			return err;
		if (!(d.flags & VQS_VRING_DESC_F_NEXT))
			break;
		if (d.next >= size)
			return VQS_VQ_ERR_NEXT_RANGE;
		if (second) {
			d = *second;
			second = NULL;
			continue;
		}
		desc_snapshot(&table[d.next], &d);
	}
	vqs_chain_end(c);
	c->e->ndescs = (uint16_t)total;
	return VQS_VQ_OK;
}

/* Avail entries the first pass of a pop reads ahead of the walks: a batch of the scheduler's
 * default size in one pass, a bounded local array. */
#define SPLIT_PASS 64u

/* A session begins: the chains left of what the last read of avail->idx saw, or, when none are,
 * read it (once for the batch). The driver writes that index on its CPU for every chain it adds:
 * a device that read it each session while it still had chains to pop took the line away from
 * the driver once a chain at small batches, and the driver's next write missed (Linux vhost
 * reads it only when its copy is used up, vhost_get_vq_desc). -EIO when the driver moved it by
 * more than the queue size. */
static int split_begin(struct vqs_vq *vq)
{
	struct vqs_split_ring *s = &vq->u.split;
	uint16_t left = (uint16_t)(s->avail_idx - s->last_avail_idx);
	/* not past the queue size: give-backs of chains popped before the last read may have
	 * taken last_avail_idx further back than that read checked */
	if (left && left <= vq->cfg.num)
		return left + (s->nresubmit - s->resubmit_pos);
	/* Acquire pairs with the driver's release store of avail->idx, made after it wrote the
	 * ring entries and descriptors the session's pops read. */
	uint16_t idx = le16toh(atomic_load_explicit(a16(&s->avail->idx), memory_order_acquire));
	uint16_t n = (uint16_t)(idx - s->last_avail_idx);
	if (n > vq->cfg.num)
		return vqs_vq_break(vq, VQS_VQ_ERR_AVAIL_IDX);
	s->avail_idx = idx;
	return n + (s->nresubmit - s->resubmit_pos);
}

/* n avail entries from src (no wrap) into heads, each head's descriptor line fetched; the heads
 * or-ed together (one range test for the batch). */
static inline unsigned read_span(uint16_t *src, uint16_t *heads, unsigned n,
				 const struct vqs_vring_desc *desc, unsigned mask)
{
	unsigned all = 0;
	for (unsigned i = 0; i < n; i++) {
		uint16_t h = load16(&src[i]);
		heads[i] = h;
		all |= h;
		__builtin_prefetch(&desc[h & mask]);
	}
	return all;
}

/*
 * First pass over the next m avail entries: copy them into heads[] (the only read of each) and
 * start fetching every head descriptor's line and every used line the chains will complete into.
 * The driver wrote all of them on its CPU, so each first load misses; issued together, the misses
 * overlap instead of being taken one after another in the walks. Nothing is trusted here (a
 * prefetch never faults): the second pass validates each head. The ring pointers and the mask are
 * locals: a store to heads[] could alias the queue's 16-bit fields, so the compiler would reload
 * them from *s after every entry. Returns how many heads from the first are in range (num is a
 * power of two: one test of all of them or-ed), so that the fast run does not test each.
 */
static inline unsigned read_heads(const struct vqs_split_ring *s, uint16_t *heads, unsigned m)
{
	uint16_t *ring = s->avail->ring;
	const struct vqs_vring_desc *desc = s->desc;
	const unsigned mask = s->mask;
	/* up to the ring's end, then from its start: no wrap per entry. mask < 2^15, so pos & mask
	 * is the 16-bit ring position */
	const unsigned pos = s->last_avail_idx & mask;
	const unsigned first = m < mask + 1 - pos ? m : mask + 1 - pos;
	unsigned all = read_span(ring + pos, heads, first, desc, mask);
	all |= read_span(ring, heads + first, m - first, desc, mask);
	/* Eight used entries a line; the last entry too, for a batch that starts mid-line. Read,
	 * not for writing: fill compares each entry first and leaves one that already holds its
	 * value (fill_entries), and a line taken for writing here would be taken from the driver's
	 * cache even then, a miss in its reap. */
	const struct vqs_vring_used_elem *used = s->used->ring;
	unsigned u = (unsigned)s->used_idx + s->pending;
	for (unsigned i = 0; i < m; i += 8)
		__builtin_prefetch(&used[(u + i) & mask]);
	__builtin_prefetch(&used[(u + m - 1) & mask]);
	if (!(all & ~mask))
		return m;
	unsigned k = 0;
	while (heads[k] <= mask)
		k++;
	return k;
}

/* The general walk, for every chain the fast run leaves (d: the head's snapshot; second: the
 * snapshot of the descriptor d.next names, when the run read it): out of line, so that the run
 * keeps its state in registers. */
static __attribute__((noinline)) int take_long(struct vqs_vq *vq, const struct vqs_mem_table *t,
					       uint16_t head, const struct vqs_vring_desc *d,
					       const struct vqs_vring_desc *second,
					       struct vqs_elem *e)
{
	struct vqs_chain c;
	vq->walks++;
	e->id = head;
	vqs_chain_begin(&c, e, vq);
	enum vqs_vq_err err = walk_chain(vq, t, *d, second, &c);
	if (err != VQS_VQ_OK)
		return vqs_vq_break(vq, err);
	if (c.must_wait)
		return -EBUSY;
	if (c.in_area)
		vqs_long_hold(&vq->lg, e, head);
	return 0;
}

/* What the fast run reads once per batch (the element stores could alias any field of the
 * queue), and the snapshots of the chain it stopped at. The element of the chain at place i
 * (by id: with head h) is at base + i (h) * stride. */
struct pop_run {
	const struct vqs_vring_desc *desc;
	uint8_t *busy;
	char *base;
	size_t stride;
	bool by_id;
	struct vqs_mem_win win[2]; /* the hinted regions (vqs_pop_wins) */
	unsigned num;
	bool max_iov2;          /* the device's iovec limit allows two */
	struct vqs_vring_desc d[2];
	unsigned nd;            /* snapshots in d[]: 0 when the run stopped before reading one */
};

/*
 * Pop heads[i..m) (all in range: read_heads) while each is a chain of the run's shape in the
 * windows: one descriptor, or (pair) two (not the head twice: the walk judges that). Straight
 * lines in a leaf function, one instance per shape, so that the state of each stays in
 * registers. Returns where it stopped: m, or the first head it leaves to the caller (in flight,
 * or another shape or a chain for the general walk, with the snapshots it took in r->d).
 */
static inline __attribute__((always_inline)) unsigned
pop_run(struct pop_run *r, const uint16_t *heads, unsigned i, unsigned m, const bool pair,
	const bool by_id)
{
	const unsigned chained = VQS_VRING_DESC_F_NEXT | VQS_VRING_DESC_F_INDIRECT;
	uint8_t *busy = r->busy;
	/* the windows from memory: their values are operands, not registers */
	const struct vqs_mem_win *w = r->win;
	r->nd = 0;
	/* pointers, not an index beside them: one register fewer */
	const uint16_t *hp = heads + i, *const hend = heads + m;
	const size_t stride = r->stride;
	char *ep = by_id ? r->base : r->base + i * stride;
	for (; hp < hend; hp++, ep += by_id ? 0 : stride) {
		const unsigned head = *hp;
		/* The driver may not offer a chain again before the device used it (2.7.13):
		 * its in-flight records, and with by_id its element, would be overwritten. Set
		 * per chain: a batch may name a head twice. */
		if (busy[head])
			break;
		struct vqs_elem *e = (struct vqs_elem *)(by_id ? ep + head * stride : ep);
		const struct desc_fast d = desc_fast_read(&r->desc[head]);
		if (!pair) {
			if ((d.fn & chained) ||
			    !vqs_chain_single(e, w, (uint16_t)head, d.addr, d.len,
					      d.fn & VQS_VRING_DESC_F_WRITE)) {
				r->d[0] = desc_fast_decode(d);
				r->nd = 1;
				break;
			}
		} else {
			/* a readable head with NEXT: the pair's first (a writable one, or the head
			 * named twice, is the walk's) */
			const unsigned next = d.fn >> 16;
			if ((d.fn & (chained | VQS_VRING_DESC_F_WRITE)) != VQS_VRING_DESC_F_NEXT ||
			    next >= r->num || next == head) {
				r->d[0] = desc_fast_decode(d);
				r->nd = 1;
				break;
			}
			const struct desc_fast d1 = desc_fast_read(&r->desc[next]);
			if ((d1.fn & chained) ||
			    !vqs_chain_pair(e, w, true, (uint16_t)head, d.addr, d.len, d1.addr,
					    d1.len, d1.fn & VQS_VRING_DESC_F_WRITE)) {
				r->d[0] = desc_fast_decode(d);
				r->d[1] = desc_fast_decode(d1);
				r->nd = 2;
				break;
			}
		}
		busy[head] = 1;
	}
	return (unsigned)(hp - heads);
}

/* One leaf function per shape and destination form. */
#define POP_RUN_LEAF(name, pair, by_id) \
	static __attribute__((noinline)) unsigned name(struct pop_run *r, const uint16_t *heads, \
							 unsigned i, unsigned m) \
	{ \
		return pop_run(r, heads, i, m, pair, by_id); \
	}
POP_RUN_LEAF(pop_run1, false, false)
POP_RUN_LEAF(pop_run2, true, false)
POP_RUN_LEAF(pop_run1_id, false, true)
POP_RUN_LEAF(pop_run2_id, true, true)
#undef POP_RUN_LEAF

/* Field by field into the caller's: an initializer would zero the snapshots, which the run
 * writes before they are read (nd), and a returned copy would move the whole, ~50 instructions
 * that a pop of one chain (a request at a time) pays in full. */
static inline void pop_run_load(struct pop_run *r, const struct vqs_vq *vq,
				const struct vqs_mem_table *t, const struct vqs_pop_to *to)
{
	r->desc = vq->u.split.desc;
	r->busy = vq->u.split.busy;
	r->base = to->base;
	r->stride = to->stride;
	r->by_id = to->by_id;
	r->num = vq->cfg.num;
	r->max_iov2 = vq->cfg.max_iov >= 2;
	r->nd = 0;
	vqs_pop_wins(vq, t, r->win);
}

/* The element of the chain at place i with head h. */
static inline struct vqs_elem *run_elem(const struct pop_run *r, unsigned i, unsigned h)
{
	return (struct vqs_elem *)(r->base + (r->by_id ? h : i) * r->stride);
}

/* Pop the next chain the inflight region gave back (vqs_split_set_inflight restore; it is in
 * flight already): the general walk, which gives the same element as the fast run. */
static int pop_restored(struct vqs_vq *vq, const struct vqs_mem_table *t,
			const struct vqs_pop_to *to, unsigned i)
{
	struct vqs_split_ring *s = &vq->u.split;
	uint16_t head = s->resubmit[s->resubmit_pos].head;
	struct vqs_vring_desc d;
	desc_snapshot(&s->desc[head], &d);
	int rc = take_long(vq, t, head, &d, NULL, vqs_pop_elem(to, to->by_id ? head : i));
	if (rc == 0) {
		s->resubmit_pos++;
		if (to->ids)
			to->ids[i] = head;
	}
	return rc;
}

/* Second pass: pop the chains of heads[0..m), the snapshots of the avail entries from
 * last_avail_idx, into to's elements from place 0: the fast run, and the general walk for each
 * chain it leaves. Returns how many were popped (the bookkeeping of the batch is done once, for
 * them), *rc the reason for stopping short. */
static inline unsigned pop_avail(struct vqs_vq *vq, const struct vqs_mem_table *t,
				 const struct vqs_pop_to *to, const uint16_t *heads, unsigned m,
				 unsigned in_range, int *rc)
{
	struct vqs_split_ring *s = &vq->u.split;
	struct pop_run r;
	pop_run_load(&r, vq, t, to);
	/* the shape of the chain before, in this pop or the one before: its run goes on (a
	 * batch of pairs would otherwise start in the one-descriptor run and hand its first
	 * chain to the walk) */
	bool pair = s->pair_run;
	unsigned i = 0;
	while ((i = r.by_id ? (pair ? pop_run2_id(&r, heads, i, in_range)
				    : pop_run1_id(&r, heads, i, in_range))
			    : (pair ? pop_run2(&r, heads, i, in_range)
				    : pop_run1(&r, heads, i, in_range))) < m) {
		uint16_t head = heads[i];
		if (head >= r.num) {
			*rc = vqs_vq_break(vq, VQS_VQ_ERR_HEAD_RANGE);
			break;
		}
		if (s->busy[head]) {
			*rc = vqs_vq_break(vq, VQS_VQ_ERR_BUFFER_ID);
			break;
		}
		struct vqs_elem *e = run_elem(&r, i, head);
		if ((*rc = take_long(vq, t, head, &r.d[0], r.nd == 2 ? &r.d[1] : NULL, e)))
			break;
		/* (the pair run takes chains of two iovecs) */
		pair = e->ndescs == 2 && r.max_iov2;
		s->busy[head] = 1;
		/* the walk moves the hints */
		vqs_pop_wins(vq, t, r.win);
		i++;
	}
	s->pair_run = pair;
	s->last_avail_idx = (uint16_t)(s->last_avail_idx + i);
	s->avail_since_restore += s->nresubmit ? i : 0;
	s->inuse = (uint16_t)(s->inuse + i);
	if (s->infl)
		for (unsigned k = 0; k < i; k++)
			vqs_split_infl_popped(vq, heads[k]);
	return i;
}

/* Chains the inflight region gave back come first, in their pop order, then the avail ring. */
static int split_pop(struct vqs_vq *vq, const struct vqs_mem_table *t,
		     const struct vqs_pop_to *to, unsigned max)
{
	struct vqs_split_ring *s = &vq->u.split;
	unsigned n = 0;
	int rc = 0;
	while (n < max && s->resubmit_pos < s->nresubmit &&
	       (rc = pop_restored(vq, t, to, n)) == 0)
		n++;
	if (n < max && rc == 0) {
		/* What begin read (an unpop since then makes it more, never past that index); none
		 * in a session that did not begin (set_state and restore keep it at 0). */
		unsigned left = (uint16_t)(s->avail_idx - s->last_avail_idx);
		if (left > vq->cfg.num)
			left = 0;
		rc = -EAGAIN;
		for (unsigned m; n < max && left; left -= m) {
			/* A chain's id is its head: read straight into the caller's ids, no
			 * copy (a libc call) after the pop */
			uint16_t own[SPLIT_PASS], *heads = to->ids ? to->ids + n : own;
			m = max - n < left ? max - n : left;
			m = m < SPLIT_PASS ? m : SPLIT_PASS;
			unsigned in_range = read_heads(s, heads, m);
			/* the places from n */
			struct vqs_pop_to at = {
				.base = to->by_id ? to->base : (char *)to->base + n * to->stride,
				.stride = to->stride, .by_id = to->by_id,
				.ids = to->ids ? to->ids + n : NULL};
			unsigned k = pop_avail(vq, t, &at, heads, m, in_range, &rc);
			n += k;
			if (k < m)
				return n ? (int)n : rc;
		}
	}
	return n ? (int)n : rc;
}

static int split_unpop(struct vqs_vq *vq, const struct vqs_elem *elems, unsigned n)
{
	struct vqs_split_ring *s = &vq->u.split;
	if (n > s->inuse)
		return -EINVAL;
	/* Newest first. Restored chains were all popped before any avail entry, so they are the
	 * ones given back once every avail pop since the restore was. Checked whole before any
	 * change, so a refused unpop leaves the queue as it was. */
	unsigned from_avail = 0, from_restore = 0;
	for (unsigned i = n; i-- > 0;) {
		uint16_t id = elems[i].id;
		if (id >= vq->cfg.num || !busy_test(s, id))
			return -EINVAL;
		if (from_avail < s->avail_since_restore || !s->nresubmit) {
			from_avail++;
		} else if (from_restore < s->resubmit_pos &&
			   s->resubmit[s->resubmit_pos - 1 - from_restore].head == id) {
			from_restore++;
		} else {
			return -EINVAL;
		}
	}
	for (unsigned i = 0; i < n; i++)
		vqs_long_release(&vq->lg, elems[i].id);
	for (unsigned i = n - from_avail; i < n; i++) {
		busy_set(s, elems[i].id, false);
		if (s->infl)
			vqs_split_infl_unpopped(vq, elems[i].id);
	}
	s->last_avail_idx = (uint16_t)(s->last_avail_idx - from_avail);
	s->avail_since_restore -= s->nresubmit ? from_avail : 0;
	s->inuse = (uint16_t)(s->inuse - from_avail);
	s->resubmit_pos = (uint16_t)(s->resubmit_pos - from_restore);
	return 0;
}

/*
 * The used entries go straight to the ring (the session is inside its section): plain stores,
 * the driver reads them only after the release store of the index in flush. Returns how many
 * of elems[0..n) were accepted (up to the first refused).
 *
 * fold, for IN_ORDER with vqs_vq_config.in_order_fold (2.7.9 in virtio 1.2): the device may
 * answer a batch of chains with one used entry, at the offset of the batch's first avail entry,
 * naming the batch's last chain; "the skipped buffers ... are assumed to have been used (read or
 * written) by the device completely", so a chain joins the run the next entry answers for only
 * when it was written whole (written == in_len). Every entry is stored at the run's first
 * position, so the last store there is the run's answer whatever ends it (the batch, a partly
 * written chain, a refused one), and the used lines after it are left alone. The caller
 * completes in pop order, as IN_ORDER requires of the device. A constant in each call, so the
 * loop without it carries none of it.
 */
static inline __attribute__((always_inline)) unsigned
fill_entries(struct vqs_split_ring *s, const struct vqs_elem *const *elems,
	     const uint32_t *written, unsigned n, const bool fold)
{
	/* in registers: the entry stores could alias any field of the queue */
	struct vqs_vring_used_elem *ring = s->used->ring;
	uint8_t *busy = s->busy;
	const unsigned mask = s->mask; /* ids above it are out of range: num is mask + 1 */
	/* mask < 2^15, so slot & mask is the 16-bit ring position. slot: where the next entry
	 * goes, its own position or the first of the IN_ORDER run; next: the position after it. */
	unsigned slot = (unsigned)s->used_idx + s->pending, next = slot;
	const struct vqs_elem *const *ep = elems, *const *end = elems + n;
	for (; ep < end; ep++, written++) {
		const unsigned id = (*ep)->id;
		const uint32_t len = *written, in_len = (*ep)->in_len;
		if (id > mask || !busy[id] || len > in_len)
			break;
		/* one 8-byte store: the entry is id then len, both little-endian; none when the
		 * entry already holds it (the same head answered with the same length a ring's
		 * turn ago, as one request in flight at a time is), so that its line stays shared
		 * and the driver's read of it hits. The driver reads the entry only after the
		 * release store of the index in flush, which publishes an entry left as it was
		 * as it does a stored one. */
		uint64_t entry = htole64((uint64_t)len << 32 | id), old;
		memcpy(&old, &ring[slot & mask], sizeof(old));
		if (old != entry)
			memcpy(&ring[slot & mask], &entry, sizeof(entry));
		busy[id] = 0;
		next++;
		slot = fold && len == in_len ? slot : next;
	}
	return (unsigned)(ep - elems);
}

static int split_fill(struct vqs_vq *vq, const struct vqs_elem *const *elems,
		      const uint32_t *written, unsigned n)
{
	struct vqs_split_ring *s = &vq->u.split;
	const unsigned k = s->in_order_fold ? fill_entries(s, elems, written, n, true)
				       : fill_entries(s, elems, written, n, false);
	if (s->infl)
		for (unsigned i = 0; i < k; i++)
			vqs_split_infl_filled(vq, elems[i]->id);
	/* once for the batch */
	s->inuse = (uint16_t)(s->inuse - k);
	s->pending = (uint16_t)(s->pending + k);
	vqs_long_release_filled(&vq->lg, elems, k);
	return k ? (int)k : -EINVAL;
}

static unsigned split_flush(struct vqs_vq *vq)
{
	struct vqs_split_ring *s = &vq->u.split;
	unsigned n = s->pending;
	if (!n)
		return 0;
	uint16_t idx = (uint16_t)(s->used_idx + n);
	/* Release pairs with the driver's acquire load of used->idx: the entries (and the data
	 * written into the buffers) are visible before the index that publishes them. */
	atomic_store_explicit(a16(&s->used->idx), htole16(idx), memory_order_release);
	s->used_idx = idx;
	s->pending = 0;
	s->published = true;
	if (s->infl)
		vqs_split_infl_flushed(vq, n);
	return n;
}

static bool split_need_call(struct vqs_vq *vq)
{
	struct vqs_split_ring *s = &vq->u.split;
	uint16_t old = s->signalled_used, now = s->used_idx;
	bool valid = s->signalled_valid;
	if (!s->published)
		return false;
	s->published = false;
	s->signalled_used = now;
	s->signalled_valid = true;
	/* Pairs with the driver's full barrier between writing used_event / clearing
	 * NO_INTERRUPT and re-reading used->idx (enable_cb): either it sees our new idx or we
	 * see its new event. */
	atomic_thread_fence(memory_order_seq_cst);
	/* NOTIFY_ON_EMPTY: the driver asked to hear when the device ran out of buffers. */
	if (s->notify_on_empty && s->inuse == 0 &&
	    le16toh(atomic_load_explicit(a16(&s->avail->idx), memory_order_relaxed)) ==
		    s->last_avail_idx)
		return true;
	if (s->event_idx)
		return !valid || vqs_vring_need_event(load16(&s->avail->ring[vq->cfg.num]), now, old);
	return !(load16(&s->avail->flags) & VQS_VRING_AVAIL_F_NO_INTERRUPT);
}

static void split_disable_notify(struct vqs_vq *vq)
{
	struct vqs_split_ring *s = &vq->u.split;
	/* With EVENT_IDX the flags stay 0 (2.7.10): leaving avail_event behind suppresses kicks. */
	if (!s->event_idx)
		store16(&s->used->flags, VQS_VRING_USED_F_NO_NOTIFY);
}

static bool split_enable_notify(struct vqs_vq *vq)
{
	struct vqs_split_ring *s = &vq->u.split;
	if (s->event_idx)
		store16((uint16_t *)(void *)&s->used->ring[vq->cfg.num], s->last_avail_idx);
	else
		store16(&s->used->flags, 0);
	/* Pairs with the driver's full barrier between publishing avail->idx and reading
	 * avail_event / NO_NOTIFY (kick_prepare): either it sees notifications enabled and kicks,
	 * or we see its new entries here. */
	atomic_thread_fence(memory_order_seq_cst);
	uint16_t idx = le16toh(atomic_load_explicit(a16(&s->avail->idx), memory_order_relaxed));
	return idx != s->last_avail_idx || s->resubmit_pos < s->nresubmit;
}

/* Without EVENT_IDX both write used->flags; with it only enable writes, avail_event. */
static bool split_notify_written(const struct vqs_vq *vq, bool enable, uint64_t *off,
				 uint32_t *len)
{
	*len = sizeof(uint16_t);
	if (!vq->u.split.event_idx) {
		*off = offsetof(struct vqs_vring_used, flags);
		return true;
	}
	*off = offsetof(struct vqs_vring_used, ring) +
	       (uint64_t)vq->cfg.num * sizeof(struct vqs_vring_used_elem);
	return enable;
}

static void split_get_state(const struct vqs_vq *vq, struct vqs_vq_state *st)
{
	st->last_avail_idx = vq->u.split.last_avail_idx;
	st->used_idx = vq->u.split.used_idx;
}

static int split_set_state(struct vqs_vq *vq, const struct vqs_vq_state *st)
{
	struct vqs_split_ring *s = &vq->u.split;
	s->last_avail_idx = st->last_avail_idx;
	s->avail_idx = st->last_avail_idx;
	s->used_idx = st->used_idx;
	s->pending = 0;
	s->inuse = 0;
	s->signalled_valid = false;
	memset(s->busy, 0, vq->cfg.num);
	return 0;
}

const struct vqs_ring_ops vqs_split_ops = {
	.resolve = split_resolve,
	.begin = split_begin,
	.pop = split_pop,
	.unpop = split_unpop,
	.fill = split_fill,
	.flush = split_flush,
	.need_call = split_need_call,
	.disable_notify = split_disable_notify,
	.enable_notify = split_enable_notify,
	.notify_written = split_notify_written,
	.get_state = split_get_state,
	.set_state = split_set_state,
	.inflight_size = vqs_split_inflight_size,
	.set_inflight = vqs_split_set_inflight,
	.inflight_pending = vqs_split_inflight_pending,
	.reset_state = split_reset_state,
	.id_state_size = sizeof(uint8_t),
};
