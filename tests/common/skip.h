/* SPDX-License-Identifier: MIT */
/*
 * Skips that show: cmocka's skip() leaves the program's status at 0, so ctest (and the summary of
 * scripts/test.sh) would count a test that could not run here as passed. A case calls
 * vqs_test_skip() instead, and main returns vqs_test_status(cmocka_run_group_tests(...)): 77,
 * ctest's SKIP_RETURN_CODE for every vqs_test, when a case was skipped and none failed. The
 * program then counts as skipped as a whole, the cases that did run included (cmocka's output
 * lists which were which).
 */
#ifndef VQS_TEST_SKIP_H
#define VQS_TEST_SKIP_H

#include <stdbool.h>

#define VQS_TEST_SKIPPED 77

extern bool vqs_test_skipped;

#define vqs_test_skip()                  \
	do {                             \
		vqs_test_skipped = true; \
		skip();                  \
	} while (0)

static inline int vqs_test_status(int failed)
{
	return failed ? failed : vqs_test_skipped ? VQS_TEST_SKIPPED : 0;
}

#endif
