/* SPDX-License-Identifier: MIT */
/*
 * Inside struct vqs_vq: the parts both layouts share, the per-layout operations table, and the
 * chain builder that turns validated descriptor snapshots into iovecs for either layout.
 * lib/ring/vq.c owns the public vqs_vq_* entry points and dispatches through vq->ops;
 * lib/ring/split.c and lib/ring/packed.c each provide one ops table.
 */
#ifndef VQS_RING_VQ_INTERNAL_H
#define VQS_RING_VQ_INTERNAL_H

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <vqsched/vring.h>

#include "mem/table.h"

struct vqs_vq;

struct vqs_ring_ops {
	/* Resolve the ring areas of vq->cfg through table t into host pointers (split: desc,
	 * avail, used; packed: desc, driver event, device event). VQS_VQ_OK or a break reason. */
	enum vqs_vq_err (*resolve)(struct vqs_vq *vq, const struct vqs_mem_table *t);
	/* A session begins (vqs_vq_session_begin): read the driver's side once and return the
	 * chains available (>= 0), or -EIO after vqs_vq_break(). */
	int (*begin)(struct vqs_vq *vq);
	/* Pop up to max (>= 1) chains into to's elements, no further than begin saw: how many (> 0),
	 * else -EAGAIN, -EBUSY (the first chain waits for the long-chain area, nothing consumed), or
	 * -EIO after vqs_vq_break(). One call per batch, so the layout's per-batch work is done
	 * once and each chain's pop is inlined in a loop. */
	int (*pop)(struct vqs_vq *vq, const struct vqs_mem_table *t, const struct vqs_pop_to *to,
		   unsigned max);
	int (*unpop)(struct vqs_vq *vq, const struct vqs_elem *elems, unsigned n);
	/* Write the used entries of elems[0..n) (n >= 1) with written[0..n), in order, up to the
	 * first refused: how many (> 0), else -EINVAL (the first refused) or -EIO. Inside the
	 * session's section. */
	int (*fill)(struct vqs_vq *vq, const struct vqs_elem *const *elems,
		    const uint32_t *written, unsigned n);
	unsigned (*flush)(struct vqs_vq *vq);
	bool (*need_call)(struct vqs_vq *vq);
	void (*disable_notify)(struct vqs_vq *vq);
	bool (*enable_notify)(struct vqs_vq *vq);
	/* The bytes the last disable_notify (enable false) or enable_notify wrote, as an offset in
	 * the area logged for them (split: the used ring; packed: the device event area): false
	 * when it wrote none. */
	bool (*notify_written)(const struct vqs_vq *vq, bool enable, uint64_t *off, uint32_t *len);
	void (*get_state)(const struct vqs_vq *vq, struct vqs_vq_state *st);
	int (*set_state)(struct vqs_vq *vq, const struct vqs_vq_state *st);
	size_t (*inflight_size)(unsigned num);
	int (*set_inflight)(struct vqs_vq *vq, void *region, size_t len, bool restore);
	unsigned (*inflight_pending)(const struct vqs_vq *vq);
	/* Reset layout state to a freshly configured ring (indices 0, wrap counters 1). */
	void (*reset_state)(struct vqs_vq *vq);
	/* Bytes of per-id state the layout keeps (vqs_vq.id_state has cfg.num of them). */
	size_t id_state_size;
};

extern const struct vqs_ring_ops vqs_split_ops;
extern const struct vqs_ring_ops vqs_packed_ops;

/*
 * The slow path of long chains: iovecs for chains that need more than their element's storage
 * (cfg.max_iov of them, allocated at configure, enough for the longest chain the device accepts).
 * Chains take consecutive parts of it as they are popped and hold them while in flight; the area
 * is whole again once none holds a part (each was filled or given back). A chain that does not fit
 * beside the parts still held waits: its pop returns -EBUSY with nothing consumed.
 */
struct vqs_long_area {
	struct iovec *iov;
	uint8_t *held;     /* per id (split head, packed buffer id): its chain holds a part */
	unsigned used;     /* entries held, from the start */
	unsigned holders;  /* chains holding a part */
};

/* A popped chain whose iovecs were built in the area holds them until it is filled or given
 * back. */
static inline void vqs_long_hold(struct vqs_long_area *lg, const struct vqs_elem *e, uint16_t id)
{
	lg->used += (unsigned)e->out_num + e->in_num;
	lg->holders++;
	lg->held[id] = 1;
}

/* Chain id filled or given back. */
static inline void vqs_long_release(struct vqs_long_area *lg, uint16_t id)
{
	if (!lg->holders || !lg->held[id])
		return;
	lg->held[id] = 0;
	if (--lg->holders == 0)
		lg->used = 0;
}

/* elems[0..n) were filled: one test per batch when no long chain is in flight. */
static inline void vqs_long_release_filled(struct vqs_long_area *lg,
					   const struct vqs_elem *const *elems, unsigned n)
{
	for (unsigned k = 0; lg->holders && k < n; k++)
		vqs_long_release(lg, elems[k]->id);
}

/* Layout state lives in these; vq_internal.h is the only includer of both. */
#include "ring/split.h"
#include "ring/packed.h"

struct vqs_vq {
	const struct vqs_ring_ops *ops; /* NULL while unconfigured */
	struct vqs_vq_config cfg;
	uint64_t resolved_gen; /* memory table generation the ring areas were resolved in */
	bool resolved;         /* resolved_gen is meaningful */
	_Atomic int err;       /* enum vqs_vq_err; written by the owner, read by anyone */
	unsigned hint;         /* vqs_mem_translate last-hit cache */
	/* The slot hint held before it last moved: the pop's second window (vqs_pop_wins), so
	 * that buffers alternating between two regions stay on the straight line. */
	unsigned hint2;
	/* Chains the pop left to the general walk (a count tests read to see the straight line
	 * taken; written by the queue's owner only). */
	uint64_t walks;
	/* Private copy of one indirect table (cfg.num descriptors), allocated at configure when
	 * VQS_F_INDIRECT_DESC is negotiated: tables are read out of guest memory once, into here. */
	void *indirect_buf;
	/* The layout's state per chain id (split head, packed buffer id), cfg.num entries of
	 * ops->id_state_size bytes, allocated at configure: sized by the queue, not its maximum. */
	void *id_state;
	struct vqs_long_area lg;
	union {
		struct vqs_split_ring split;
		struct vqs_packed_ring packed;
	} u;
};

/*
 * Builds one vqs_elem from descriptor snapshots, for both layouts: translates each buffer through
 * the memory table, enforces "readable before writable", the 2^32-1 byte chain limit and the
 * device's iovec limit, and moves a chain that outgrows its element's storage into the long-chain
 * area. Every rule that does not depend on the layout is enforced here, so split and packed
 * cannot disagree on them. Inline (every descriptor of every chain goes through it); the general
 * translation is in chain.c.
 */
struct vqs_chain {
	struct vqs_elem *e;
	struct vqs_vq *vq;  /* its hint, its long-chain area, the device limit cfg.max_iov */
	unsigned limit;     /* iovecs the chain may fill where it is being built */
	uint64_t out_len, in_len;
	unsigned niov;
	bool seen_write;
	bool in_area;       /* e->iov was moved into vq->lg: the pop must vqs_long_hold it */
	bool must_wait;     /* vq->lg cannot take it beside the chains holding it (not the
			     * guest's fault): the caller undoes the pop and returns -EBUSY */
};

static inline void vqs_chain_begin(struct vqs_chain *c, struct vqs_elem *e, struct vqs_vq *vq)
{
	unsigned max_iov = vq->cfg.max_iov;
	c->e = e;
	c->vq = vq;
	c->limit = max_iov < e->iov_cap ? max_iov : e->iov_cap;
	c->out_len = 0;
	c->in_len = 0;
	c->niov = 0;
	c->seen_write = false;
	c->in_area = false;
	c->must_wait = false;
	e->out_num = 0;
	e->in_num = 0;
}

/* Count a buffer of len bytes that took n iovecs. */
static inline void vqs_chain_count(struct vqs_chain *c, uint32_t len, unsigned n, bool write)
{
	c->niov += n;
	if (write) {
		c->in_len += len;
		c->e->in_num += (uint16_t)n;
	} else {
		c->out_len += len;
		c->e->out_num += (uint16_t)n;
	}
}

/* vqs_chain_add for a buffer that is not one iovec in the hinted region (or no iovec is left):
 * the general translation, the iovec limits, the move to the long-chain area. Rules already
 * checked. */
enum vqs_vq_err vqs_chain_add_general(struct vqs_chain *c, const struct vqs_mem_table *t,
				      uint64_t addr, uint32_t len, bool write);

/* VQS_VQ_OK, or the reason the chain is malformed. Sets c->must_wait (and returns VQS_VQ_OK)
 * when the chain has to wait for the long-chain area; the caller then undoes the pop. Inline: it
 * runs once per descriptor, and nearly every descriptor lies in one of the two hinted regions. */
static inline enum vqs_vq_err vqs_chain_add(struct vqs_chain *c, const struct vqs_mem_table *t,
					    uint64_t addr, uint32_t len, bool write)
{
	/* 2.7.4.2: device-readable descriptors come before device-writable ones. */
	if (write)
		c->seen_write = true;
	else if (c->seen_write)
		return VQS_VQ_ERR_WRITE_ORDER;
	if (addr + len < addr)
		return VQS_VQ_ERR_ADDR;
	/* 2.7.5: a chain carries at most 2^32 - 1 bytes (out_len/in_len are 32-bit). */
	if (c->out_len + c->in_len + len > UINT32_MAX)
		return VQS_VQ_ERR_CHAIN_BYTES;
	if (len == 0)
		return VQS_VQ_OK;
	if (c->niov < c->limit &&
	    (vqs_mem_translate_hinted(t, addr, len, &c->e->iov[c->niov], c->vq->hint) ||
	     vqs_mem_translate_hinted(t, addr, len, &c->e->iov[c->niov], c->vq->hint2))) {
		vqs_chain_count(c, len, 1, write);
		return VQS_VQ_OK;
	}
	return vqs_chain_add_general(c, t, addr, len, write);
}

/*
 * The fast builders store an element's outputs as two 8-byte words, not six fields: id, ndescs,
 * out_num and in_num, then out_len and in_len (the layout the asserts pin). The words are
 * composed in host byte order, so the field order in memory is the same on either endianness.
 */
_Static_assert(offsetof(struct vqs_elem, ndescs) == offsetof(struct vqs_elem, id) + 2 &&
		       offsetof(struct vqs_elem, out_num) == offsetof(struct vqs_elem, id) + 4 &&
		       offsetof(struct vqs_elem, in_num) == offsetof(struct vqs_elem, id) + 6 &&
		       offsetof(struct vqs_elem, in_len) == offsetof(struct vqs_elem, out_len) + 4,
	       "vqs_elem's output fields are two words");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define VQS_ELEM_AT16(k) (16u * (k))
#define VQS_ELEM_AT32(k) (32u * (k))
#else
#define VQS_ELEM_AT16(k) (48u - 16u * (k))
#define VQS_ELEM_AT32(k) (32u - 32u * (k))
#endif

static inline uint64_t vqs_elem_nums(uint16_t id, uint16_t ndescs, uint16_t out_num,
				     uint16_t in_num)
{
	return (uint64_t)id << VQS_ELEM_AT16(0) | (uint64_t)ndescs << VQS_ELEM_AT16(1) |
	       (uint64_t)out_num << VQS_ELEM_AT16(2) | (uint64_t)in_num << VQS_ELEM_AT16(3);
}

static inline uint64_t vqs_elem_lens(uint32_t out_len, uint32_t in_len)
{
	return (uint64_t)out_len << VQS_ELEM_AT32(0) | (uint64_t)in_len << VQS_ELEM_AT32(1);
}

static inline void vqs_elem_put(struct vqs_elem *e, uint64_t nums, uint64_t lens)
{
	memcpy((char *)e + offsetof(struct vqs_elem, id), &nums, sizeof(nums));
	memcpy((char *)e + offsetof(struct vqs_elem, out_len), &lens, sizeof(lens));
}

/*
 * [addr, addr + len) inside the window w, given len - 1 (in 64 bits: 2^64 - 1 for a length of
 * 0, which fails), with *off its offset there: the offset of the last byte must not carry and
 * must lie below the window's size. Below the window the offset is at least 2^64 - gpa, so
 * either that sum carries or it is at least size (a slot never wraps: size <= 2^64 - gpa); for
 * len 0 the addition carries unless the offset is 0, and then the sum is 2^64 - 1, past any
 * size. One addition, one carry and one comparison.
 */
static inline bool vqs_win_fits(const struct vqs_mem_win *w, uint64_t addr, uint64_t len_less1,
				uint64_t *off)
{
	uint64_t last;
	*off = addr - w->gpa;
	return !__builtin_add_overflow(*off, len_less1, &last) && last < w->size;
}

/*
 * [addr, addr + len) inside w[0] or, failing that, w[1] (vqs_win_fits): *host is its first
 * byte's host address, inside the window's mapping. The second window is tested on a miss of the
 * first only, so buffers in one region pay nothing for it.
 */
static inline bool vqs_wins_find(const struct vqs_mem_win w[2], uint64_t addr, uint64_t len_less1,
				 uint8_t **host)
{
	uint64_t off;
	if (__builtin_expect(vqs_win_fits(&w[0], addr, len_less1, &off), 1)) {
		*host = w[0].host + off;
		return true;
	}
	/* The same bounds, tested against the room left from off (which cannot wrap once off is
	 * below the size) rather than with a carry: written apart from the first test, it leaves
	 * the compiler nothing of that test to keep in registers through the runs' loops (one
	 * instruction a chain less on one region). */
	off = addr - w[1].gpa;
	if (off >= w[1].size || len_less1 >= w[1].size - off)
		return false;
	*host = w[1].host + off;
	return true;
}

/*
 * The chain most buffers are: one descriptor of len > 0 in one of the batch's two windows (the
 * hinted regions, vqs_pop_wins). Builds e (id, one iovec, totals, ndescs) and returns true; false
 * leaves the chain to vqs_chain_begin/add/end, which give the same element for it. None of their
 * rules can fail here: one descriptor has no order, carries under 2^32 bytes, lies inside one
 * region (which never wraps), and takes one iovec (max_iov is at least 1). Without the chain
 * state in memory, the common pop stays in registers.
 */
static inline bool vqs_chain_single(struct vqs_elem *e, const struct vqs_mem_win w[2],
				    uint16_t id, uint64_t addr, uint32_t len, bool write)
{
	uint8_t *host;
	if (e->iov_cap == 0 || !vqs_wins_find(w, addr, (uint64_t)len - 1, &host))
		return false;
	e->iov[0] = (struct iovec){host, len};
	/* selects between constants; the id is or-ed in */
	vqs_elem_put(e, vqs_elem_nums(id, 0, 0, 0) | (write ? vqs_elem_nums(0, 1, 0, 1)
							  : vqs_elem_nums(0, 1, 1, 0)),
		     write ? vqs_elem_lens(0, len) : vqs_elem_lens(len, 0));
	return true;
}

/*
 * The other common chain: two descriptors, a readable one (the caller tested its WRITE flag)
 * and a readable or writable one (w1: a request and its response buffer, or two halves of one),
 * each of len > 0 in one of the two windows, together under 2^32 bytes, with room for two iovecs
 * (max_iov2: the device limit allows two). Straight-line, as vqs_chain_single; false leaves it to
 * the general walk, which gives the same element, or the reason the chain is malformed.
 */
static inline bool vqs_chain_pair(struct vqs_elem *e, const struct vqs_mem_win w[2],
				  bool max_iov2, uint16_t id, uint64_t a0, uint32_t l0, uint64_t a1,
				  uint32_t l1, bool w1)
{
	/* both lengths > 0 and together under 2^32, in one test: l - 1 is 2^32 - 1 for 0 */
	const uint32_t m0 = l0 - 1, m1 = l1 - 1;
	const uint64_t less2 = (uint64_t)m0 + m1;
	uint8_t *h0, *h1;
	if (!max_iov2 || e->iov_cap < 2 || less2 > UINT32_MAX - 2 ||
	    !vqs_wins_find(w, a0, m0, &h0) || !vqs_wins_find(w, a1, m1, &h1))
		return false;
	e->iov[0] = (struct iovec){h0, l0};
	e->iov[1] = (struct iovec){h1, l1};
	vqs_elem_put(e, vqs_elem_nums(id, 0, 0, 0) | (w1 ? vqs_elem_nums(0, 2, 1, 1)
							 : vqs_elem_nums(0, 2, 2, 0)),
		     w1 ? vqs_elem_lens(l0, l1) : vqs_elem_lens((uint32_t)(less2 + 2), 0));
	return true;
}

/* Store the totals in c->e. */
static inline void vqs_chain_end(struct vqs_chain *c)
{
	c->e->out_len = (uint32_t)c->out_len;
	c->e->in_len = (uint32_t)c->in_len;
}

/* The element of index k (a chain id, or a place in the pop: see vqs_pop_to). */
static inline struct vqs_elem *vqs_pop_elem(const struct vqs_pop_to *to, unsigned k)
{
	return (struct vqs_elem *)((char *)to->base + (size_t)k * to->stride);
}

/*
 * The pop's windows out of table t: the hinted region, then the region hinted before it (a guest
 * whose buffers alternate between two regions: RAM above 4G, hotplugged memory, DPDK's
 * memsegs). Copied values of t's slots, built for each pop and again after each general walk
 * (whose lookup moves the hints), so a replaced table's regions are never translated through.
 */
static inline void vqs_pop_wins(const struct vqs_vq *vq, const struct vqs_mem_table *t,
				struct vqs_mem_win w[2])
{
	w[0] = vqs_mem_win(t, vq->hint);
	w[1] = vqs_mem_win(t, vq->hint2);
}

/* Mark the queue broken (first reason wins), log it once, return -EIO. */
int vqs_vq_break(struct vqs_vq *vq, enum vqs_vq_err err);

/*
 * Host pointer for the ring area [addr, addr+len) of vq in table t, translated in the address
 * space cfg.addr_space names; NULL unless the area lies wholly inside one region.
 */
void *vqs_vq_ring_area(const struct vqs_vq *vq, const struct vqs_mem_table *t, uint64_t addr,
		       uint64_t len);


#endif
