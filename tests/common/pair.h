/* SPDX-License-Identifier: MIT */
/*
 * A driver-side queue and a device-side queue over one guest-memory arena, in one process: the
 * fixture most ring, scheduler and benchmark tests start from. Public API only.
 */
#ifndef VQS_TEST_PAIR_H
#define VQS_TEST_PAIR_H

#include <vqsched/vqsched.h>

struct vqs_pair {
	struct vqs_gmem *gmem;
	struct vqs_mem *mem;
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	uint64_t features;
	unsigned num;
};

/* Build a pair of `num` entries with `features` in an arena of arena_size bytes at gpa_base.
 * 0 or -errno. */
int vqs_pair_init(struct vqs_pair *p, unsigned num, uint64_t features, uint64_t gpa_base,
		  size_t arena_size);
void vqs_pair_fini(struct vqs_pair *p);

#endif
