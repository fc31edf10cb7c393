/* SPDX-License-Identifier: MIT */
/*
 * `vqs-bench compare` flags a deliberately injected slowdown and does not flag a second run of
 * the same build. Made immune to machine noise by its sizes: the slowdown adds 200 us of handler
 * time per request (batch 1, so completions flow one by one: at most 5000/s, against hundreds of
 * thousands to millions per second without it), while the threshold is 500% (6x) beyond the
 * measured spread, far above what two runs of one build differ by and far below what the
 * injection does. Figures are medians of 5 windows of 60 ms, so a window or two in which a worker
 * starved by other programs did nothing changes neither verdict.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include "run.h"

#define POINT                                                                               \
	"--preset", "sweep", "--workloads", "stream", "--policies", "poll", "--rates", "0",  \
		"--streams", "1", "--batch", "1", "--repeat", "5", "--duration-ms", "60",    \
		"--warmup-ms", "10", "--no-floors"

static int compare(const char *base, const char *cur)
{
	const char *args[] = {"compare", base, cur, "--threshold", "500", "--metrics",
			      "ops_per_s", NULL};
	return bench_run(NULL, args);
}

static int setup(void **state)
{
	const char *base[] = {POINT, "--json", bench_path("base.json"), NULL};
	const char *same[] = {POINT, "--json", bench_path("same.json"), NULL};
	const char *slow[] = {POINT, "--inject-slowdown-ns", "200000", "--json",
			      bench_path("slow.json"), NULL};
	if (bench_run(NULL, base) || bench_run(NULL, same) || bench_run(NULL, slow))
		return -1;
	return 0;
}

static void test_reports_are_clean(void **state)
{
	bench_check_report(bench_path("base.json"), 1);
	bench_check_report(bench_path("same.json"), 1);
	bench_check_report(bench_path("slow.json"), 1);
}

static void test_same_build_not_flagged(void **state)
{
	assert_int_equal(compare(bench_path("base.json"), bench_path("same.json")), 0);
	assert_int_equal(compare(bench_path("base.json"), bench_path("base.json")), 0);
}

static void test_injected_slowdown_flagged(void **state)
{
	assert_int_equal(compare(bench_path("base.json"), bench_path("slow.json")), 1);
}

/* Getting faster is reported, never a failure. */
static void test_speedup_not_flagged(void **state)
{
	assert_int_equal(compare(bench_path("slow.json"), bench_path("base.json")), 0);
}

static void test_unreadable_input_is_usage_error(void **state)
{
	const char *bad = bench_path("bad.json");
	FILE *f = fopen(bad, "w");
	assert_non_null(f);
	fputs("{\"runs\": [ {\"key\": \"x\", }", f);
	fclose(f);
	assert_int_equal(compare(bench_path("base.json"), bad), 2);
	assert_int_equal(compare(bench_path("base.json"), bench_path("missing.json")), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reports_are_clean),
		cmocka_unit_test(test_same_build_not_flagged),
		cmocka_unit_test(test_injected_slowdown_flagged),
		cmocka_unit_test(test_speedup_not_flagged),
		cmocka_unit_test(test_unreadable_input_is_usage_error),
	};
	return cmocka_run_group_tests(tests, setup, bench_cleanup);
}
