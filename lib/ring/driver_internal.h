/* SPDX-License-Identifier: MIT */
/*
 * Inside struct vqs_drv_vq (the driver's half of a virtqueue): the state both layouts share, the
 * per-layout operations table, and helpers both layouts use.
 *
 * lib/ring/driver.c owns the public vqs_drv_* entry points: it validates the config, picks the
 * ops table from VQS_F_RING_PACKED and dispatches. Each layout embeds struct vqs_drv_vq as the
 * FIRST member of its own struct (lib/ring/driver_split.c: vqs_drv_split_ops;
 * lib/ring/driver_packed.c: vqs_drv_packed_ops), allocates it in ops->create and frees it in
 * ops->destroy.
 *
 * The device on the other side of the ring is trusted no more than necessary: ids and lengths
 * it writes are validated; a bad one marks the queue broken (vqs_drv_break) instead of crashing.
 */
#ifndef VQS_RING_DRIVER_INTERNAL_H
#define VQS_RING_DRIVER_INTERNAL_H

#include <vqsched/driver.h>

/* Per chain (split: per head descriptor index; packed: per buffer id). */
struct vqs_drv_slot {
	void *token;        /* NULL while the slot is not in flight */
	uint32_t in_len;    /* writable bytes of the chain: the most the device may report used */
	uint16_t ndescs;    /* ring descriptors the chain occupies (1 when indirect) */
	uint16_t last;      /* split: index of the chain's last ring descriptor (free list splice) */
	/* This slot's indirect table, allocated from the arena on first use and reused after;
	 * 0 until then. Holds dq->indirect_max descriptors. */
	uint64_t indirect_gpa;
	void *indirect_host;
};

struct vqs_drv_vq {
	const struct vqs_drv_ops *ops;
	struct vqs_gmem *gmem;
	uint32_t num;
	uint64_t features;
	bool event_idx;       /* VQS_F_EVENT_IDX negotiated */
	bool indirect;        /* VQS_F_INDIRECT_DESC negotiated */
	bool broken;          /* the device broke a rule; see vqs_drv_break */
	bool len_warned;      /* vqs_drv_len_clamped warned once */
	unsigned num_free;    /* free ring descriptors (vqs_drv_free_count) */
	unsigned indirect_max; /* descriptors per indirect table (0 without INDIRECT_DESC) */
	/* Ring area gpas handed to the device (vqs_drv_vq_addrs). */
	uint64_t desc_gpa, driver_gpa, device_gpa;
	struct vqs_drv_slot *slots; /* num entries */
};

struct vqs_drv_ops {
	/* Allocate the layout's struct (embedding vqs_drv_vq first), call vqs_drv_base_init on it,
	 * allocate the ring areas. cfg was validated by driver.c except layout-specific rules. */
	int (*create)(struct vqs_drv_vq **out, const struct vqs_drv_vq_config *cfg);
	void (*destroy)(struct vqs_drv_vq *dq);
	/* Add up to n >= 1 chains of one shape (vqs_drv_add_batch), each checked with
	 * vqs_drv_chain_ok before it is written: called only when not broken, out_num + in_num
	 * >= 1, and (when indirect) INDIRECT_DESC negotiated and out_num + in_num <=
	 * indirect_max. Returns the chains added, -ENOSPC when the first does not fit, -EINVAL
	 * when it fails the check. */
	int (*add)(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
		   unsigned in_num, void *const *tokens, unsigned n, bool indirect);
	/* One chain of total (1 or 2) descriptors, not indirect, token not NULL (vqs_drv_add's
	 * common case): add with n 1 without the batch loop's setup. Called only when not broken
	 * and total <= num. 0, or -ENOSPC or -EINVAL as add. */
	int (*add1)(struct vqs_drv_vq *dq, const struct vqs_drv_buf *bufs, unsigned out_num,
		    unsigned total, void *token);
	bool (*kick_prepare)(struct vqs_drv_vq *dq);
	/* Up to max >= 1 completions (vqs_drv_get_used_batch). Called only when not broken. */
	unsigned (*get_used)(struct vqs_drv_vq *dq, void **tokens, uint32_t *lens, unsigned max);
	/* get_used with max 1 (vqs_drv_get_used): the token, or NULL when none. Called only when
	 * not broken; len not NULL. */
	void *(*get_used1)(struct vqs_drv_vq *dq, uint32_t *len);
	void (*disable_cb)(struct vqs_drv_vq *dq);
	bool (*enable_cb)(struct vqs_drv_vq *dq);
	bool (*enable_cb_delayed)(struct vqs_drv_vq *dq);
	/* Called only when not broken. */
	bool (*has_used)(const struct vqs_drv_vq *dq);
	/* Called only when not broken. 0 or -EIO (see vqs_drv_position). */
	int (*position)(const struct vqs_drv_vq *dq, struct vqs_drv_pos *pos);
};

extern const struct vqs_drv_ops vqs_drv_split_ops;
/* Provided by lib/ring/driver_packed.c (packed ring work). */
extern const struct vqs_drv_ops vqs_drv_packed_ops;

/* Fill the shared part from a validated cfg and allocate the slots. 0 or -ENOMEM. */
int vqs_drv_base_init(struct vqs_drv_vq *dq, const struct vqs_drv_vq_config *cfg);
/* Free what vqs_drv_base_init allocated (the arena keeps ring memory until it is destroyed). */
void vqs_drv_base_fini(struct vqs_drv_vq *dq);
/*
 * The indirect table of slot `slot` (allocated from the arena on first use, then reused): host
 * pointer to dq->indirect_max descriptors (split or packed, 16 bytes each), its gpa in *gpa.
 * NULL when the arena is full.
 */
void *vqs_drv_indirect_table(struct vqs_drv_vq *dq, unsigned slot, uint64_t *gpa);
/* Host pointer of an area this queue allocated in the arena (never NULL for those). */
void *vqs_drv_area(const struct vqs_drv_vq *dq, uint64_t gpa, size_t len);
/* A chain of a batch, checked before any of it is written: its token is set and its buffers
 * add up to at most 2^32-1 bytes (a device must refuse more). Its writable bytes in *in_len. */
static inline bool vqs_drv_chain_ok(const struct vqs_drv_buf *bufs, unsigned out_num,
				    unsigned total, const void *token, uint32_t *in_len)
{
	uint64_t out = 0, in = 0;
	unsigned k = 0;
	for (; k < out_num; k++)
		out += bufs[k].len;
	for (; k < total; k++)
		in += bufs[k].len;
	*in_len = (uint32_t)in;
	return token && out + in <= UINT32_MAX;
}
/* The device broke a rule: log why (once per queue) and stop using the ring. */
void vqs_drv_break(struct vqs_drv_vq *dq, const char *why, unsigned long long value);
/* A device reported more bytes written than the chain's writable ones: clamp to those (warned
 * once). Out of the reap loops' line: a device that follows the rules never gets here. */
__attribute__((noinline, cold)) uint32_t vqs_drv_len_clamped(struct vqs_drv_vq *dq,
							    uint32_t written, uint32_t in_len);

#endif
