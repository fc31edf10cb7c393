/* SPDX-License-Identifier: MIT */
/*
 * What this process holds, read from /proc/self, for the tests that check that nothing is left
 * behind (threads, fds, guest-memory mappings).
 */
#ifndef VQS_TEST_PROC_COUNT_H
#define VQS_TEST_PROC_COUNT_H

#include <stdbool.h>

/* Open fds (not counting the one the count itself opens). */
unsigned vqs_test_count_fds(void);
/* Threads, once the count has settled: a thread pthread_join has returned for can still be
 * listed for a moment (its tid is cleared before the kernel has reaped it). */
unsigned vqs_test_count_threads(void);
/* Lines of /proc/self/maps; memfd_only: memfd mappings only (guest memory, inflight regions),
 * since allocators, sanitizers and thread stacks map other memory on their own schedule. */
unsigned vqs_test_count_maps(bool memfd_only);

#endif
