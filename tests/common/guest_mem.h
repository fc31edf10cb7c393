/* SPDX-License-Identifier: MIT */
/*
 * Guest memory for tests that lay rings out by hand: one memfd arena mapped as one region of a
 * memory map, with asserting allocation helpers. Public API only.
 */
#ifndef VQS_TEST_GUEST_MEM_H
#define VQS_TEST_GUEST_MEM_H

#include <vqsched/vqsched.h>

struct tmem {
	struct vqs_gmem *gmem;
	struct vqs_mem *mem;
};

void tmem_init(struct tmem *m, uint64_t gpa_base, size_t size);
void tmem_fini(struct tmem *m);
/* Allocate len bytes of guest memory (zeroed); returns the gpa. */
uint64_t tmem_alloc(struct tmem *m, size_t len, size_t align);
void *tmem_host(struct tmem *m, uint64_t gpa, size_t len);
/* A buffer of len bytes filled with byte `fill`; returns its gpa. */
uint64_t tmem_buf(struct tmem *m, uint32_t len, uint8_t fill);
/* The device-side config of a ring (either layout) whose three areas are at these gpas in m. */
void tmem_vq_config(const struct tmem *m, unsigned num, uint64_t features, uint64_t desc_gpa,
		    uint64_t driver_gpa, uint64_t device_gpa, struct vqs_vq_config *c);
/* A device-side queue created and configured with c (asserting). */
struct vqs_vq *tmem_vq_create(const struct vqs_vq_config *c);

#endif
