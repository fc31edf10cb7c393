/* SPDX-License-Identifier: MIT */
/*
 * Short runs of both reproductions: their mechanisms, and the one effect that holds whatever
 * the load. The 4.13 variant keeps its batch and loses a packet only now and then (no stall),
 * the fixed variant and vqsched lose nothing, the task-mode worker carries the vCPU's pin; 4.13
 * loses throughput at one stream (with the leak path hit more often than the preset's: a
 * timeout is wall time). seed-2023's drops are test_ksim_seed2023_drop's, seed-2017's
 * heavy-load batching gain test_ksim_seed2017_interleave's; scripts/seed-verdicts.sh counts
 * every verdict over repeated full runs (docs/bench.md).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#include "skip.h"
#include "two_cpus.h"

enum {
	C413_B1 = VQS_KSIM_SEED2017_413_B1, C413_B64 = VQS_KSIM_SEED2017_413_B64,
	FIXED_B1 = VQS_KSIM_SEED2017_FIXED_B1, FIXED_B64 = VQS_KSIM_SEED2017_FIXED_B64,
	ADAPTIVE = VQS_KSIM_SEED2017_ADAPTIVE
};
enum { TASK = VQS_KSIM_SEED2023_TASK, KTHREAD = VQS_KSIM_SEED2023_KTHREAD,
       AUTO = VQS_KSIM_SEED2023_AUTO };

static bool lossless(const struct vqs_ksim_cell *c)
{
	return !c->err && !c->drops_batch && !c->drops_ring && !c->retransmits && !c->timeouts &&
	       c->delivered;
}

static void test_seed2017_413_keeps_its_batch_nothing_stalls(void **state)
{
	struct vqs_ksim_seed2017_opts o;
	vqs_ksim_seed2017_opts_init(&o, true);
	/* One leak per cell at most: what is left is whether a batch that finds the RX ring
	 * exhausted is kept (4.13's vhost_net_buf) or dropped (every exhausted ring, as this
	 * model once did: tens of drops per cell at 10 and 50 streams, and stalls). */
	assert_int_equal(vqs_ksim_costs_parse(&o.costs, "leak=100000000"), 0);
	struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), 0);
	vqs_ksim_seed2017_print(stdout, &o, &r);
	for (unsigned row = 0; row < VQS_KSIM_SEED2017_ROWS; row++) {
		for (unsigned col = C413_B1; col <= C413_B64; col++) {
			const struct vqs_ksim_cell *c = &r.cell[row][col];
			assert_int_equal(c->err, 0);
			if (c->drops_batch > 1 || !c->delivered)
				fail_msg("%u streams, %s: %llu batch drops, %llu delivered",
					 r.streams[row], vqs_ksim_seed2017_col_name(col),
					 (unsigned long long)c->drops_batch,
					 (unsigned long long)c->delivered);
		}
		assert_true(lossless(&r.cell[row][FIXED_B1]));
		assert_true(lossless(&r.cell[row][FIXED_B64]));
		assert_true(lossless(&r.cell[row][ADAPTIVE]));
	}
}

/*
 * The effect seed-2017 must show at light load: a packet 4.13 leaks costs its one stream a
 * retransmission timeout, so 4.13 b64 delivers less than the fixed b1 handler (what 4.12 ran).
 * The leak path hit at most every 100 ms instead of 500 ms (the timeout stays 200 ms), so that a
 * CI-sized cell (400 ms) cannot fall between two leaks; the stall is wall time the stream waits,
 * which other programs' load does not shorten. Only the 1-stream row runs.
 * The verdict is the median over 3 repeats of the per-repeat ratio, below 0.9, with packets
 * taken and lost or resent in the 4.13 cell. Measured before it became a test, on the shared
 * 2-vCPU VM at load average 13 under nice (ksim-repro --quick --repeats 3 --only 2017 --cost
 * leak=100000): 0.14x, 0.16x and 0.28x, 24 s each; with 300 ms cells and a 50 ms timeout the
 * leaks came too seldom (2 in 3 cells) and one of two runs read 1.09x.
 */
static void test_seed2017_light_load_loss(void **state)
{
	(void)state;
	struct vqs_ksim_seed2017_opts o;
	vqs_ksim_seed2017_opts_init(&o, true);
	o.repeats = 3;
	o.streams[1] = o.streams[2] = 0; /* the light-load row alone */
	assert_int_equal(vqs_ksim_costs_parse(&o.costs, "leak=100000"), 0);
	struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), 0);
	vqs_ksim_seed2017_print(stdout, &o, &r);
	for (unsigned col = 0; col < VQS_KSIM_SEED2017_COLS; col++) {
		assert_int_equal(r.cell[0][col].err, 0);
		assert_int_equal(r.cell[0][col].repeats, 3);
		for (unsigned row = 1; row < VQS_KSIM_SEED2017_ROWS; row++) { /* not run */
			assert_int_equal(r.cell[row][col].err, -ENODATA);
			assert_int_equal(r.cell[row][col].delivered, 0);
		}
	}
	assert_true(lossless(&r.cell[0][FIXED_B1]));
	assert_true(r.light_load_loss);
	assert_false(r.heavy_load_gain);
}

/* One repeat of a synthetic cell: its rate and the CPUs it got. */
static void cell_repeat(struct vqs_ksim_cell *c, unsigned i, double rate, double cpus)
{
	c->run_rate[i] = rate;
	c->run_cpus[i] = cpus;
	c->repeats = i + 1;
}

/* seed-2017's throughput verdicts judge only repeats in which both compared cells got
 * VQS_KSIM_SEED2017_CPUS: a starved cell's rate follows the CPU share other programs left it
 * (measured: 4.13 b64 / fixed b1 at 50 streams read 1.53x where the cells got 0.9 and 0.4
 * CPUs, 0.54x where they got 0.8 and 1.6). Here four starved repeats of seven say the opposite
 * of the three judged ones; judging every repeat (the verdicts before) got all four
 * answers wrong. */
static void test_seed2017_judges_repeats_with_their_cpus(void **state)
{
	(void)state;
	const unsigned last = VQS_KSIM_SEED2017_ROWS - 1;
	/* Heavy load is the last row run, wherever it is: `--streams 1,50` fills rows 0 and 1. */
	for (unsigned heavy = 1; heavy <= last; heavy++)
	for (int gain = 0; gain < 2; gain++) {
		struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
		r.streams[0] = 1;
		r.streams[heavy] = 50;
		for (unsigned row = 0; row <= heavy; row += heavy)
			for (unsigned i = 0; i < 7; i++) {
				bool judged = i < 3;
				double full = judged ? 1.8 : 0.4, k = gain ? 1000 : 1200;
				/* judged (3 of 7): 4.13 b64 1.2x or 1.0x of fixed b1, adaptive 1.0x
				 * of the best; starved (4): the other way round */
				double g = judged ? (gain ? 1.2 : 1.0) : (gain ? 0.8 : 1.6);
				cell_repeat(&r.cell[row][C413_B1], i, 500, full);
				cell_repeat(&r.cell[row][C413_B64], i, k * g, full);
				cell_repeat(&r.cell[row][FIXED_B1], i, k, judged ? full : 1.2);
				cell_repeat(&r.cell[row][FIXED_B64], i, 500, full);
				cell_repeat(&r.cell[row][ADAPTIVE], i,
					    judged ? (g > 1 ? k * g : k) : k * 0.5, full);
			}
		vqs_ksim_seed2017_judge(&r);
		assert_int_equal(r.heavy_judged, 3);
		assert_int_equal(r.adaptive_judged[0], 3);
		assert_int_equal(r.adaptive_judged[1], 3);
		assert_true(r.heavy_load_gain == (bool)gain);
		assert_true(r.adaptive_no_loss);
	}
	/* One judged repeat of three is not enough for either verdict. */
	struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
	r.streams[0] = 1;
	r.streams[last] = 50;
	for (unsigned row = 0; row <= last; row += last)
		for (unsigned i = 0; i < 3; i++)
			for (unsigned col = 0; col < VQS_KSIM_SEED2017_COLS; col++)
				cell_repeat(&r.cell[row][col], i, col == C413_B64 ? 1500 : 1000,
					    i ? 0.9 : 1.9);
	vqs_ksim_seed2017_judge(&r);
	assert_int_equal(r.heavy_judged, 1);
	assert_false(r.heavy_load_gain);
	assert_false(r.adaptive_no_loss);
}

/* In an interleaved row the table's 4.13 b64 and fixed b1 are sides of one world, whose slices
 * start from what the other variant left queued: at 50 streams 4.13 b64's read 2716-3157 Mbit/s
 * where the same variant in a world of its own read 2401-2688 in the same runs (docs/bench.md).
 * The adaptive cell is a world of its own, so the verdict takes those two columns from
 * result.alone when they were measured. Here the table's 4.13 b64 reads 1.3x the adaptive
 * cell and its world of its own 1.0x: the adaptive verdict holds; judged against the table
 * (no alone cells, or not interleaved) it does not, nor against alone cells 1.3x faster. */
static void test_seed2017_judges_adaptive_against_cells_alone(void **state)
{
	(void)state;
	const unsigned last = VQS_KSIM_SEED2017_ROWS - 1;
	for (int with_alone = 0; with_alone < 2; with_alone++)
	for (int interleaved = 0; interleaved < 2; interleaved++)
	for (int alone_fast = 0; alone_fast < 2; alone_fast++) {
		struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
		r.streams[0] = 1;
		r.streams[last] = 50;
		r.interleaved = interleaved;
		for (unsigned row = 0; row <= last; row += last)
			for (unsigned i = 0; i < 3; i++) {
				cell_repeat(&r.cell[row][C413_B1], i, 500, 1.8);
				cell_repeat(&r.cell[row][C413_B64], i, 1300, 1.8);
				cell_repeat(&r.cell[row][FIXED_B1], i, 800, 1.8);
				cell_repeat(&r.cell[row][FIXED_B64], i, 900, 1.8);
				cell_repeat(&r.cell[row][ADAPTIVE], i, 1000, 1.8);
				if (!with_alone)
					continue;
				unsigned end = row == last;
				cell_repeat(&r.alone[end][0], i, alone_fast ? 1300 : 1000, 1.8);
				cell_repeat(&r.alone[end][1], i, 800, 1.8);
			}
		vqs_ksim_seed2017_judge(&r);
		bool want = with_alone && interleaved && !alone_fast;
		assert_int_equal(r.adaptive_judged[0], 3);
		assert_int_equal(r.adaptive_judged[1], 3);
		assert_true(r.adaptive_no_loss == want);
		double off = r.adaptive_ratio[1] - (want ? 1.0 : 1000.0 / 1300);
		assert_true(off < 1e-9 && off > -1e-9);
	}
}

/* The adaptive verdict holds adaptive to the row's best kernel column, the one with the best
 * median, repeat by repeat: not to the best cell of each repeat, which of two columns that
 * measure the same rate is the noise's high side. Here fixed b1 and fixed b64 read 1000 and
 * 1150 Mbit/s by turns and adaptive 1000: 0.87x of each repeat's best, 1.0x of either
 * column. A column 1.3x faster than adaptive still fails it. */
static void test_seed2017_adaptive_against_the_best_column(void **state)
{
	(void)state;
	const unsigned last = VQS_KSIM_SEED2017_ROWS - 1;
	for (int faster = 0; faster < 2; faster++) {
		struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
		r.streams[0] = 1;
		r.streams[last] = 50;
		static const double b1[3] = {1000, 1150, 1000}, b64[3] = {1150, 1000, 1000};
		for (unsigned row = 0; row <= last; row += last)
			for (unsigned i = 0; i < 3; i++) {
				cell_repeat(&r.cell[row][C413_B1], i, 500, 1.8);
				cell_repeat(&r.cell[row][C413_B64], i, 500, 1.8);
				cell_repeat(&r.cell[row][FIXED_B1], i, b1[i], 1.8);
				cell_repeat(&r.cell[row][FIXED_B64], i, faster ? 1300 : b64[i], 1.8);
				cell_repeat(&r.cell[row][ADAPTIVE], i, 1000, 1.8);
			}
		vqs_ksim_seed2017_judge(&r);
		for (unsigned end = 0; end < 2; end++) {
			assert_int_equal(r.adaptive_judged[end], 3);
			double off = r.adaptive_ratio[end] - (faster ? 1000.0 / 1300 : 1.0);
			assert_true(off < 1e-9 && off > -1e-9);
		}
		assert_true(r.adaptive_no_loss == !faster);
	}
}

/* Where adaptive was interleaved with fixed b64 in one world (result.adaptive_pair) and fixed
 * b64 is the row's best column, the verdict judges that world's ratios, over the repeats in
 * which both sides got their CPUs: here the separate cells read adaptive at 0.8x fixed b64 (a
 * world that landed badly) and the one-world ratios 0.97x, 0.95x and, starved, 0.5x: it holds
 * at 0.96x, the median of the two judged repeats (a verdict needs 2 of 3). Where another column
 * is the best (fixed b1 at 1300), the pair's ratio against fixed b64 says nothing of it: the
 * cells decide, and adaptive at 1000 fails. */
static void test_seed2017_adaptive_judged_in_one_world(void **state)
{
	(void)state;
	const unsigned last = VQS_KSIM_SEED2017_ROWS - 1;
	for (int b1_best = 0; b1_best < 2; b1_best++) {
		struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
		r.streams[0] = 1;
		r.streams[last] = 50;
		r.interleaved = true;
		static const double ratio[3] = {0.97, 0.95, 0.5}, cpus[3] = {1.8, 1.9, 1.0};
		for (unsigned row = 0; row <= last; row += last) {
			unsigned end = row == last;
			for (unsigned i = 0; i < 3; i++) {
				cell_repeat(&r.cell[row][C413_B1], i, 500, 1.8);
				cell_repeat(&r.cell[row][C413_B64], i, 500, 1.8);
				cell_repeat(&r.cell[row][FIXED_B1], i, b1_best ? 1300 : 800, 1.8);
				cell_repeat(&r.cell[row][FIXED_B64], i, 1250, 1.8);
				cell_repeat(&r.cell[row][ADAPTIVE], i, 1000, 1.8);
				r.adaptive_pair[end].ratio[i] = ratio[i];
				r.adaptive_pair[end].cpus[0][i] = cpus[i];
				r.adaptive_pair[end].cpus[1][i] = 1.8;
			}
			r.adaptive_pair[end].runs = 3;
		}
		vqs_ksim_seed2017_judge(&r);
		for (unsigned end = 0; end < 2; end++) {
			assert_true(r.adaptive_interleaved[end] == !b1_best);
			assert_int_equal(r.adaptive_judged[end], b1_best ? 3 : 2);
			double want = b1_best ? 1000.0 / 1300 : 0.96;
			double off = r.adaptive_ratio[end] - want;
			assert_true(off < 1e-9 && off > -1e-9);
		}
		assert_true(r.adaptive_no_loss == !b1_best);
	}
}

static void test_seed2017_rejects_bad_options(void **state)
{
	struct vqs_ksim_seed2017_opts o;
	vqs_ksim_seed2017_opts_init(&o, true);
	struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
	memset(o.streams, 0, sizeof(o.streams)); /* no row to run */
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), -EINVAL);
	vqs_ksim_seed2017_opts_init(&o, true);
	o.streams[1] = UINT16_MAX + 1;
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), -EINVAL);
	vqs_ksim_seed2017_opts_init(&o, true);
	o.repeats = VQS_KSIM_MAX_REPEATS + 1;
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), -EINVAL);
	vqs_ksim_seed2017_opts_init(&o, true);
	r.size = 4;
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), -EINVAL);
}

static void test_seed2023_task_mode_worker_inherits_the_vcpu_pin(void **state)
{
	int a = -1, b = -1;
	if (!vqs_test_two_cpus(&a, &b))
		vqs_test_skip();
	struct vqs_ksim_seed2023_opts o;
	vqs_ksim_seed2023_opts_init(&o, true);
	o.vcpu_cpu = a;
	o.peer_cpu = b;
	o.repeats = 3;
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
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++)
		for (unsigned col = 0; col < VQS_KSIM_SEED2023_COLS; col++) {
			assert_int_equal(r.cell[row][col].err, 0);
			assert_true(r.cell[row][col].delivered > 0);
		}
	assert_true(r.drop_expected);
}

/* seed-2023's auto verdict judges a repeat when the kthread cell got its 1.8 CPUs and the auto
 * cell its own: TCP_RR's auto cell used 1.72-1.78 CPUs in every run of a count, and under the
 * kthread cell's 1.8 not one of 240 repeats was judged ("not judged here" in 20 of 20 runs). A
 * starved auto repeat still is not. */
static void test_seed2023_judges_auto_by_its_own_cpus(void **state)
{
	(void)state;
	for (int starved = 0; starved < 2; starved++) {
		struct vqs_ksim_seed2023_result r = {.size = sizeof(r)};
		for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++)
			for (unsigned i = 0; i < 12; i++) {
				cell_repeat(&r.cell[row][TASK], i, 14000, 1.3);
				cell_repeat(&r.cell[row][KTHREAD], i, 18500, 1.85);
				cell_repeat(&r.cell[row][AUTO], i, 20000, starved ? 0.9 : 1.74);
			}
		vqs_ksim_seed2023_judge(&r);
		for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++) {
			assert_int_equal(r.drop_judged[row], 12);
			assert_true(r.task_drop[row]);
			assert_int_equal(r.auto_judged[row], starved ? 0 : 12);
			assert_true(r.auto_ok[row] == !starved);
		}
	}
}

/* Alone on the machine TCP_RR's kthread cell uses 1.7-1.8 CPUs with this VM's costs (its external
 * host sleeps between transactions), TCP_STREAM's 1.9-2.0: a kthread cell at 1.7 is judged in
 * the TCP_RR row and not in the TCP_STREAM row, where it was slowed by the share task mode
 * loses. */
static void test_seed2023_judges_rr_kthread_by_its_own_cpus(void **state)
{
	(void)state;
	struct vqs_ksim_seed2023_result r = {.size = sizeof(r)};
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++)
		for (unsigned i = 0; i < 12; i++) {
			cell_repeat(&r.cell[row][TASK], i, 12000, 1.3);
			cell_repeat(&r.cell[row][KTHREAD], i, 18000, 1.7);
			cell_repeat(&r.cell[row][AUTO], i, 18500, 1.74);
		}
	vqs_ksim_seed2023_judge(&r);
	assert_int_equal(r.drop_judged[VQS_KSIM_SEED2023_STREAM], 0);
	assert_false(r.task_drop[VQS_KSIM_SEED2023_STREAM]);
	assert_int_equal(r.auto_judged[VQS_KSIM_SEED2023_STREAM], 0);
	assert_int_equal(r.drop_judged[VQS_KSIM_SEED2023_RR], 12);
	assert_true(r.task_drop[VQS_KSIM_SEED2023_RR]);
	assert_int_equal(r.auto_judged[VQS_KSIM_SEED2023_RR], 12);
	assert_true(r.auto_ok[VQS_KSIM_SEED2023_RR]);
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
	assert_int_equal(vqs_ksim_costs_parse(&c, "send=7,recv=9,wait=spin,haltpoll=200000,leak=9"),
			 0);
	assert_int_equal(c.send_pkt_ns, 7);
	assert_int_equal(c.recv_pkt_ns, 9);
	assert_int_equal(c.wait, VQS_KSIM_WAIT_SPIN);
	assert_int_equal(c.halt_poll_ns, 200000);
	assert_int_equal(c.leak_gap_us, 9);
	assert_int_equal(vqs_ksim_costs_parse(&c, "nosuch=1"), -EINVAL);
	assert_int_equal(vqs_ksim_costs_parse(&c, "send=x"), -EINVAL);
	assert_int_equal(vqs_ksim_costs_parse(&c, "bytes=0"), -EINVAL);
	assert_int_equal(vqs_ksim_costs_parse(&c, "bytes=100000"), -EINVAL);
}

/* What the costs line says of the process's nice, in a child (nice cannot be undone): seed
 * verdicts counted under `nice` read a third of the un-niced rates and lost the heavy-load gain,
 * with nothing in the report to say why (docs/bench.md). */
static void test_costs_print_warns_when_niced(void **state)
{
	(void)state;
	struct vqs_ksim_costs c;
	vqs_ksim_costs_init(&c, VQS_KSIM_HOST_THIS_VM);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		/* the suite itself may run niced: then the first line warns already */
		errno = 0;
		int base = getpriority(PRIO_PROCESS, 0), want = base < 10 ? 10 : 19;
		char buf[1024] = "", line[32];
		snprintf(line, sizeof(line), "nice %d;", want);
		FILE *f = fmemopen(buf, sizeof(buf), "w");
		bool plain = f && (vqs_ksim_costs_print(f, &c), fflush(f),
				   !strstr(buf, "nice") == (base <= 0));
		if (f)
			fclose(f);
		f = fmemopen(buf, sizeof(buf), "w");
		bool warned = f && !setpriority(PRIO_PROCESS, 0, want) &&
			      (vqs_ksim_costs_print(f, &c), fflush(f), strstr(buf, line));
		if (f)
			fclose(f);
		_exit(plain && warned ? 0 : 1);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_costs_parse),
		cmocka_unit_test(test_costs_print_warns_when_niced),
		cmocka_unit_test(test_seed2017_rejects_bad_options),
		cmocka_unit_test(test_seed2017_judges_repeats_with_their_cpus),
		cmocka_unit_test(test_seed2017_judges_adaptive_against_cells_alone),
		cmocka_unit_test(test_seed2017_adaptive_against_the_best_column),
		cmocka_unit_test(test_seed2017_adaptive_judged_in_one_world),
		cmocka_unit_test(test_seed2023_judges_auto_by_its_own_cpus),
		cmocka_unit_test(test_seed2023_judges_rr_kthread_by_its_own_cpus),
		cmocka_unit_test(test_seed2023_rejects_unusable_cpu),
		cmocka_unit_test(test_seed2017_413_keeps_its_batch_nothing_stalls),
		cmocka_unit_test(test_seed2017_light_load_loss),
		cmocka_unit_test(test_seed2023_task_mode_worker_inherits_the_vcpu_pin),
	};
	return vqs_test_status(cmocka_run_group_tests(tests, NULL, NULL));
}
