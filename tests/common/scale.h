/* SPDX-License-Identifier: MIT */
#ifndef VQS_TEST_SCALE_H
#define VQS_TEST_SCALE_H

#include <stdlib.h>

/*
 * Iteration counts of long stress tests, divided by VQS_TEST_SCALE from the environment (default
 * 1). scripts/test.sh lowers the counts in sanitizer builds, which run 5-15x slower; the plain
 * build always runs the full counts the issues ask for.
 */
static inline unsigned long vqs_test_scaled(unsigned long n)
{
	const char *s = getenv("VQS_TEST_SCALE");
	unsigned long div = s ? strtoul(s, NULL, 10) : 1;
	if (div < 1)
		div = 1;
	return n / div ? n / div : 1;
}

#endif
