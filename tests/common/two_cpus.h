/* SPDX-License-Identifier: MIT */
/* The first two CPUs this process may run on, for tests that pin a pair of threads apart. */
#ifndef VQS_TEST_TWO_CPUS_H
#define VQS_TEST_TWO_CPUS_H

#include <stdbool.h>

/* *a and *b get the two lowest allowed CPUs; false when fewer than two are allowed. */
bool vqs_test_two_cpus(int *a, int *b);

#endif
