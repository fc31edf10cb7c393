/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench smoke runs: every workload and every preset, tiny durations, checked for zero loss
 * and a well-formed report. Never a speed: the figures of a shared 2-core machine are noise here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"
#include "run.h"

#define TINY "--quick", "--no-floors", "--duration-ms", "10", "--warmup-ms", "5"

static void workload(const char *wl, unsigned min_runs)
{
	char name[64];
	snprintf(name, sizeof(name), "wl-%s.json", wl);
	const char *json = bench_path(name);
	const char *args[] = {"--preset", "default", "--workloads", wl, "--streams", "1,3",
			      "--batch", "1,16", TINY, "--json", json, NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	bench_check_report(json, min_runs);
}

/* 4 policies x placements of the default groups x streams x batches (idle: no batches) */
static void test_workload_stream(void **state) { workload("stream", 16); }
static void test_workload_rr(void **state) { workload("rr", 16); }
static void test_workload_sweep(void **state) { workload("sweep", 16); }
static void test_workload_idle(void **state) { workload("idle", 8); }

static void preset(const char *name, unsigned min_runs)
{
	char file[64];
	snprintf(file, sizeof(file), "preset-%s.json", name);
	const char *json = bench_path(file);
	const char *args[] = {"--preset", name, TINY, "--json", json, NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	bench_check_report(json, min_runs);
}

static void test_preset_default(void **state) { preset("default", 70); }
static void test_preset_tradeoff(void **state) { preset("tradeoff", 48); }
static void test_preset_affinity(void **state) { preset("affinity", 6); }
static void test_preset_sweep(void **state) { preset("sweep", 20); }
static void test_preset_idle(void **state) { preset("idle", 4); }

/* The status of goal `name` in the report at json_path. */
static char *goal_status(const char *json_path, const char *name)
{
	struct json j;
	assert_int_equal(json_parse_file(json_path, &j), 0);
	const struct json *goals = json_get(&j, "goals");
	assert_non_null(goals);
	char *status = NULL;
	for (size_t i = 0; i < goals->n && !status; i++)
		if (!strcmp(json_str_or(&goals->items[i], "name", ""), name))
			status = strdup(json_str_or(&goals->items[i], "status", ""));
	json_free(&j);
	assert_non_null(status);
	return status;
}

/* adaptive-undominated allows 10% plus the spread of the repeats: one repeat measures no
 * spread, so the goal is not judged from it (before, a single preempted window's p99 decided
 * the point); two are judged. */
static void test_sweep_goal_needs_repeats(void **state)
{
	const char *json = bench_path("repeats.json");
	for (unsigned n = 1; n <= 2; n++) {
		char rep[4];
		snprintf(rep, sizeof(rep), "%u", n);
		const char *args[] = {"--preset", "sweep", "--workloads", "sweep", "--streams", "1",
				      "--rates", "20000", "--policies", "dedicated,adaptive",
				      "--no-floors", "--duration-ms", "10", "--warmup-ms", "5",
				      "--repeat", rep, "--json", json, NULL};
		assert_int_equal(bench_run(NULL, args), 0);
		char *st = goal_status(json, "adaptive-undominated");
		if (n == 1)
			assert_string_equal(st, "not_measured");
		else
			assert_string_not_equal(st, "not_measured");
		free(st);
	}
}

/* The sweep's three further adaptive goal lines say "not measured" where adaptive has no fixed
 * policy beside it, rather than passing on nothing, and adaptive-defer and adaptive-heavy are
 * judged from a run that has their points (the fixed policies beside adaptive at 100k and at
 * saturation, two repeats). */
static void test_sweep_adaptive_goal_lines(void **state)
{
	static const char *const names[] = {"adaptive-regimes", "adaptive-defer", "adaptive-heavy"};
	const char *json = bench_path("adaptive_goals.json");
	for (unsigned all = 0; all < 2; all++) {
		const char *args[] = {"--preset", "sweep", "--workloads", "sweep", "--streams", "1",
				      "--rates", "0,1000,100000", "--policies",
				      all ? "dedicated,pool,poll,adaptive" : "adaptive",
				      "--no-floors", "--duration-ms", "20", "--warmup-ms", "5",
				      "--repeat", "2", "--json", json, NULL};
		assert_int_equal(bench_run(NULL, args), 0);
		for (unsigned k = 0; k < 3; k++) {
			char *st = goal_status(json, names[k]);
			/* whether a point of a 20 ms window on a loaded machine spins or sleeps
			 * nearly all the time is the machine's: regimes may find none */
			if (all && k)
				assert_string_not_equal(st, "not_measured");
			else if (!all)
				assert_string_equal(st, "not_measured");
			free(st);
		}
	}
}

/* The policies of one point run back to back in every repeat, each repeat starting at another
 * policy: a slow spell of the machine then meets all of a point's policies, where before it met
 * one policy's whole block of points (a neighbour's build put every adaptive point of one repeat
 * of a sweep in the milliseconds while the other policies ran quiet). Each repeat says when it
 * ran, and adaptive's what its worker had learned. */
static void test_policies_of_a_point_run_side_by_side(void **state)
{
	const char *json = bench_path("order.json");
	const char *args[] = {"--preset", "sweep", "--workloads", "sweep", "--streams", "1,8",
			      "--rates", "1000,5000", "--policies", "dedicated,poll,adaptive",
			      "--no-floors", "--duration-ms", "10", "--warmup-ms", "5", "--repeat", "3",
			      "--json", json, NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	struct json j;
	assert_int_equal(json_parse_file(json, &j), 0);
	const struct json *runs = json_get(&j, "runs");
	assert_non_null(runs);
	assert_int_equal(runs->n, 12);
	/* seq[point][repeat][policy]; policies in the order asked */
	static const char *const pol[] = {"dedicated", "poll", "adaptive"};
	unsigned seq[4][3][3] = {{{0}}};
	for (size_t i = 0; i < runs->n; i++) {
		const struct json *r = &runs->items[i], *rs = json_get(r, "run_seq");
		unsigned pt = (json_num_or(r, "streams", 0) == 8) * 2 +
			      (json_num_or(r, "rate", 0) == 5000), p = 3;
		for (unsigned k = 0; k < 3; k++)
			if (!strcmp(json_str_or(r, "policy", ""), pol[k]))
				p = k;
		assert_true(p < 3);
		assert_non_null(rs);
		assert_int_equal(rs->n, 3);
		for (unsigned k = 0; k < 3; k++)
			seq[pt][k][p] = (unsigned)rs->items[k].num;
		/* adaptive's runs say what its worker had learned (the wake-up is measured when the
		 * scheduler starts); the fixed policies learn nothing */
		const struct json *w0 = json_get(r, "worker0");
		if (p != 2) {
			assert_null(w0);
			continue;
		}
		assert_non_null(w0);
		assert_int_equal(w0->n, 3);
		for (unsigned k = 0; k < 3; k++) {
			assert_true(json_num_or(&w0->items[k], "wake_ns", 0) > 0);
			assert_true(json_num_or(&w0->items[k], "naps_per_op", -1) >= 0);
		}
	}
	json_free(&j);
	for (unsigned pt = 0; pt < 4; pt++) {
		unsigned firsts = 0;
		for (unsigned k = 0; k < 3; k++) {
			unsigned lo = ~0u, hi = 0, first = 0;
			for (unsigned p = 0; p < 3; p++) {
				if (seq[pt][k][p] < lo)
					lo = seq[pt][k][p], first = p;
				if (seq[pt][k][p] > hi)
					hi = seq[pt][k][p];
			}
			assert_int_equal(hi - lo, 2); /* three runs in a row */
			firsts |= 1u << first;
		}
		assert_int_equal(firsts, 7); /* each policy first once */
	}
}

/* Floors, CSV and plots are written when asked; the other ring layout, a blocking driver and
 * every handler option keep zero loss. */
static void test_floors_csv_plots_and_options(void **state)
{
	const char *json = bench_path("opts.json"), *csv = bench_path("opts.csv"),
		   *plots = bench_path("plots");
	const char *args[] = {"--preset", "sweep", "--quick", "--duration-ms", "10", "--warmup-ms",
			      "5", "--rates", "20000,0", "--policies", "dedicated,adaptive",
			      "--layout", "packed", "--driver-wait", "block", "--touch", "copy",
			      "--payload", "256", "--handler-ns", "100", "--exit-ns", "500",
			      "--streams", "3", "--drivers", "2", "--json", json, "--csv", csv,
			      "--plot", plots, NULL};
	int rc = bench_run(NULL, args);
	bench_check_report(json, 4);
	assert_int_equal(rc, 0);
	assert_true(bench_file_nonempty(csv));
	assert_true(bench_file_nonempty(bench_path("plots/sweep_throughput.png")));
	assert_true(bench_file_nonempty(bench_path("plots/sweep_p99.png")));
	assert_true(bench_file_nonempty(bench_path("plots/sweep_cpu_per_op.png")));
}

static void test_rr_outstanding_and_workers(void **state)
{
	const char *json = bench_path("rrk.json");
	const char *args[] = {"--preset", "tradeoff", "--workloads", "rr", "--outstanding", "8",
			      "--workers", "2", "--streams", "4", "--batch", "4", "--ring", "64",
			      TINY, "--json", json, NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	bench_check_report(json, 4);
}

static void test_help_lists_presets_and_bad_flags_fail(void **state)
{
	const char *out = bench_path("help.txt");
	const char *help[] = {"--help", NULL};
	assert_int_equal(bench_run(out, help), 0);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	char text[16384];
	size_t n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	static const char *const names[] = {"default", "tradeoff", "affinity", "sweep", "idle",
					    "--inject-slowdown-pct", "--layout", "--repeat"};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strstr(text, names[i]))
			fail_msg("--help does not mention %s", names[i]);
	const char *bad1[] = {"--no-such-flag", NULL};
	const char *bad2[] = {"--preset", "nope", NULL};
	const char *bad3[] = {"--policies", "fifo", NULL};
	assert_int_equal(bench_run(NULL, bad1), 2);
	assert_int_equal(bench_run(NULL, bad2), 2);
	assert_int_equal(bench_run(NULL, bad3), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_workload_stream),
		cmocka_unit_test(test_workload_rr),
		cmocka_unit_test(test_workload_sweep),
		cmocka_unit_test(test_workload_idle),
		cmocka_unit_test(test_preset_default),
		cmocka_unit_test(test_preset_tradeoff),
		cmocka_unit_test(test_preset_affinity),
		cmocka_unit_test(test_preset_sweep),
		cmocka_unit_test(test_sweep_adaptive_goal_lines),
		cmocka_unit_test(test_preset_idle),
		cmocka_unit_test(test_sweep_goal_needs_repeats),
		cmocka_unit_test(test_policies_of_a_point_run_side_by_side),
		cmocka_unit_test(test_floors_csv_plots_and_options),
		cmocka_unit_test(test_rr_outstanding_and_workers),
		cmocka_unit_test(test_help_lists_presets_and_bad_flags_fail),
	};
	return cmocka_run_group_tests(tests, NULL, bench_cleanup);
}
