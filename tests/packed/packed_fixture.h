/* SPDX-License-Identifier: MIT */
/*
 * Hand-built packed rings in guest memory for device-side tests: the test plays a (possibly
 * malicious) driver by writing descriptors and event suppression structures directly, then
 * drives a vqs_vq configured on those addresses. Public API only.
 */
#ifndef VQS_TEST_PACKED_FIXTURE_H
#define VQS_TEST_PACKED_FIXTURE_H

#include <vqsched/vqsched.h>

#include "guest_mem.h"

#define PFX_GPA_BASE 0x200000ull
#define PFX_ARENA (4u << 20)
#define PFX_F_AVAIL (1u << VQS_VRING_PACKED_DESC_F_AVAIL)
#define PFX_F_USED (1u << VQS_VRING_PACKED_DESC_F_USED)
#define PFX_PACKED VQS_BIT(VQS_F_RING_PACKED)

/* One packed ring in that memory, the test as its driver, and the device queue on it. */
struct pfx_ring {
	struct tmem *m;
	unsigned num;
	uint64_t features; /* RING_PACKED is always added */
	uint64_t desc_gpa, driver_gpa, device_gpa;
	struct vqs_vring_packed_desc *desc;
	struct vqs_vring_packed_event *driver_event; /* the test writes it */
	struct vqs_vring_packed_event *device_event; /* the device writes it */
	uint16_t avail_idx; /* the test driver's next slot and wrap counter */
	bool avail_wrap;
	uint16_t used_idx;  /* the test driver's next slot to look for a used descriptor */
	bool used_wrap;
	struct vqs_vq *vq;
};

/* One descriptor as the test driver wants it: flags without the AVAIL/USED bits. */
struct pfx_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t id;
	uint16_t flags;
};

void pfx_ring_init(struct pfx_ring *r, struct tmem *m, unsigned num, uint64_t features);
void pfx_ring_fini(struct pfx_ring *r);
void pfx_ring_config(const struct pfx_ring *r, struct vqs_vq_config *c);

/* AVAIL/USED bits that make a descriptor available for wrap counter `wrap`. */
uint16_t pfx_avail_bits(bool wrap);
/* Write descriptor slot i: fields first, then flags (exactly as given) with a release store. */
void pfx_raw(struct pfx_ring *r, unsigned i, uint64_t addr, uint32_t len, uint16_t id,
	     uint16_t flags);
/* Make a chain available at the driver's position as a driver does (NEXT added between
 * descriptors, the head's flags written last) and advance the position. */
void pfx_chain(struct pfx_ring *r, const struct pfx_desc *d, unsigned n);
/* One descriptor chain over a fresh buffer of len bytes with buffer id `id`. */
void pfx_simple(struct pfx_ring *r, uint16_t id, uint32_t len, bool write);
/* Flags of slot i (acquire, as a driver reads them). */
uint16_t pfx_flags(const struct pfx_ring *r, unsigned i);
/* The next used descriptor for the test driver: true and its id/len when there is one; skips
 * the slots of a chain of `ndescs` descriptors. */
bool pfx_get_used(struct pfx_ring *r, unsigned ndescs, uint16_t *id, uint32_t *len);
void pfx_set_driver_event(struct pfx_ring *r, uint16_t off_wrap, uint16_t flags);
void pfx_device_event(const struct pfx_ring *r, uint16_t *off_wrap, uint16_t *flags);

/* Pop inside the read lock. */
int pfx_pop(struct vqs_vq *vq, struct vqs_elem *e, struct iovec *iov, unsigned cap);
/* Pop (must succeed), fill with `written`, flush; returns the popped id. */
uint16_t pfx_complete_one(struct pfx_ring *r, uint32_t written);

#endif
