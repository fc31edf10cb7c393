/* SPDX-License-Identifier: MIT */
/*
 * Device-side split ring state (virtio 1.x 2.7). Lives inside struct vqs_vq (vq_internal.h);
 * owned and used by the vq's owner thread only.
 */
#ifndef VQS_RING_SPLIT_H
#define VQS_RING_SPLIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vqsched/vring.h>

/* The QEMU "Inflight I/O tracking" split queue region (docs/interop/vhost-user.rst). */
struct vqs_split_inflight_desc {
	uint8_t inflight; /* head popped and not yet used */
	uint8_t padding[5];
	uint16_t next;    /* links the last batch of used heads */
	uint64_t counter; /* pop order */
};
struct vqs_split_inflight {
	uint64_t features;
	uint16_t version;
	uint16_t desc_num;
	uint16_t last_batch_head;
	uint16_t used_idx;
	struct vqs_split_inflight_desc desc[];
};
#define VQS_SPLIT_INFLIGHT_VERSION 1

/* A chain the inflight region says a previous backend popped and never completed. */
struct vqs_split_resubmit {
	uint64_t counter;
	uint16_t head;
};

struct vqs_split_ring {
	/* Ring areas, resolved through the memory table of generation vq->resolved_gen. */
	struct vqs_vring_desc *desc;
	struct vqs_vring_avail *avail;
	struct vqs_vring_used *used;
	uint16_t mask;            /* num - 1 */
	bool event_idx, indirect, notify_on_empty;
	bool in_order_fold;       /* IN_ORDER and cfg.in_order_fold: fill answers a run of whole
				   * chains with one entry */

	uint16_t last_avail_idx;  /* next avail entry to pop */
	uint16_t avail_idx;       /* last validated value read from avail->idx */
	uint16_t used_idx;        /* last published used->idx */
	uint16_t pending;         /* used entries written, not yet published */
	uint16_t inuse;           /* chains popped and not yet filled */
	uint16_t signalled_used;  /* used idx at the previous need_call */
	bool signalled_valid;     /* false: the next need_call must not suppress */
	bool published;           /* flushed something since the previous need_call */
	bool pair_run;            /* the last chain popped took two iovecs: the next pop starts
				   * with the pair run (a hint; any shape is popped either way) */

	/* Inflight tracking (NULL when detached). */
	struct vqs_split_inflight *infl;
	uint64_t infl_counter;            /* next counter to record */
	struct vqs_split_resubmit *resubmit; /* restored chains, by counter */
	uint16_t nresubmit, resubmit_pos; /* [resubmit_pos, nresubmit) still to pop */
	uint64_t avail_since_restore;     /* chains popped from avail (net of unpops) since then */

	/* Heads popped and not yet filled, per descriptor index (num entries, vqs_vq.id_state): a
	 * byte, not a bit, since a pop and a fill each test it and change it (a load and a store;
	 * no shifts). */
	uint8_t *busy;
};

/* Inflight tracking (inflight_split.c), called by split.c at each step of a chain's life. */
struct vqs_vq;
size_t vqs_split_inflight_size(unsigned num);
int vqs_split_set_inflight(struct vqs_vq *vq, void *region, size_t len, bool restore);
unsigned vqs_split_inflight_pending(const struct vqs_vq *vq);
void vqs_split_infl_popped(struct vqs_vq *vq, uint16_t head);
void vqs_split_infl_unpopped(struct vqs_vq *vq, uint16_t head);
void vqs_split_infl_filled(struct vqs_vq *vq, uint16_t head);
/* After the used idx store that published the last n filled heads. */
void vqs_split_infl_flushed(struct vqs_vq *vq, unsigned n);

#endif
