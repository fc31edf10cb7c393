/* SPDX-License-Identifier: MIT */
/*
 * The driver's half of a virtqueue (what a guest does), for tests, benchmarks and harnesses, plus
 * a guest-memory arena to put rings and buffers in.
 *
 * A struct vqs_drv_vq has one owner thread at a time (all calls from it). It talks to a device
 * (vqs_vq, in this process or another via shared memory) only through the ring in guest memory.
 */
#ifndef VQSCHED_DRIVER_H
#define VQSCHED_DRIVER_H

#include <stddef.h>
#include <vqsched/common.h>
#include <vqsched/mem.h>
#include <vqsched/vring.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- guest memory arena ---- */

/*
 * A memfd of `size` bytes mapped shared at a guest physical base address, with a bump allocator.
 * The fd can be passed to another process (vhost-user SET_MEM_TABLE). Threads: any for reads of
 * its fields; vqs_gmem_alloc is not thread-safe (one allocating thread).
 * create: -EINVAL for size 0, a gpa_base that is not page aligned (host and gpa alignment must
 * agree for the rings' atomics) or a range past 2^64; -errno from memfd_create/mmap.
 */
struct vqs_gmem;
VQS_API int vqs_gmem_create(struct vqs_gmem **out, uint64_t gpa_base, size_t size);
VQS_API void vqs_gmem_destroy(struct vqs_gmem *g);
/* Allocate len bytes aligned to align (power of two), zeroed; returns the gpa, or 0 when full or
 * when len is 0 or align not a power of two. An arena at gpa 0 never hands out gpa 0. */
VQS_API uint64_t vqs_gmem_alloc(struct vqs_gmem *g, size_t len, size_t align);
/* Host pointer for [gpa, gpa+len), NULL when outside the arena. */
VQS_API void *vqs_gmem_host(const struct vqs_gmem *g, uint64_t gpa, size_t len);
VQS_API int vqs_gmem_fd(const struct vqs_gmem *g);
VQS_API uint64_t vqs_gmem_base(const struct vqs_gmem *g);
VQS_API size_t vqs_gmem_size(const struct vqs_gmem *g);
/* The arena as a memory-map region (uaddr = the arena's address in this process, no release
 * hook: the arena stays owned by its creator). */
VQS_API void vqs_gmem_region(const struct vqs_gmem *g, struct vqs_mem_region *r);

/* ---- driver-side queue ---- */

struct vqs_drv_vq_config {
	uint32_t size;     /* sizeof(struct vqs_drv_vq_config) */
	uint32_t num;      /* queue size (split: power of two) */
	uint64_t features; /* VQS_BIT(VQS_F_*): RING_PACKED, EVENT_IDX, INDIRECT_DESC, IN_ORDER */
	struct vqs_gmem *gmem; /* ring areas (and indirect tables) are allocated here */
};

/* One buffer of a chain, in guest physical addresses. */
struct vqs_drv_buf {
	uint64_t gpa;
	uint32_t len;
};

struct vqs_drv_vq;
/* Create a driver-side queue with its ring areas in cfg->gmem (-ENOMEM when the arena is full,
 * -EINVAL for a bad size or feature set) / free it (its arena memory stays allocated). Threads:
 * any; the creating thread is the first owner. */
VQS_API int vqs_drv_vq_create(struct vqs_drv_vq **out, const struct vqs_drv_vq_config *cfg);
VQS_API void vqs_drv_vq_destroy(struct vqs_drv_vq *dq);
/* Ring area gpas to hand to the device (vqs_vq_config desc/driver/device_addr). Threads: any. */
VQS_API void vqs_drv_vq_addrs(const struct vqs_drv_vq *dq, uint64_t *desc, uint64_t *driver,
			      uint64_t *device);

/*
 * Add a chain of out_num readable then in_num writable buffers, owned by `token` (non-NULL) until
 * it comes back from vqs_drv_get_used. With INDIRECT_DESC negotiated and indirect true, the chain
 * goes in one indirect table. Not visible to the device until vqs_drv_kick_prepare.
 * -ENOSPC when the ring has no room, -EINVAL for 0 buffers or a NULL token. Threads: owner.
 */
VQS_API int vqs_drv_add(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
			unsigned in_num, void *token, bool indirect);
/*
 * Add n chains of one shape (out_num readable then in_num writable buffers each): chain c's
 * buffers are bufs[c * (out_num + in_num)] on, its token tokens[c]; the same rules as
 * vqs_drv_add for each. Returns how many were added, from the first: fewer than n when chain k
 * could not be (no room, or malformed: a call with the rest says why), -errno as vqs_drv_add's
 * when the first cannot be added, 0 for n 0. Threads: owner.
 */
VQS_API int vqs_drv_add_batch(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs,
			      unsigned out_num, unsigned in_num, void *const *tokens, unsigned n,
			      bool indirect);
/*
 * Publish added chains (release store of avail idx / avail flags), then decide whether the device
 * wants a kick (EVENT_IDX avail_event, NO_NOTIFY, packed device event suppression).
 * Threads: owner.
 */
VQS_API bool vqs_drv_kick_prepare(struct vqs_drv_vq *dq);
/* Next completed chain's token and written length, or NULL when none. Threads: owner. */
VQS_API void *vqs_drv_get_used(struct vqs_drv_vq *dq, uint32_t *len);
/*
 * Up to max completed chains, oldest first: their tokens and written lengths in tokens[i] and
 * lens[i]. Returns how many (0 when none, or the device broke the ring: see vqs_drv_get_used).
 * The used index is read at most once a call, and with EVENT_IDX the next interrupt is asked for
 * once, after the last. Threads: owner.
 */
VQS_API unsigned vqs_drv_get_used_batch(struct vqs_drv_vq *dq, void **tokens, uint32_t *lens,
					unsigned max);
/* Free descriptor slots. Threads: owner. */
VQS_API unsigned vqs_drv_free_count(const struct vqs_drv_vq *dq);
/* Ask the device not to interrupt (NO_INTERRUPT / driver event DISABLE). Threads: owner. */
VQS_API void vqs_drv_disable_cb(struct vqs_drv_vq *dq);
/*
 * Ask for interrupts again (used_event / flags) and re-check: true when used entries arrived
 * meanwhile (process them instead of sleeping). Threads: owner.
 */
VQS_API bool vqs_drv_enable_cb(struct vqs_drv_vq *dq);
/* Like enable_cb, but ask for an interrupt only after most in-flight chains are used
 * (EVENT_IDX; virtqueue_enable_cb_delayed). Threads: owner. */
VQS_API bool vqs_drv_enable_cb_delayed(struct vqs_drv_vq *dq);
/* Whether a completion is pending without consuming it. Threads: owner. */
VQS_API bool vqs_drv_has_used(const struct vqs_drv_vq *dq);

/* Where the ring stands, for a vhost-user frontend's SET_VRING_BASE after a reconnect. */
struct vqs_drv_pos {
	/* Where the chains published by the last vqs_drv_kick_prepare end. Split: the avail idx;
	 * packed: the slot the next published chain starts at, and the wrap counter it gets. */
	uint16_t avail_idx;
	bool avail_wrap;
	/* Where the device puts its next used entry, as the ring shows it now (completions the
	 * owner has not consumed yet included). Split: used idx; packed: the slot after the last
	 * used descriptor the device wrote, and the device wrap counter of that slot. */
	uint16_t used_idx;
	bool used_wrap;
};
/*
 * Read the position (wrap counters false for split). The used half is final only while no
 * device runs the ring (stopped or dead). 0, or -EIO when the device broke the ring (a used
 * descriptor naming no chain in flight). Threads: owner.
 */
VQS_API int vqs_drv_position(const struct vqs_drv_vq *dq, struct vqs_drv_pos *pos);

#ifdef __cplusplus
}
#endif
#endif
