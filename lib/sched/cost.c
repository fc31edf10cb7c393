/* SPDX-License-Identifier: MIT */
/*
 * The cost model's one measured input: what a request pays when it finds its worker asleep, on
 * the machine the scheduler runs on, measured once at creation instead of a constant tuned to
 * one VM (the adaptive policy's thresholds are multiples of it, policy.c).
 *
 * The creating thread and a helper thread ping-pong through two eventfds, each side blocking in
 * read() until the other writes: the round trip of a sleep/wake through an eventfd, as a kick
 * to a sleeping worker plus a call to a halted guest. The median of a few round trips (a single
 * preemption of a shared machine moves a mean, not a median), within a time bound, clamped to
 * a sane range: on a 2-vCPU VM about 50 us, on bare metal a few microseconds.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sched/internal.h"

#define COST_SAMPLES 15
#define COST_TIME_MAX_NS 5000000ull /* stop early past this: creation must stay quick */
#define COST_STOP 2                 /* an eventfd value the helper reads as "stop" */

struct pingpong {
	int ping, pong;
};

static void *pong_main(void *arg)
{
	struct pingpong *p = arg;
	uint64_t v, one = 1;
	while (read(p->ping, &v, sizeof(v)) == sizeof(v) && v < COST_STOP)
		if (write(p->pong, &one, sizeof(one)) != sizeof(one))
			break;
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t sched_measure_wake_ns(void)
{
	uint64_t sample[COST_SAMPLES], one = 1, stop = COST_STOP, v;
	unsigned n = 0;
	struct pingpong p = {eventfd(0, EFD_CLOEXEC), eventfd(0, EFD_CLOEXEC)};
	pthread_t th;
	if (p.ping < 0 || p.pong < 0 || pthread_create(&th, NULL, pong_main, &p))
		goto out;
	uint64_t start = vqs_now_ns();
	while (n < COST_SAMPLES && vqs_now_ns() - start < COST_TIME_MAX_NS) {
		uint64_t t0 = vqs_now_ns();
		if (write(p.ping, &one, sizeof(one)) != sizeof(one) ||
		    read(p.pong, &v, sizeof(v)) != sizeof(v))
			break;
		sample[n++] = vqs_now_ns() - t0;
	}
	/* the helper is blocked in read() or about to be: this ends it either way */
	if (write(p.ping, &stop, sizeof(stop)) == sizeof(stop))
		pthread_join(th, NULL);
	else
		pthread_detach(th);
out:
	if (p.ping >= 0)
		close(p.ping);
	if (p.pong >= 0)
		close(p.pong);
	if (!n)
		return SCHED_WAKE_DEFAULT_NS;
	qsort(sample, n, sizeof(sample[0]), cmp_u64);
	uint64_t w = sample[n / 2];
	return w < SCHED_WAKE_MIN_NS ? SCHED_WAKE_MIN_NS : w > SCHED_WAKE_MAX_NS ? SCHED_WAKE_MAX_NS : w;
}
