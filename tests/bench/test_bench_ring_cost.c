/* SPDX-License-Identifier: MIT */
/*
 * vqs-ring-cost, the program whose callgrind counts docs/bench.md quotes: every shape and option
 * serves every request it added (its exit status checks that), with the scheduler as the device
 * side too, and reports the batch size it was asked for; a malformed command line is refused with
 * status 2.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "run.h"

/* Run it; its one line of output into line. */
static int ring_cost(char *line, size_t len, const char *const *args)
{
	const char *out = bench_path("ring_cost.txt");
	int rc = bench_run_bin(VQS_RING_COST_BIN, out, args);
	line[0] = '\0';
	FILE *f = fopen(out, "r");
	if (f) {
		if (!fgets(line, (int)len, f))
			line[0] = '\0';
		fclose(f);
	}
	return rc;
}

static void test_every_shape_serves_its_batches(void **state)
{
	(void)state;
	static const char *const layouts[] = {"split", "packed"}, *const descs[] = {"1", "2"};
	/* the options docs/bench.md counts with, alone and with a batch size; the scheduler's
	 * rounds are 64 chains whatever its batch size */
	static const char *const opts[][3] = {
		{NULL}, {"b1", NULL}, {"b16", "byid", NULL}, {"single", NULL}, {"inorder", "b1", NULL},
		{"regions2", NULL}, {"byid", "single", "b7"}, {"sched", "b1", NULL},
		{"sched", "inorder", "b3"}, {"sched", NULL}};
	for (size_t l = 0; l < 2; l++)
		for (size_t d = 0; d < 2; d++)
			for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++) {
				const char *args[8] = {layouts[l], descs[d], "50"};
				unsigned n = 3, batch = 64, round = 0;
				for (unsigned k = 0; k < 3 && opts[o][k]; k++) {
					args[n++] = opts[o][k];
					if (opts[o][k][0] == 'b' && opts[o][k][1] != 'y')
						sscanf(opts[o][k] + 1, "%u", &batch);
					if (!strcmp(opts[o][k], "sched"))
						round = 64;
				}
				char line[160], want[160];
				assert_int_equal(ring_cost(line, sizeof(line), args), 0);
				snprintf(want, sizeof(want),
					 "%u requests in batches of %u, %s descriptor(s) each\n",
					 50 * (round ? round : batch), batch, descs[d]);
				assert_string_equal(line, want);
			}
}

static void test_bad_command_lines_are_refused(void **state)
{
	(void)state;
	static const char *const bad[][6] = {
		{"split", "2", "10", "b0"},	 {"split", "2", "10", "b65"},
		{"split", "2", "10", "b1", "b2"}, {"split", "2", "10", "b1x"},
		{"packed", "3", "10"},		 {"ring", "1", "10"},
		{"split", "1", "10", "byid", "byid"}, {"split", "1"},
		{"split", "1", "10", "sched", "sched"}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[160];
		assert_int_equal(ring_cost(line, sizeof(line), bad[i]), 2);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_shape_serves_its_batches),
		cmocka_unit_test(test_bad_command_lines_are_refused),
	};
	return cmocka_run_group_tests(tests, NULL, bench_cleanup);
}
