/* SPDX-License-Identifier: MIT */
/*
 * seed-2017's judged rows interleaved (opts.interleave): 4.13 b64 and fixed b1 measured in one
 * world whose RX handlers are switched every N packets, at light load and at heavy load, and
 * vqsched adaptive against fixed b64 in one world whose queues are handed between the two
 * backends. Spins modelled threads: RUN_SERIAL.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#include "skip.h"
#include "two_cpus.h"

enum { B64 = VQS_KSIM_SEED2017_413_B64, B1 = VQS_KSIM_SEED2017_FIXED_B1 };

#define REPEATS 3u

/* The preset's options (quick or not) for a world that needs two CPUs: skipped without them. */
static void opts_made(struct vqs_ksim_seed2017_opts *o, bool quick)
{
	int a = -1, b = -1;
	if (!vqs_test_two_cpus(&a, &b))
		vqs_test_skip();
	vqs_ksim_seed2017_opts_init(o, quick);
}

/* Run the heavy row until it is judged: a pair world in which other programs left the model less
 * than VQS_KSIM_SEED2017_CPUS is not (heavy_judged_with_its_cpus). Once more, then the case
 * cannot run here. */
static void run_heavy_judged(const struct vqs_ksim_seed2017_opts *o,
			     struct vqs_ksim_seed2017_result *r)
{
	for (unsigned run = 0;; run++) {
		memset(r, 0, sizeof(*r));
		r->size = sizeof(*r);
		assert_int_equal(vqs_ksim_seed2017_run(o, r), 0);
		vqs_ksim_seed2017_print(stdout, o, r);
		if (r->heavy_judged >= 2) /* of REPEATS: what a verdict needs */
			break;
		if (run == 1)
			vqs_test_skip();
	}
}

/*
 * The adaptive verdict's worlds (result.adaptive_pair): each repeat of both judged rows ran one,
 * with both nics' queues handed between the library's scheduler and the kernel model's worker
 * every N packets. Both sides delivered at comparable rates: a hand-over that left the queues to
 * neither backend stalls the side after it (a ratio near 0 or without bound), one that left
 * them to both breaks the rings or the flows (the world fails, and adds no repeat).
 */
static void adaptive_handed_over(const struct vqs_ksim_seed2017_result *r)
{
	for (unsigned end = 0; end < 2; end++) {
		const struct vqs_ksim_seed2017_adaptive_pair *p = &r->adaptive_pair[end];
		assert_int_equal(p->runs, REPEATS);
		for (unsigned i = 0; i < REPEATS; i++) {
			printf("%s row, repeat %u: adaptive / fixed b64 in one world = %.2f (CPUs "
			       "%.1f, %.1f)\n",
			       end ? "heavy" : "light", i, p->ratio[i], p->cpus[0][i],
			       p->cpus[1][i]);
			assert_true(p->ratio[i] > 0.25 && p->ratio[i] < 4);
			assert_true(p->cpus[0][i] > 0 && p->cpus[1][i] > 0);
		}
	}
}

/*
 * Where the real commit's gain came from: the tun lock (a spinlock and a cache miss) that the
 * vhost RX thread takes once per 64 packets instead of once per packet, which shows where that
 * thread is the bottleneck. Costs that make it so (a 20 us lock round, a receiver as fast as the
 * sender): in the interleaved world the 4.13 b64 side must beat the fixed b1 side by 1.5x in
 * every repeat. Both sides of a repeat share the CPUs other programs leave the world, so the
 * ratio is the handlers', not the shares'. A switch that does not reach the workers, or sides
 * swapped, gives about 1x or below.
 */
static void heavy_interleaved(void **state)
{
	(void)state;
	struct vqs_ksim_seed2017_opts o;
	opts_made(&o, true);
	assert_int_equal(vqs_ksim_costs_parse(&o.costs, "lock=20000,recv=1000"), 0);
	o.streams[0] = 1;
	o.streams[1] = 0;
	o.streams[2] = 50;
	o.cell_ms = 200;
	o.repeats = REPEATS;
	o.interleave = 500;
	struct vqs_ksim_seed2017_result r;
	run_heavy_judged(&o, &r);
	assert_true(r.interleaved);
	const struct vqs_ksim_cell *c = r.cell[2];
	assert_int_equal(c[B64].err, 0);
	assert_int_equal(c[B1].err, 0);
	assert_int_equal(c[B64].repeats, REPEATS);
	assert_int_equal(c[B1].repeats, REPEATS);
	for (unsigned i = 0; i < REPEATS; i++) {
		double ratio = c[B1].run_rate[i] > 0 ? c[B64].run_rate[i] / c[B1].run_rate[i] : 0;
		printf("repeat %u: 4.13 b64 / fixed b1 = %.2f\n", i, ratio);
		assert_true(ratio > 1.5);
	}
	assert_int_equal(c[B1].drops_batch, 0); /* only the 4.13 handler leaks */
	/* each variant against itself, in the same load: within the gain asserted above */
	assert_int_equal(r.pair[1].runs, REPEATS);
	assert_true(r.pair[1].spread < 0.5);
	assert_true(r.heavy_load_gain);
	adaptive_handed_over(&r);
}

/*
 * The preset as `--quick` runs it (this VM's waits; the heavy row's receiver at the sender's
 * pace, so that the vhost RX thread and not guest B bounds 50 streams, as in the real commit's
 * report): the model's 4.13 b64 must show its saving per CPU-second above what each variant
 * reads against itself, with that spread under 10%, so that it resolves the real commit's gain.
 * With guest B at 4000 ns a packet in this row too (the light row's receiver), guest B's thread
 * took the most CPU and the gain read 0.88-1.14x against spreads of 0.01-0.06: 4 runs of 10
 * held. The spread is the widest of six self worlds and reached 0.055 at load average 7.5 (fixed
 * b1 1.055x), so it is bounded by what the verdict must resolve, not by what a quiet machine
 * gives. Quick cells (400 ms, against the full preset's 1000) resolve it as well: 1.33-1.51x
 * against spreads of 0.037-0.041 in three runs where the full preset read 1.29-1.40x against
 * 0.035 (load average ~1), in 40% of the time. The spread is the widest of six worlds, and one
 * short world can meet a stall: in a clean-clone run (2026-12-06) fixed b1 read 0.859x against
 * itself, a spread of 0.141, while the gain still read 1.30x. So a spread over the margin runs
 * the case once more; two in a row fail it.
 */
static void heavy_default_costs(void **state)
{
	(void)state;
	struct vqs_ksim_seed2017_opts o;
	opts_made(&o, true);
	o.streams[0] = 1;
	o.streams[1] = 0;
	o.streams[2] = 50;
	o.repeats = REPEATS;
	struct vqs_ksim_seed2017_result r;
	for (unsigned run = 0; run < 2; run++) {
		run_heavy_judged(&o, &r);
		if (r.pair[1].spread < VQS_KSIM_VERDICT_MARGIN)
			break;
		printf("spread %.3f: one self world met the machine's noise; once more\n",
		       r.pair[1].spread);
	}
	assert_true(r.interleaved);
	assert_int_equal(r.pair[1].runs, REPEATS);
	assert_true(r.pair[1].spread < VQS_KSIM_VERDICT_MARGIN);
	assert_true(r.heavy_load_gain);
}

/* An interleaved result with a light row (and a heavy one when heavy): no cells run yet. */
static void result_made(struct vqs_ksim_seed2017_result *r, bool heavy)
{
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	r->streams[0] = 1;
	r->streams[2] = heavy ? 50 : 0;
	r->interleaved = true;
}

/* Row `row`'s cells over `repeats` repeats with a CPU each to spare: 4.13 b64 at b64 times the
 * others' rate. */
static void cells_made(struct vqs_ksim_seed2017_result *r, unsigned row, unsigned repeats,
		       double b64)
{
	for (unsigned col = 0; col < VQS_KSIM_SEED2017_COLS; col++) {
		struct vqs_ksim_cell *c = &r->cell[row][col];
		c->repeats = repeats;
		for (unsigned i = 0; i < repeats; i++) {
			c->run_rate[i] = col == B64 ? 1000 * b64 : 1000;
			c->run_cpus[i] = 2;
		}
		c->rate = c->run_rate[0];
	}
}

/* A heavy row of `repeats` interleaved repeats whose 4.13 b64 / fixed b1 ratio is `gain` in
 * each (the cells' rates and the worlds' rounds alike), and whose self-comparisons read
 * 1 + spread and 1 - spread. */
static void heavy_made(struct vqs_ksim_seed2017_result *r, unsigned repeats, double gain,
		       double spread)
{
	result_made(r, true);
	cells_made(r, 0, repeats, 1.0);
	cells_made(r, 2, repeats, gain);
	r->pair[1].runs = repeats;
	for (unsigned i = 0; i < repeats; i++) {
		r->pair[1].self_ratio[0][i] = 1 + spread;
		r->pair[1].self_ratio[1][i] = 1 - spread;
		r->pair[1].ratio[i] = gain;
		r->pair[1].rate_ratio[i] = gain;
	}
}

/* The interleaved heavy verdict decides against the spread its self-comparisons measured, not a
 * fixed 10%: a 5% gain over a 2% spread holds, a 15% gain within a 20% spread does not, and
 * without the self-comparisons it is not judged. */
static void heavy_against_spread(void **state)
{
	(void)state;
	struct vqs_ksim_seed2017_result r;
	heavy_made(&r, 3, 1.05, 0.02);
	vqs_ksim_seed2017_judge(&r);
	assert_true(r.pair[1].spread > 0.019 && r.pair[1].spread < 0.021);
	assert_true(r.heavy_load_gain);
	heavy_made(&r, 3, 1.15, 0.20);
	vqs_ksim_seed2017_judge(&r);
	assert_false(r.heavy_load_gain);
	heavy_made(&r, 3, 1.15, 0.02);
	r.pair[1].runs = 1; /* fewer than the 2 of 3 repeats a verdict needs */
	vqs_ksim_seed2017_judge(&r);
	assert_false(r.heavy_load_gain);
	/* interleaved, the worlds' rounds per CPU-second decide, not the sides' median slices */
	heavy_made(&r, 3, 1.0, 0.02);
	for (unsigned i = 0; i < 3; i++)
		r.pair[1].ratio[i] = 1.08;
	vqs_ksim_seed2017_judge(&r);
	assert_true(r.heavy_ratio > 1.079 && r.heavy_ratio < 1.081);
	assert_true(r.heavy_load_gain);
	heavy_made(&r, 3, 1.15, 0.02);
	for (unsigned i = 0; i < 3; i++)
		r.pair[1].ratio[i] = 1.0;
	vqs_ksim_seed2017_judge(&r);
	assert_false(r.heavy_load_gain);
}

/* A pair world in which the model got less than VQS_KSIM_SEED2017_CPUS is not judged, as separate
 * cells are not: with spinning waits the CPU a batch saves goes to spinning when the model's
 * threads take turns on the CPUs (a --bare-metal run at load average 3.4 got 0.9-1.2 CPUs in its
 * three heavy worlds and read 0.95-1.07x where the runs beside it read 1.10-1.96x). */
static void heavy_judged_with_its_cpus(void **state)
{
	(void)state;
	struct vqs_ksim_seed2017_result r;
	heavy_made(&r, 3, 1.2, 0.02);
	r.cell[2][B64].run_cpus[0] = 1.0;
	r.cell[2][B1].run_cpus[2] = 1.2;
	vqs_ksim_seed2017_judge(&r);
	assert_int_equal(r.heavy_judged, 1);
	assert_false(r.heavy_load_gain);
	/* the ratio is the judged repeats' */
	heavy_made(&r, 3, 1.2, 0.02);
	r.cell[2][B64].run_cpus[1] = 1.0;
	r.pair[1].ratio[0] = 1.3;
	r.pair[1].ratio[1] = 0.9;
	vqs_ksim_seed2017_judge(&r);
	assert_int_equal(r.heavy_judged, 2);
	assert_true(r.heavy_ratio > 1.249 && r.heavy_ratio < 1.251);
	assert_true(r.heavy_load_gain);
}

/*
 * The light row's loss is the stall after a 4.13 leak (a retransmission timeout): interleaved
 * with fixed b1 in one world per repeat and judged by goodput over the world, 4.13 b64 must
 * lose more than the margin in 2 of 3 repeats and the verdict must hold, with the scenario's
 * costs (the preset's light row: 4000 ms worlds). Before, the two cells ran in worlds seconds
 * apart and their rates followed the CPUs other programs left each (with --bare-metal costs 2
 * runs of 10 read 0.94x and 0.93x where the fixed b1 cell was starved).
 */
static void light_loss(void **state)
{
	(void)state;
	struct vqs_ksim_seed2017_opts o;
	opts_made(&o, false);
	o.streams[1] = o.streams[2] = 0; /* the light-load row alone */
	o.repeats = REPEATS;
	struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
	assert_int_equal(vqs_ksim_seed2017_run(&o, &r), 0);
	vqs_ksim_seed2017_print(stdout, &o, &r);
	assert_true(r.interleaved);
	assert_int_equal(r.cell[0][B64].err, 0);
	assert_int_equal(r.cell[0][B1].err, 0);
	assert_int_equal(r.cell[0][B1].drops_batch, 0); /* leaks stay with 4.13 */
	assert_true(r.cell[0][B64].timeouts > 0);
	assert_int_equal(r.pair[0].runs, REPEATS);
	unsigned lost = 0;
	for (unsigned i = 0; i < REPEATS; i++)
		lost += r.pair[0].ratio[i] < 1 - VQS_KSIM_VERDICT_MARGIN;
	assert_true(lost >= 2);
	assert_true(r.light_load_loss);
	/* The table's cells (and the figures `compare` pairs, the guard's) are the sides as the
	 * verdict judges them: repeat by repeat their ratio is the judged one. Before, the cells
	 * were the sides' median slices, which leave the stalls out: the guard saw 4.13 b64 at
	 * 1.18x fixed b1 where the verdict read 0.76x, and flagged nothing. */
	for (unsigned i = 0; i < REPEATS; i++) {
		double x = r.cell[0][B64].run_rate[i] / r.cell[0][B1].run_rate[i];
		assert_true(fabs(x - r.pair[0].ratio[i]) <= 1e-9 * r.pair[0].ratio[i]);
	}
}

/* A light row of 3 repeats whose separate cells read `cells` (4.13 b64 over fixed b1, with
 * leaks and retransmits in 4.13 b64) and whose interleaved worlds read `pair`, against
 * fixed-b1 self-comparisons of 1 + spread. */
static void light_made(struct vqs_ksim_seed2017_result *r, double cells, double pair,
		       double spread)
{
	result_made(r, false);
	cells_made(r, 0, 3, cells);
	r->cell[0][B64].drops_batch = 2;
	r->cell[0][B64].retransmits = 3;
	r->pair[0].runs = 3;
	for (unsigned i = 0; i < 3; i++) {
		r->pair[0].ratio[i] = pair;
		r->pair[0].rate_ratio[i] = 1.0; /* the rounds' median leaves the stalls out */
		r->pair[0].self_ratio[0][i] = 1 + spread;
		r->pair[0].self_ratio[1][i] = 0.5; /* not measured at light load: not read */
	}
}

/* Interleaved, the light verdict reads the worlds' goodput, not the separate cells nor the
 * rounds' median, and needs the loss beyond 10% and beyond the fixed-b1 self-comparisons'
 * spread, in enough repeats. */
static void light_judged_by_worlds(void **state)
{
	(void)state;
	struct vqs_ksim_seed2017_result r;
	light_made(&r, 1.0, 0.7, 0.02); /* cells of a starved fixed b1 hide the loss */
	vqs_ksim_seed2017_judge(&r);
	assert_true(r.light_ratio > 0.699 && r.light_ratio < 0.701);
	assert_true(r.pair[0].spread > 0.019 && r.pair[0].spread < 0.021);
	assert_true(r.light_load_loss);
	light_made(&r, 0.5, 1.0, 0.02); /* cells of a starved 4.13 b64 make one up */
	vqs_ksim_seed2017_judge(&r);
	assert_false(r.light_load_loss);
	light_made(&r, 0.5, 0.92, 0.0); /* within the margin */
	vqs_ksim_seed2017_judge(&r);
	assert_false(r.light_load_loss);
	light_made(&r, 0.5, 0.8, 0.25); /* within the spread */
	vqs_ksim_seed2017_judge(&r);
	assert_false(r.light_load_loss);
	light_made(&r, 0.5, 0.7, 0.02);
	r.pair[0].runs = 1; /* fewer than the 2 of 3 repeats a verdict needs */
	vqs_ksim_seed2017_judge(&r);
	assert_false(r.light_load_loss);
	light_made(&r, 1.0, 0.7, 0.02);
	r.cell[0][B64].drops_batch = r.cell[0][B64].retransmits = 0; /* a loss without a leak */
	vqs_ksim_seed2017_judge(&r);
	assert_false(r.light_load_loss);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(heavy_against_spread),
					   cmocka_unit_test(heavy_judged_with_its_cpus),
					   cmocka_unit_test(light_judged_by_worlds),
					   cmocka_unit_test(light_loss),
					   cmocka_unit_test(heavy_interleaved),
					   cmocka_unit_test(heavy_default_costs)};
	return vqs_test_status(cmocka_run_group_tests(tests, NULL, NULL));
}
