/* SPDX-License-Identifier: MIT */
/*
 * The echo backend as a separate process, for tests that kill it: vu_backend_child PATH DELAY_US
 * serves PATH (server mode; split or packed rings, as the frontend asks), completing requests
 * asynchronously, newest first, one per DELAY_US, until it is killed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "vu_fixture.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s PATH DELAY_US\n", argv[0]);
		return 2;
	}
	static struct vu_echo echo;
	struct vqs_sched *sched;
	struct vqs_vu_backend *b;
	vu_echo_init(&echo, 1,
		     VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) | VQS_BIT(VQS_F_RING_PACKED));
	echo.delay_us = (uint32_t)strtoul(argv[2], NULL, 10);
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_POOL;
	so.nworkers = 1;
	struct vqs_vu_backend_opts bo;
	vqs_vu_backend_opts_init(&bo);
	bo.path = argv[1];
	bo.ops = &echo.ops;
	bo.opaque = &echo;
	int r = vu_echo_start_async(&echo);
	if (r == 0)
		r = vqs_sched_create(&sched, &so);
	if (r == 0) {
		bo.sched = sched;
		r = vqs_vu_backend_create(&b, &bo);
	}
	if (r < 0) {
		fprintf(stderr, "vu_backend_child: %d\n", r);
		return 1;
	}
	for (;;)
		pause();
}
