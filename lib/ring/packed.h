/* SPDX-License-Identifier: MIT */
/*
 * Packed ring state of a device-side vqs_vq (virtio 1.x 2.8), and the inflight region hooks
 * packed.c calls (lib/ring/inflight_packed.c). Owned by the vq's owner thread, like the vq.
 */
#ifndef VQS_RING_PACKED_H
#define VQS_RING_PACKED_H

#include <endian.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vqsched/vring.h>

/* A buffer id's state in vqs_packed_ring.ids[]: not popped (VQS_PACKED_ID_FREE), or popped and
 * not yet used: then the slots its chain took (1 to num), which fill and unpop step over, so
 * that they trust no element's ndescs; with an inflight region attached (none is attached while
 * a chain is in flight), VQS_PACKED_ID_INFLIGHT + its region entry, and the element's ndescs,
 * checked against the slots in flight, counts. */
#define VQS_PACKED_ID_FREE 0u
#define VQS_PACKED_ID_INFLIGHT 1u

struct vqs_packed_inflight; /* QEMU's QueueRegionPacked, laid out in inflight_packed.c */

struct vqs_packed_ring {
	/* Ring areas in host memory (resolved from cfg.desc/driver/device_addr). */
	struct vqs_vring_packed_desc *desc;
	struct vqs_vring_packed_event *driver_event; /* written by the driver, read here */
	struct vqs_vring_packed_event *device_event; /* written here, read by the driver */

	uint16_t last_avail_idx; /* next slot to pop */
	bool avail_wrap;         /* the wrap counter that slot is expected available with */
	/* The flags of the descriptor at last_avail_idx, read (acquire) by begin or enable_notify
	 * and found available: the pop takes them from here, so that it reads them no second time.
	 * Cleared whenever last_avail_idx moves. */
	bool head_seen;
	uint16_t head_flags;
	/* The last chain popped took two descriptors: the next pop starts with the pair run, as
	 * split's pair_run (a hint; any shape is popped either way), so that a pop of one pair (a
	 * request at a time) does not call the single run first only to learn the shape. */
	bool pair_run;
	uint16_t used_idx;       /* next slot to publish a used entry in (after the staged ones) */
	bool used_wrap;
	uint32_t unfilled_descs; /* slots of popped chains not filled yet: the most unpop rewinds */

	/* Staged used entries (fill): id and len are written to the ring at once, the flags of all
	 * but the first too; the first one's flags are written by flush, last. */
	uint16_t stage_idx;     /* slot of the next staged entry */
	bool stage_wrap;
	uint16_t staged;        /* entries staged since the last flush */
	uint16_t stage_first_flags;
	uint16_t stage_last;    /* slot of the last staged used descriptor (IN_ORDER folding) */
	bool stage_last_wrap;
	bool stage_last_empty;  /* ... and it reports 0 bytes, with IN_ORDER: the next fill folds it */

	/* need_call: used position when the driver was last considered for a call; not valid
	 * after a restore (set_state, inflight), when the previous backend's decisions are
	 * unknown: the next decision then calls whatever the driver's event says. */
	uint16_t signalled_idx;
	bool signalled_wrap;
	bool signalled_valid;

	/* Inflight region (NULL when detached); see inflight_packed.c. */
	struct vqs_packed_inflight *inflight;
	uint64_t inflight_counter;     /* counter the next recorded chain gets */
	uint64_t restored_counter;     /* chains up to this counter are the previous backend's */
	uint64_t resubmit_after;       /* ... and those up to this one were resubmitted already */
	unsigned resubmit_pending;     /* chains still to resubmit */
	uint16_t rec_last;             /* entry the last descriptor of the popped chain went to */
	bool rec_bad;                  /* the region's free list was found corrupt while recording */
	uint16_t staged_first;         /* head entry of the first chain staged since the flush */
	uint16_t staged_last;          /* last entry of the most recently staged chain */

	uint16_t *ids; /* per buffer id (num entries, vqs_vq.id_state): VQS_PACKED_ID_* */
};

struct vqs_vq;

/* ---- wire-format helpers both sides use (packed.c, driver_packed.c, inflight_packed.c) ---- */
#define VQS_PACKED_F_AVAIL (1u << VQS_VRING_PACKED_DESC_F_AVAIL)
#define VQS_PACKED_F_USED (1u << VQS_VRING_PACKED_DESC_F_USED)
#define VQS_PACKED_WRAP_BIT (1u << VQS_VRING_PACKED_EVENT_F_WRAP_CTR)

/* Available to the device: AVAIL equal to the wrap counter, USED not (2.8.1). */
static inline bool vqs_packed_desc_is_avail(uint16_t flags, bool wrap)
{
	bool avail = flags & VQS_PACKED_F_AVAIL, used = flags & VQS_PACKED_F_USED;
	return avail == wrap && used != wrap;
}
/* Used, as the driver sees it: AVAIL and USED both equal to its used wrap counter. */
static inline bool vqs_packed_desc_is_used(uint16_t flags, bool wrap)
{
	bool avail = flags & VQS_PACKED_F_AVAIL, used = flags & VQS_PACKED_F_USED;
	return avail == wrap && used == wrap;
}
/* Step a ring position n slots on, flipping the wrap counter when it passes the end. */
static inline void vqs_packed_advance(uint16_t *idx, bool *wrap, unsigned n, unsigned num)
{
	unsigned i = *idx + n;
	if (i >= num) {
		i -= num;
		*wrap = !*wrap;
	}
	*idx = (uint16_t)i;
}
/* A ring position (idx, wrap) as a number mod 2*num, so that "passed" is a plain distance. */
static inline unsigned vqs_packed_linear(uint16_t idx, bool wrap, unsigned num)
{
	return idx + (wrap ? 0u : num);
}
/*
 * Event suppression with EVENT_IDX (2.8.10): did the other side's position move from old_pos to
 * new_pos (vqs_packed_linear) across the event position off_wrap? A nonsense offset answers yes:
 * one spurious notification is harmless, a lost one hangs the queue.
 */
static inline bool vqs_packed_need_event(uint16_t off_wrap, unsigned new_pos, unsigned old_pos,
					 unsigned num)
{
	unsigned span = 2u * num, off = off_wrap & ~VQS_PACKED_WRAP_BIT;
	if (off >= num)
		return true;
	unsigned ev = vqs_packed_linear((uint16_t)off, off_wrap & VQS_PACKED_WRAP_BIT, num);
	return (new_pos + span - ev - 1) % span < (new_pos + span - old_pos) % span;
}
/*
 * How far ahead of the slot it reads the device's pop and the driver's reap fetch the ring.
 * Every descriptor line of a packed ring is written by both sides in a lap (the driver's
 * descriptors, then the device's used descriptor in the chain's first slot), so each line either
 * side reads next was last written on the other CPU and misses; taken one after another, at
 * about a chain in flight, those misses and not the instructions bound both loops. 16 slots
 * (four lines) keep several in flight (32 measured the same, 64 slower: the prefetches then
 * reach lines the other side is still writing). Neither prefetches across the ring's end: a
 * pointer test instead of a wrapped index, a few instructions a chain fewer.
 */
#define VQS_PACKED_AHEAD 16u
/* Event suppression structures are read and written as one 32-bit word: off_wrap in the low
 * half, flags in the high half (little-endian), so a reader never sees half an update. */
static inline uint32_t vqs_packed_event_load(struct vqs_vring_packed_event *ev)
{
	return le32toh(atomic_load_explicit((_Atomic uint32_t *)(void *)ev, memory_order_relaxed));
}
static inline void vqs_packed_event_store(struct vqs_vring_packed_event *ev, uint16_t off_wrap,
					  uint16_t flags)
{
	uint32_t w = (uint32_t)off_wrap | (uint32_t)flags << 16;
	atomic_store_explicit((_Atomic uint32_t *)(void *)ev, htole32(w), memory_order_relaxed);
}
/* Descriptor flags, read with acquire (pairs with the other side's release store of them). */
static inline uint16_t vqs_packed_flags_acquire(struct vqs_vring_packed_desc *d)
{
	return le16toh(atomic_load_explicit((_Atomic uint16_t *)(void *)&d->flags,
					    memory_order_acquire));
}
/* Descriptor flags, stored with release (pairs with the other side's acquire load of them). */
static inline void vqs_packed_flags_release(struct vqs_vring_packed_desc *d, uint16_t flags)
{
	atomic_store_explicit((_Atomic uint16_t *)(void *)&d->flags, htole16(flags),
			      memory_order_release);
}

/* ---- inflight region (inflight_packed.c) ---- */
size_t vqs_packed_inflight_size(unsigned num);
/* Attach (restore: take over a previous backend's records and repair a torn completion). */
int vqs_packed_set_inflight(struct vqs_vq *vq, void *region, size_t len, bool restore);
unsigned vqs_packed_inflight_pending(const struct vqs_vq *vq);
/* Record a popped chain: its descriptor snapshots one by one, starting at entry
 * vqs_packed_inflight_first (record returns the entry for the next one), then commit it. */
uint16_t vqs_packed_inflight_first(struct vqs_vq *vq);
uint16_t vqs_packed_inflight_record(struct vqs_vq *vq, uint16_t entry,
				    const struct vqs_vring_packed_desc *d);
uint16_t vqs_packed_inflight_commit(struct vqs_vq *vq, unsigned ndescs);
/* Unpop of the chain recorded at head `entry`: true when it was a resubmitted chain (back to
 * the pending ones; the ring position is not involved), else its entries are freed. */
bool vqs_packed_inflight_unpop(struct vqs_vq *vq, uint16_t entry);
/* A filled chain's head entry (first: the first staged since the flush); flush brackets
 * publishing the staged used descriptors. */
void vqs_packed_inflight_stage(struct vqs_vq *vq, uint16_t entry, bool first);
void vqs_packed_inflight_flush_begin(struct vqs_vq *vq);
void vqs_packed_inflight_flush_end(struct vqs_vq *vq, unsigned count);
/*
 * Resubmission: the pending chain with the lowest counter (its head entry, its descriptor count
 * in *ndescs), or -1 when none is left. vqs_packed_inflight_desc snapshots one entry and returns
 * the next one of the chain (-1 when entry is out of range).
 */
int vqs_packed_inflight_next(struct vqs_vq *vq, unsigned *ndescs);
int vqs_packed_inflight_desc(struct vqs_vq *vq, uint16_t entry, struct vqs_vring_packed_desc *d);
void vqs_packed_inflight_resubmitted(struct vqs_vq *vq, uint16_t head);

#endif
