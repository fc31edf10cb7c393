/* SPDX-License-Identifier: MIT */
/*
 * Where the cost model measures a wake-up (lib/sched/placement.c, sched_cost_cpus, compiled in
 * against the scheduler's internal structs): between the CPU worker 0 gets and a CPU of the
 * thread that creates the scheduler, so that the round trip is the one a kick from the owner's
 * side to the worker pays. An owner pinned to one CPU with its worker placed elsewhere is the
 * seed-2023 shape made right (auto or float placement); measured on the owner's CPU alone the
 * round trip was two context switches (2-6 us on the development VM against ~50 us across CPUs),
 * and with 50 rr queues the adaptive worker served 0.47M requests/s where it serves 2.2M with a
 * cross-CPU measurement (docs/sched.md, "The wake-up measured where the kick comes from").
 */
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "sched/internal.h"
#include "skip.h"

static int cpu_a, cpu_b; /* two CPUs this process may use */

static cpu_set_t mask_of(int a, int b)
{
	cpu_set_t m;
	CPU_ZERO(&m);
	CPU_SET(a, &m);
	if (b >= 0)
		CPU_SET(b, &m);
	return m;
}

/* A scheduler as vqs_sched_create has it when it measures: options, the creator's mask. */
static void made(struct vqs_sched *s, enum vqs_placement p, cpu_set_t creator, cpu_set_t cpus)
{
	memset(s, 0, sizeof(*s));
	vqs_sched_opts_init(&s->o);
	s->o.placement = p;
	s->o.cpus = cpus;
	s->inherit_mask = creator;
	assert_int_equal(sched_place_init(s), 0);
}

/* The owner pinned to its vCPU's CPU, the worker pinned to another: across the two. */
static void owner_pinned_worker_elsewhere_measures_across_cpus(void **state)
{
	(void)state;
	struct vqs_sched s;
	int cpu[2];
	made(&s, VQS_PLACE_PIN, mask_of(cpu_a, -1), mask_of(cpu_b, -1));
	sched_cost_cpus(&s, cpu);
	assert_int_equal(cpu[0], cpu_b);
	assert_int_equal(cpu[1], cpu_a);
	sched_place_fini(&s);
	/* float: worker 0's CPUs are the process's; the other end is still the owner's CPU */
	made(&s, VQS_PLACE_FLOAT, mask_of(cpu_a, -1), mask_of(cpu_a, -1));
	sched_cost_cpus(&s, cpu);
	assert_true(cpu[0] >= 0 && cpu[1] == cpu_a);
	assert_int_not_equal(cpu[0], cpu[1]);
	sched_place_fini(&s);
}

/* A worker that inherits the owner's one CPU shares it with the owner's side: a wake-up there is
 * a context switch, and that is what is measured. */
static void worker_on_the_owners_only_cpu_measures_on_it(void **state)
{
	(void)state;
	struct vqs_sched s;
	int cpu[2];
	made(&s, VQS_PLACE_INHERIT, mask_of(cpu_a, -1), mask_of(cpu_a, -1));
	sched_cost_cpus(&s, cpu);
	assert_int_equal(cpu[0], cpu_a);
	assert_int_equal(cpu[1], cpu_a);
	sched_place_fini(&s);
}

/* An owner free to run anywhere: worker 0's CPU and another. */
static void unpinned_owner_measures_across_cpus(void **state)
{
	(void)state;
	struct vqs_sched s;
	int cpu[2];
	made(&s, VQS_PLACE_PIN, mask_of(cpu_a, cpu_b), mask_of(cpu_b, -1));
	sched_cost_cpus(&s, cpu);
	assert_int_equal(cpu[0], cpu_b);
	assert_int_equal(cpu[1], cpu_a);
	sched_place_fini(&s);
}

int main(void)
{
	cpu_set_t m;
	cpu_a = cpu_b = -1;
	if (!sched_getaffinity(0, sizeof(m), &m))
		for (int c = 0; c < CPU_SETSIZE && cpu_b < 0; c++)
			if (CPU_ISSET(c, &m))
				*(cpu_a < 0 ? &cpu_a : &cpu_b) = c;
	if (cpu_b < 0)
		vqs_test_skip(); /* one CPU: no placement puts a worker away from its owner */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(owner_pinned_worker_elsewhere_measures_across_cpus),
		cmocka_unit_test(worker_on_the_owners_only_cpu_measures_on_it),
		cmocka_unit_test(unpinned_owner_measures_across_cpus)};
	return vqs_test_status(cmocka_run_group_tests(tests, NULL, NULL));
}
