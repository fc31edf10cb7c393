/* SPDX-License-Identifier: MIT */
/*
 * seed-2023's throughput effect (the mechanism, the inherited mask, is test_ksim_presets'),
 * with this VM's costs and with bare-metal ones. Spins modelled threads: RUN_SERIAL.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#include "skip.h"
#include "two_cpus.h"

enum { TASK = VQS_KSIM_SEED2023_TASK, KTHREAD = VQS_KSIM_SEED2023_KTHREAD };

/*
 * The effect seed-2023 must show: a task-mode worker, which inherits the pinned owner's CPU,
 * competes with the vCPU for it, and TCP_STREAM and TCP_RR lose throughput against kthread mode
 * (the report: about 30% each). The drop is the CPU task mode loses, so only repeats in which
 * the model got its CPUs count (the kthread cell VQS_KSIM_SEED2023_KTHREAD_CPUS_OF its row, the
 * task cell VQS_KSIM_SEED2023_TASK_CPUS, as the preset judges): with one CPU shared by two busy
 * threads and other programs, each thread's share of it decides, not the mode. Runs of 4
 * repeats of 120 ms cells go on until each row has JUDGED_MIN judged repeats, at most RUNS_MAX
 * runs per cost set; the median of their task/kthread ratios must be below
 * 1 - VQS_KSIM_VERDICT_MARGIN, with this VM's costs and with bare-metal ones; a workload that
 * never got them skips the case, after the other was checked. A worker that does not inherit
 * the owner's mask fails it (task mode then runs as kthread mode does: ratios about 1).
 */
#define JUDGED_MIN 3u
#define RUNS_MAX 3u

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void seed2023_drop(enum vqs_ksim_host host)
{
	int a = -1, b = -1;
	if (!vqs_test_two_cpus(&a, &b))
		vqs_test_skip();
	double ratio[VQS_KSIM_SEED2023_ROWS][RUNS_MAX * 4];
	unsigned n[VQS_KSIM_SEED2023_ROWS] = {0};
	for (unsigned run = 0; run < RUNS_MAX && (n[0] < JUDGED_MIN || n[1] < JUDGED_MIN); run++) {
		struct vqs_ksim_seed2023_opts o;
		vqs_ksim_seed2023_opts_init(&o, true);
		vqs_ksim_costs_set_host(&o.costs, host);
		o.vcpu_cpu = a;
		o.peer_cpu = b;
		o.cell_ms = 120;
		o.repeats = 4;
		struct vqs_ksim_seed2023_result r = {.size = sizeof(r)};
		assert_int_equal(vqs_ksim_seed2023_run(&o, &r), 0);
		vqs_ksim_seed2023_print(stdout, &o, &r);
		assert_true(r.task_inherits_pin);
		assert_true(r.drop_expected);
		for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++) {
			const struct vqs_ksim_cell *t = &r.cell[row][TASK], *k = &r.cell[row][KTHREAD];
			assert_int_equal(t->err, 0);
			assert_int_equal(k->err, 0);
			for (unsigned i = 0; i < t->repeats && i < k->repeats; i++)
				if (t->run_cpus[i] >= VQS_KSIM_SEED2023_TASK_CPUS &&
				    k->run_cpus[i] >= VQS_KSIM_SEED2023_KTHREAD_CPUS_OF(row))
					ratio[row][n[row]++] = t->run_rate[i] / k->run_rate[i];
		}
	}
	/* Every workload judged enough is checked before one that was not skips the case. */
	bool unjudged = false;
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++) {
		if (n[row] < JUDGED_MIN) {
			printf("%s: the model got its CPUs in %u repeats over %u runs: other programs "
			       "took them\n", vqs_ksim_seed2023_row_name(row), n[row], RUNS_MAX);
			unjudged = true;
			continue;
		}
		qsort(ratio[row], n[row], sizeof(double), cmp_double);
		double median = n[row] % 2 ? ratio[row][n[row] / 2]
					   : (ratio[row][n[row] / 2 - 1] + ratio[row][n[row] / 2]) / 2;
		printf("%s task/kthread over %u judged repeats: median %.2f (%.2f-%.2f)\n",
		       vqs_ksim_seed2023_row_name(row), n[row], median, ratio[row][0],
		       ratio[row][n[row] - 1]);
		if (median >= 1 - VQS_KSIM_VERDICT_MARGIN)
			fail_msg("%s: task mode %.2fx of kthread mode, no drop",
				 vqs_ksim_seed2023_row_name(row), median);
	}
	if (unjudged)
		vqs_test_skip();
}

static void test_seed2023_task_mode_drop(void **state)
{
	(void)state;
	seed2023_drop(VQS_KSIM_HOST_THIS_VM);
}

static void test_seed2023_task_mode_drop_bare_metal(void **state)
{
	(void)state;
	seed2023_drop(VQS_KSIM_HOST_BARE_METAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed2023_task_mode_drop),
		cmocka_unit_test(test_seed2023_task_mode_drop_bare_metal),
	};
	return vqs_test_status(cmocka_run_group_tests(tests, NULL, NULL));
}
