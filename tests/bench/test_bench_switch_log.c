/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench-switch-log (docs/bench.md "Dirty logging in vqs-switch"): under every policy it runs a
 * vqs-switch, drives two of its ports through the library's frontend with logging switched off
 * and on, and reports each window and each policy. The program itself fails a window that
 * delivered nothing, one with logging on that marked no page of either port and one with logging
 * off that marked any; here its output must hold every window and summary. Never a speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "run.h"

static const char *const POLICIES[] = { "dedicated", "pool", "poll", "adaptive" };

static unsigned count_lines(const char *path, const char *a, const char *b)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[1024];
	unsigned n = 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, a) && (!b || strstr(line, b));
	fclose(f);
	return n;
}

static void test_switch_log_every_policy_off_and_on(void **state)
{
	const char *out = bench_path("switch-log.txt");
	const char *args[] = { "--switch", VQS_SWITCH_BIN, "--pairs", "2", "--window-ms", "30",
			       "--warmup-ms", "20", NULL };
	assert_int_equal(bench_run_bin(VQS_SWITCH_LOG_BIN, out, args), 0);
	for (unsigned i = 0; i < 4; i++) {
		char key[64];
		snprintf(key, sizeof(key), "policy=%s ", POLICIES[i]);
		/* Two pairs: off-on, then on-off; marks only with logging on. */
		assert_int_equal(count_lines(out, key, "log=off Mpps="), 2);
		assert_int_equal(count_lines(out, key, "log=on Mpps="), 2);
		assert_int_equal(count_lines(out, key, "log=off Mpps=") -
					 count_lines(out, key, "marked_pages=0,0"), 0);
		assert_int_equal(count_lines(out, key, "pairs=2 Mpps_off="), 1);
		assert_int_equal(count_lines(out, key, "ns_per_frame_on/off="), 1);
	}
}

static void test_switch_log_bad_policy_fails(void **state)
{
	const char *args[] = { "--switch", VQS_SWITCH_BIN, "--policies", "busy", NULL };
	assert_int_equal(bench_run_bin(VQS_SWITCH_LOG_BIN, NULL, args), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch_log_every_policy_off_and_on),
		cmocka_unit_test(test_switch_log_bad_policy_fails),
	};
	return cmocka_run_group_tests(tests, NULL, bench_cleanup);
}
