/* SPDX-License-Identifier: MIT */
/*
 * vqs-timer-cost: what a short timed sleep costs on this machine, for the scheduler's deferred
 * re-poll (docs/sched.md, "Deferred re-poll"): clock_nanosleep, a blocking read of a timerfd, and
 * epoll_pwait2 with a timeout on an epoll set (the worker's sleep, which a kick also ends), with
 * the thread's timer slack at its default (50 us for a normal thread) and at 1 ns. Per method: the
 * overshoot (woken minus asked for) at p50/p90/p99, and the thread's CPU per sleep. The methods
 * run interleaved in blocks of 100 sleeps, so load on a shared machine hits them alike.
 *
 *   vqs-timer-cost [interval_ns (10000)] [samples per method and slack (10000)]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum { M_NANOSLEEP, M_TIMERFD, M_EPOLL, NMETHODS };
static const char *const names[NMETHODS] = {"clock_nanosleep", "timerfd", "epoll_pwait2"};
#define BLOCK 100u

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int tfd, epfd;

static void sleep_once(int m, uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	uint64_t v;
	switch (m) {
	case M_NANOSLEEP:
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
		break;
	case M_TIMERFD: {
		struct itimerspec its = {{0, 0}, ts};
		timerfd_settime(tfd, 0, &its, NULL);
		if (read(tfd, &v, sizeof(v)) < 0)
			perror("read timerfd");
		break;
	}
	case M_EPOLL: {
		struct epoll_event ev;
		epoll_pwait2(epfd, &ev, 1, &ts, NULL);
		break;
	}
	}
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	uint64_t ival = argc > 1 ? strtoull(argv[1], NULL, 0) : 10000;
	unsigned n = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 0) : 10000;
	n = (n + BLOCK - 1) / BLOCK * BLOCK;
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	epfd = epoll_create1(EPOLL_CLOEXEC);
	int efd = eventfd(0, EFD_CLOEXEC); /* never written: the set only times out */
	struct epoll_event ev = {.events = EPOLLIN};
	if (tfd < 0 || epfd < 0 || efd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, efd, &ev)) {
		perror("setup");
		return 1;
	}
	static const unsigned long slacks[2] = {0, 1}; /* 0: the default, restored */
	unsigned long slack0 = (unsigned long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	uint64_t *over[2][NMETHODS], cpu[2][NMETHODS] = {{0}};
	for (int s = 0; s < 2; s++)
		for (int m = 0; m < NMETHODS; m++)
			over[s][m] = calloc(n, sizeof(uint64_t));
	for (unsigned b = 0; b < n / BLOCK; b++)
		for (int s = 0; s < 2; s++) {
			prctl(PR_SET_TIMERSLACK, slacks[s] ? slacks[s] : slack0, 0, 0, 0);
			for (int m = 0; m < NMETHODS; m++) {
				uint64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
				for (unsigned i = 0; i < BLOCK; i++) {
					uint64_t t0 = clock_ns(CLOCK_MONOTONIC);
					sleep_once(m, ival);
					uint64_t d = clock_ns(CLOCK_MONOTONIC) - t0;
					over[s][m][b * BLOCK + i] = d > ival ? d - ival : 0;
				}
				cpu[s][m] += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
			}
		}
	printf("interval %llu ns, %u samples per line (interleaved in blocks of %u), default slack "
	       "%lu ns\n%-16s %-9s %10s %10s %10s %12s\n", (unsigned long long)ival, n, BLOCK,
	       slack0, "method", "slack", "over_p50", "over_p90", "over_p99", "cpu_ns/sleep");
	for (int s = 0; s < 2; s++)
		for (int m = 0; m < NMETHODS; m++) {
			uint64_t *o = over[s][m];
			qsort(o, n, sizeof(*o), cmp);
			printf("%-16s %-9s %10llu %10llu %10llu %12llu\n", names[m],
			       slacks[s] ? "1ns" : "default", (unsigned long long)o[n / 2],
			       (unsigned long long)o[n * 9 / 10], (unsigned long long)o[n * 99 / 100],
			       (unsigned long long)(cpu[s][m] / n));
		}
	return 0;
}
