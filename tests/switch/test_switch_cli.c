/* SPDX-License-Identifier: MIT */
/*
 * vqs-switch's command line: the scheduler batch (--batch) and turn budget (--budget) default
 * to the library's and are accepted within the scheduler's limits only; the default policy is
 * adaptive, with the library's price of latency unless --spin-pct sets it (0 to 10000, the
 * library's bounds); each port stages four turns' worth of frames, a power of two within bounds.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "cli.h"

/* vqs-switch --socket /tmp/p0 [opt val] */
static int parse_opt(struct sw_cli *c, const char *opt, const char *val)
{
	char *argv[] = { "vqs-switch", "--socket", "/tmp/p0", (char *)opt, (char *)val, NULL };
	return sw_cli_parse(c, opt ? 5 : 3, argv);
}

static int parse(struct sw_cli *c, const char *batch)
{
	return parse_opt(c, batch ? "--batch" : NULL, batch);
}

static void defaults_adaptive_and_library_batch(void **st)
{
	struct sw_cli c;
	assert_int_equal(parse(&c, NULL), 0);
	struct vqs_sched_opts lib;
	vqs_sched_opts_init(&lib);
	assert_int_equal(c.sched.batch_max, lib.batch_max);
	assert_int_equal(c.sched.budget_pkts, lib.budget_pkts);
	assert_int_equal(c.sched.policy, VQS_POLICY_ADAPTIVE);
}

static void spin_pct_option_within_library_bounds(void **st)
{
	struct sw_cli c;
	struct vqs_sched_opts lib;
	vqs_sched_opts_init(&lib);
	assert_int_equal(parse(&c, NULL), 0);
	assert_int_equal(c.sched.spin_pct, lib.spin_pct);
	assert_int_equal(parse_opt(&c, "--spin-pct", "0"), 0);
	assert_int_equal(c.sched.spin_pct, 0);
	assert_int_equal(parse_opt(&c, "--spin-pct", "10000"), 0);
	assert_int_equal(c.sched.spin_pct, 10000);
	assert_int_equal(parse_opt(&c, "--spin-pct", "10001"), -EINVAL);
	assert_int_equal(parse_opt(&c, "--spin-pct", "-1"), -EINVAL);
	assert_int_equal(parse_opt(&c, "--spin-pct", "x"), -EINVAL);
}

static void budget_option_positive_and_bounded(void **st)
{
	struct sw_cli c;
	assert_int_equal(parse_opt(&c, "--budget", "32"), 0);
	assert_int_equal(c.sched.budget_pkts, 32);
	assert_int_equal(parse_opt(&c, "--budget", "65536"), 0);
	assert_int_equal(c.sched.budget_pkts, 65536);
	assert_int_equal(parse_opt(&c, "--budget", "0"), -EINVAL);
	assert_int_equal(parse_opt(&c, "--budget", "65537"), -EINVAL);
	assert_int_equal(parse_opt(&c, "--budget", "-1"), -EINVAL);
}

static unsigned stage_for(const char *budget)
{
	struct sw_cli c;
	assert_int_equal(parse_opt(&c, budget ? "--budget" : NULL, budget), 0);
	return c.sw.stage_slots;
}

static void staging_holds_four_turns(void **st)
{
	struct sw_opts o;
	sw_opts_init(&o);
	assert_int_equal(stage_for(NULL), 1024); /* the library's budget of 256 */
	assert_int_equal(o.stage_slots, 1024);
	assert_int_equal(stage_for("300"), 2048);
	assert_int_equal(stage_for("512"), 2048);
	assert_int_equal(stage_for("1"), SW_STAGE_MIN);
	assert_int_equal(stage_for("65536"), SW_STAGE_MAX);
}

/* A staging size that is no power of two or out of bounds is refused before any port exists. */
static void create_refuses_bad_staging(void **st)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.nworkers = 1;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	const char *paths[] = {"/nonexistent/p0"};
	const unsigned bad[] = {0, 1000, SW_STAGE_MIN / 2, SW_STAGE_MAX * 2};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sw_opts o;
		sw_opts_init(&o);
		o.nports = 1;
		o.paths = paths;
		o.sched = s;
		o.stage_slots = bad[i];
		struct sw_switch *sw = NULL;
		assert_int_equal(sw_create(&sw, &o), -EINVAL);
		assert_null(sw);
	}
	vqs_sched_destroy(s);
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
		cmocka_unit_test(budget_option_positive_and_bounded),
		cmocka_unit_test(spin_pct_option_within_library_bounds),
		cmocka_unit_test(staging_holds_four_turns),
		cmocka_unit_test(create_refuses_bad_staging),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
