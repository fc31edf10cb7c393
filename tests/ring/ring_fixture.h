/* SPDX-License-Identifier: MIT */
/*
 * Hand-built split rings in guest memory for device-side tests: the test plays a (possibly
 * malicious) driver by writing descriptors and avail entries directly, then drives a vqs_vq
 * configured on those addresses. Public API only.
 */
#ifndef VQS_TEST_RING_FIXTURE_H
#define VQS_TEST_RING_FIXTURE_H

#include <vqsched/vqsched.h>

#include "guest_mem.h"

#define FX_GPA_BASE 0x100000ull
#define FX_ARENA (1u << 20)

/* One split ring in that memory, with the device queue configured on it. */
struct fx_ring {
	struct tmem *m;
	unsigned num;
	uint64_t features;
	uint64_t desc_gpa, avail_gpa, used_gpa;
	struct vqs_vring_desc *desc;
	struct vqs_vring_avail *avail;
	struct vqs_vring_used *used;
	uint16_t avail_idx; /* the driver's next avail idx */
	struct vqs_vq *vq;
};

/* Allocate the three areas, configure r->vq on them (asserts success). */
void fx_ring_init(struct fx_ring *r, struct tmem *m, unsigned num, uint64_t features);
void fx_ring_fini(struct fx_ring *r);
/* The vq config matching r (for reconfiguring or a second vq on the same ring). */
void fx_ring_config(const struct fx_ring *r, struct vqs_vq_config *c);
void fx_desc(struct fx_ring *r, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
	     uint16_t next);
/* Put head in the avail ring and publish it (release store of avail idx, as a driver does). */
void fx_publish(struct fx_ring *r, uint16_t head);
/* Set avail idx to an arbitrary value (malformed rings). */
void fx_set_avail_idx(struct fx_ring *r, uint16_t idx);
uint16_t fx_used_idx(const struct fx_ring *r);
/* used_event (avail trailer) and avail_event (used trailer). */
void fx_set_used_event(struct fx_ring *r, uint16_t v);
uint16_t fx_avail_event(const struct fx_ring *r);

/* Publish a one-descriptor chain at descriptor i over a fresh buffer. */
void fx_simple_chain(struct fx_ring *r, unsigned i, uint32_t len, bool write);

/* The common cmocka state: guest memory and one ring on it. fx_ctx_new stores it in *state
 * (static storage: one test at a time); fx_ctx_teardown is a cmocka teardown. */
struct fx_ctx {
	struct tmem m;
	struct fx_ring r;
};
struct fx_ctx *fx_ctx_new(void **state, unsigned num, uint64_t features);
int fx_ctx_teardown(void **state);

/* Pop inside the read lock. */
int fx_pop(struct vqs_vq *vq, struct vqs_elem *e, struct iovec *iov, unsigned cap);

#endif
