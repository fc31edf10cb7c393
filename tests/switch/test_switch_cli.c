/* SPDX-License-Identifier: MIT */
/*
 * vqs-switch's command line: the scheduler batch (--batch) defaults to the library's and is
 * accepted within the scheduler's limits only; the default policy is adaptive.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "cli.h"

static int parse(struct sw_cli *c, const char *batch)
{
	char *argv[] = { "vqs-switch", "--socket", "/tmp/p0", "--batch", (char *)batch, NULL };
	return sw_cli_parse(c, batch ? 5 : 3, argv);
}

static void defaults_adaptive_and_library_batch(void **st)
{
	struct sw_cli c;
	assert_int_equal(parse(&c, NULL), 0);
	struct vqs_sched_opts lib;
	vqs_sched_opts_init(&lib);
	assert_int_equal(c.sched.batch_max, lib.batch_max);
	assert_int_equal(c.sched.policy, VQS_POLICY_ADAPTIVE);
}

static void batch_option_within_scheduler_limits(void **st)
{
	struct sw_cli c;
	assert_int_equal(parse(&c, "1"), 0);
	assert_int_equal(c.sched.batch_max, 1);
	assert_int_equal(parse(&c, "256"), 0);
	assert_int_equal(c.sched.batch_max, 256);
	assert_int_equal(parse(&c, "0"), -EINVAL);
	assert_int_equal(parse(&c, "257"), -EINVAL);
	assert_int_equal(parse(&c, "x"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_adaptive_and_library_batch),
		cmocka_unit_test(batch_option_within_scheduler_limits),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
