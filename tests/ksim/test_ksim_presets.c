/* SPDX-License-Identifier: MIT */
/*
 * Short runs of both reproductions, asserting mechanisms only (the machine is shared and noisy):
 * what the 4.13 variant drops and the fixed variant and vqsched do not, and the task-mode worker
 * carrying the vCPU's pin while kthread and auto workers do not. No speed is asserted.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#include "skip.h"

enum { C413_B1, C413_B64, FIXED_B1, FIXED_B64, ADAPTIVE };
enum { TASK, KTHREAD, AUTO };

static bool lossless(const struct vqs_ksim_cell *c)
{
	return !c->err && !c->drops_batch && !c->drops_ring && !c->retransmits && !c->timeouts &&
	       c->delivered;
}

static void test_seed2017_413_variant_drops_fixed_and_adaptive_lose_nothing(void **state)
{
	struct vqs_ksim_seed2017_opts o;
	vqs_ksim_seed2017_opts_init(&o, true);
	struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), 0);
	vqs_ksim_seed2017_print(stdout, &o, &r);
	/* Taken from the producer ring, then dropped for want of guest buffers: the 4.13 path does
	 * it at either batch size (64 only takes more at once), so a short run counts both columns,
	 * as the library's own verdict does; batch 64 alone dropped nothing in one slow TSan run. */
	uint64_t drops_413 = 0;
	for (unsigned row = 0; row < VQS_KSIM_SEED2017_ROWS; row++) {
		for (unsigned col = C413_B1; col <= C413_B64; col++) {
			assert_int_equal(r.cell[row][col].err, 0);
			drops_413 += r.cell[row][col].drops_batch;
		}
		assert_true(lossless(&r.cell[row][FIXED_B1]));
		assert_true(lossless(&r.cell[row][FIXED_B64]));
		assert_true(lossless(&r.cell[row][ADAPTIVE]));
	}
	assert_true(drops_413 > 0);
	assert_true(r.drops_413_only);
}

static void test_seed2017_rejects_bad_options(void **state)
{
	struct vqs_ksim_seed2017_opts o;
	vqs_ksim_seed2017_opts_init(&o, true);
	struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
	o.streams[1] = 0;
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), -EINVAL);
	vqs_ksim_seed2017_opts_init(&o, true);
	r.size = 4;
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), -EINVAL);
}

/* Two usable CPUs, or the pinned scenario cannot be built. */
static bool two_cpus(int *a, int *b)
{
	cpu_set_t mine;
	if (sched_getaffinity(0, sizeof(mine), &mine))
		return false;
	*a = *b = -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &mine)) {
			if (*a < 0)
				*a = i;
			else if (*b < 0)
				*b = i;
		}
	return *b >= 0;
}

static void test_seed2023_task_mode_worker_inherits_the_vcpu_pin(void **state)
{
	int a = -1, b = -1;
	if (!two_cpus(&a, &b))
		vqs_test_skip();
	struct vqs_ksim_seed2023_opts o;
	vqs_ksim_seed2023_opts_init(&o, true);
	o.vcpu_cpu = a;
	o.peer_cpu = b;
	struct vqs_ksim_seed2023_result r = {.size = sizeof(r)};
	assert_int_equal(vqs_ksim_seed2023_run(&o, &r), 0);
	vqs_ksim_seed2023_print(stdout, &o, &r);
	assert_int_equal(r.worker_cpu_pinned[TASK], 1);
	assert_int_equal(r.worker_cpu_pinned[KTHREAD], 0);
	assert_int_equal(r.worker_cpu_pinned[AUTO], 0);
	assert_true(r.task_inherits_pin);
	char vcpu[16];
	snprintf(vcpu, sizeof(vcpu), "%d", a);
	assert_string_equal(r.worker_cpus[TASK], vcpu);
	assert_string_not_equal(r.worker_cpus[KTHREAD], vcpu);
	assert_string_not_equal(r.worker_cpus[AUTO], vcpu);
	/* Throughput directions (task below kthread) are timing: the reproduction's verdict lines
	 * and vqs-bench report them; on this shared machine they go either way between runs. */
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++)
		for (unsigned col = 0; col < VQS_KSIM_SEED2023_COLS; col++) {
			assert_int_equal(r.cell[row][col].err, 0);
			assert_true(r.cell[row][col].delivered > 0);
		}
}

static void test_seed2023_rejects_unusable_cpu(void **state)
{
	struct vqs_ksim_seed2023_opts o;
	vqs_ksim_seed2023_opts_init(&o, true);
	o.vcpu_cpu = CPU_SETSIZE - 1;
	struct vqs_ksim_seed2023_result r = {.size = sizeof(r)};
	assert_int_equal(vqs_ksim_seed2023_run(&o, &r), -EINVAL);
}

static void test_costs_parse(void **state)
{
	struct vqs_ksim_costs c;
	vqs_ksim_costs_init(&c, VQS_KSIM_HOST_THIS_VM);
	assert_int_equal(vqs_ksim_costs_parse(&c, "send=7,recv=9,wait=spin,haltpoll=200000"), 0);
	assert_int_equal(c.send_pkt_ns, 7);
	assert_int_equal(c.recv_pkt_ns, 9);
	assert_int_equal(c.wait, VQS_KSIM_WAIT_SPIN);
	assert_int_equal(c.halt_poll_ns, 200000);
	assert_int_equal(vqs_ksim_costs_parse(&c, "nosuch=1"), -EINVAL);
	assert_int_equal(vqs_ksim_costs_parse(&c, "send=x"), -EINVAL);
	assert_int_equal(vqs_ksim_costs_parse(&c, "bytes=0"), -EINVAL);
	assert_int_equal(vqs_ksim_costs_parse(&c, "bytes=100000"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_costs_parse),
		cmocka_unit_test(test_seed2017_rejects_bad_options),
		cmocka_unit_test(test_seed2023_rejects_unusable_cpu),
		cmocka_unit_test(test_seed2017_413_variant_drops_fixed_and_adaptive_lose_nothing),
		cmocka_unit_test(test_seed2023_task_mode_worker_inherits_the_vcpu_pin),
	};
	return vqs_test_status(cmocka_run_group_tests(tests, NULL, NULL));
}
