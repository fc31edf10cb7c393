/* SPDX-License-Identifier: MIT */
#include <time.h>
#include <vqsched/common.h>

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t vqs_now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

uint64_t vqs_thread_cpu_ns(void) { return clock_ns(CLOCK_THREAD_CPUTIME_ID); }
