/* SPDX-License-Identifier: MIT */
/*
 * When the sizing of an injected slowdown may stop (bench/inject.c). A sizing window is timed
 * on a shared machine: a stall on one side can make a window read the target with an amount far
 * from it (issue 17: 33 ns sized for rr, whose other trials sized 276-325 ns, and missed the
 * 10% it was meant to inject). One window within the target is therefore not enough.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "inject.h"

/* The spoiled window: the first one reads 10.5% by chance; a sizing that accepted it would stop
 * there with an amount that really makes about 1%. */
static void test_one_window_on_target_is_not_enough(void **state)
{
	(void)state;
	unsigned agreed = 0;
	assert_false(inject_sizing_done(10, 10.5, &agreed));
}

static void test_two_consecutive_windows_on_target_settle_it(void **state)
{
	(void)state;
	unsigned agreed = 0;
	assert_false(inject_sizing_done(10, 10.5, &agreed)); /* spoiled, unchanged amount */
	assert_false(inject_sizing_done(10, 1.2, &agreed));  /* the amount's true effect: rescaled */
	assert_false(inject_sizing_done(10, 9.1, &agreed));  /* the rescaled amount, first look */
	assert_true(inject_sizing_done(10, 10.8, &agreed));  /* and again: settled */
}

static void test_a_window_off_target_starts_the_count_again(void **state)
{
	(void)state;
	unsigned agreed = 0;
	assert_false(inject_sizing_done(10, 8.5, &agreed));
	assert_false(inject_sizing_done(10, 13.0, &agreed)); /* off by more than a fifth */
	assert_false(inject_sizing_done(10, 11.9, &agreed));
	assert_true(inject_sizing_done(10, 8.1, &agreed));
	/* the bound is a fifth of the target either way, inclusive */
	agreed = 0;
	assert_false(inject_sizing_done(20, 24.0, &agreed));
	assert_true(inject_sizing_done(20, 16.0, &agreed));
}

/* Room for the spoiled window, the rescale it leads to and two agreeing windows after it. */
static void test_enough_windows_for_a_spoiled_one(void **state)
{
	(void)state;
	assert_true(INJECT_SIZING_WINDOWS >= 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_window_on_target_is_not_enough),
		cmocka_unit_test(test_two_consecutive_windows_on_target_settle_it),
		cmocka_unit_test(test_a_window_off_target_starts_the_count_again),
		cmocka_unit_test(test_enough_windows_for_a_spoiled_one),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
