/* SPDX-License-Identifier: MIT */
/*
 * A ring of either layout on guest memory of two adjacent regions (separate mappings), for tests
 * that run the same case on split and packed rings with buffers in both regions and across their
 * border. Public API only.
 */
#ifndef VQS_TEST_LAYOUT_FIXTURE_H
#define VQS_TEST_LAYOUT_FIXTURE_H

#include "../packed/packed_fixture.h"
#include "ring_fixture.h"

#define LFX_BORDER (FX_GPA_BASE + FX_ARENA) /* first byte of the second region */

struct lfx {
	struct tmem m;         /* the first region: FX_ARENA bytes at FX_GPA_BASE */
	struct vqs_gmem *g2;   /* the second, at LFX_BORDER */
	bool packed;
	struct fx_ring split;
	struct pfx_ring pk;
	struct vqs_vq *vq;     /* the ring's device queue, either layout */
};

/* Both regions (the second of size2 bytes) and a ring of num entries with features. */
void lfx_init(struct lfx *c, bool packed, unsigned num, uint64_t features, size_t size2);
void lfx_fini(struct lfx *c);
/* Host address of a guest byte in either region. */
uint8_t *lfx_host(struct lfx *c, uint64_t gpa);
/* The vq config of the ring (to reconfigure it). */
void lfx_config(const struct lfx *c, struct vqs_vq_config *cfg);
/* cmocka setups and teardown of a struct lfx in *state: a ring of LFX_NUM entries, no features,
 * the second region 64 KiB. */
#define LFX_NUM 8
int lfx_setup_split(void **state);
int lfx_setup_packed(void **state);
int lfx_teardown(void **state);
/* Pop into iov[0..cap) inside the read lock (fx_pop / pfx_pop). */
int lfx_pop(struct lfx *c, struct vqs_elem *e, struct iovec *iov, unsigned cap);

#endif
