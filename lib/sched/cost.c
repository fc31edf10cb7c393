/* SPDX-License-Identifier: MIT */
/*
 * The cost model's one measured input: what a request pays when it finds its worker asleep, on
 * the machine the scheduler runs on, measured once at creation instead of a constant tuned to
 * one VM (the adaptive policy's thresholds are multiples of it, policy.c), with the CPU a
 * sleep/wake costs the thread that sleeps; and what a timed sleep (a nap of the deferred re-poll)
 * costs: how late a 10 us one wakes, and its CPU. The workers learn both further (policy.c).
 *
 * Two helper threads, pinned to worker 0's CPU and to another CPU of the thread that creates the
 * scheduler (sched_cost_cpus), ping-pong through two eventfds, each blocking in read() until the
 * other writes: the round trip of a sleep/wake through an eventfd, as a kick to a sleeping
 * worker plus a call to a halted guest. Across CPUs the sleeping CPU idles and its vCPU halts:
 * 50 us on the development VM. Where the creating thread has only worker 0's CPU (an owner
 * pinned with its vCPU, and the worker inheriting or pinned to that CPU: the seed-2023 shape)
 * the two wake each other by context switches, 2-6 us there, and so do that worker and the guest
 * it serves. The first round trip (cold caches, a CPU waking from a deep idle state) is not
 * counted; of the others the lower quartile (a preemption on a shared machine only lengthens
 * round trips, and moves a mean or even a median of 15 when it is loaded), within a time bound,
 * clamped to a sane range. Of each round trip the ping side's wait on a run queue
 * (/proc/thread-self/schedstat) is taken out twice (the pong side's taken as equal): what is
 * left, halved, is a wake-up's path outside the run queue (the eventfd write, the wake-up of a
 * halted vCPU), which the workers add to the queue waits they see after their own wake-ups
 * (policy.c, learn_queued).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "sched/internal.h"
#include "util/log.h"

#define COST_SAMPLES 15
#define COST_TIME_MAX_NS 5000000ull /* stop early past this: creation must stay quick */
#define COST_STOP 2                 /* an eventfd value the pong side reads as "stop" */

#define COST_NAP_NS 10000u         /* the timed sleep measured: 10 us */

struct pingpong {
	int ping, pong;
	uint64_t sample[COST_SAMPLES];
	unsigned n;
	uint64_t cpu_ns; /* the ping thread's CPU over the n counted round trips */
	uint64_t path[COST_SAMPLES]; /* each round trip less twice its ping side's queue wait, / 2 */
	uint64_t over[COST_SAMPLES]; /* timed sleeps: how late each woke */
	unsigned nt;
	uint64_t timer_cpu_ns; /* the ping thread's CPU over the nt timed sleeps */
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

static void *ping_main(void *arg)
{
	struct pingpong *p = arg;
	uint64_t one = 1, stop = COST_STOP, v, start = vqs_now_ns();
	int qfd = sched_queued_open();
	for (unsigned i = 0; p->n < COST_SAMPLES && vqs_now_ns() - start < COST_TIME_MAX_NS; i++) {
		uint64_t q0 = sched_queued_ns(qfd);
		uint64_t t0 = vqs_now_ns(), c0 = sched_thread_cpu_ns();
		if (write(p->ping, &one, sizeof(one)) != sizeof(one) ||
		    read(p->pong, &v, sizeof(v)) != sizeof(v))
			break;
		uint64_t rt = vqs_now_ns() - t0, q1 = sched_queued_ns(qfd);
		if (i) { /* the first one warms up */
			/* the pong side's queue wait taken as the ping side's */
			uint64_t queued = q0 != SCHED_QUEUED_UNKNOWN && q1 != SCHED_QUEUED_UNKNOWN
						  ? 2u * (q1 - q0)
						  : 0;
			p->path[p->n] = rt > queued ? (rt - queued) / 2u : 0;
			p->sample[p->n++] = rt;
			p->cpu_ns += sched_thread_cpu_ns() - c0;
		}
	}
	if (qfd >= 0)
		close(qfd);
	/* ends the pong side, blocked in read() or about to be */
	if (write(p->ping, &stop, sizeof(stop)) != sizeof(stop))
		vqs_warn("sched: could not stop the wake-up measurement");
	/* A nap as a worker takes it (events.c): a timed epoll wait on a set nothing signals, with the
	 * worker's 1 ns timer slack. */
	int ep = epoll_create1(EPOLL_CLOEXEC);
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	struct epoll_event ev;
	start = vqs_now_ns();
	for (unsigned i = 0; ep >= 0 && p->nt < COST_SAMPLES && vqs_now_ns() - start < COST_TIME_MAX_NS;
	     i++) {
		uint64_t t0 = vqs_now_ns(), c0 = sched_thread_cpu_ns();
		if (sched_epoll_wait_ns(ep, &ev, 1, COST_NAP_NS) < 0)
			break;
		uint64_t d = vqs_now_ns() - t0;
		if (i) {
			p->over[p->nt++] = d > COST_NAP_NS ? d - COST_NAP_NS : 0;
			p->timer_cpu_ns += sched_thread_cpu_ns() - c0;
		}
	}
	if (ep >= 0)
		close(ep);
	return NULL;
}

/* Start fn pinned to cpu (-1: anywhere). */
static int start_on(pthread_t *th, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	cpu_set_t one;
	pthread_attr_init(&attr);
	CPU_ZERO(&one);
	if (cpu >= 0) {
		CPU_SET(cpu, &one);
		pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	}
	int rc = pthread_create(th, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return rc;
}

int sched_queued_open(void)
{
	return open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

uint64_t sched_queued_ns(int fd)
{
	char buf[96];
	ssize_t n = fd >= 0 ? pread(fd, buf, sizeof(buf) - 1, 0) : -1;
	if (n <= 0)
		return SCHED_QUEUED_UNKNOWN;
	buf[n] = 0;
	/* "<ns on the CPU> <ns waiting on a run queue> <timeslices>" */
	char *end;
	strtoull(buf, &end, 10);
	if (end == buf)
		return SCHED_QUEUED_UNKNOWN;
	const char *second = end;
	unsigned long long v = strtoull(second, &end, 10);
	return end == second ? SCHED_QUEUED_UNKNOWN : (uint64_t)v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t clamp_wake(uint64_t v)
{
	return v < SCHED_WAKE_MIN_NS ? SCHED_WAKE_MIN_NS : v > SCHED_WAKE_MAX_NS ? SCHED_WAKE_MAX_NS : v;
}

void sched_measure_costs(struct vqs_sched *s)
{
	int cpu[2];
	sched_cost_cpus(s, cpu);
	struct pingpong p = {.ping = eventfd(0, EFD_CLOEXEC), .pong = eventfd(0, EFD_CLOEXEC)};
	pthread_t pong, ping;
	if (p.ping >= 0 && p.pong >= 0 && !start_on(&pong, cpu[1], pong_main, &p)) {
		if (!start_on(&ping, cpu[0], ping_main, &p))
			pthread_join(ping, NULL);
		else
			ping_main(&p); /* from here, unpinned, rather than not at all */
		pthread_join(pong, NULL);
	}
	if (p.ping >= 0)
		close(p.ping);
	if (p.pong >= 0)
		close(p.pong);
	/* the ping side's CPU per round trip (a write, and a read that sleeps and wakes) and per
	 * timed sleep; unmeasured, a fifth of the default round trip, as on the development VM */
	s->wake_cpu_ns = clamp_wake(p.n ? p.cpu_ns / p.n : SCHED_WAKE_DEFAULT_NS / 5);
	s->timer_cpu_ns = clamp_wake(p.nt ? p.timer_cpu_ns / p.nt : SCHED_WAKE_DEFAULT_NS / 5);
	qsort(p.sample, p.n, sizeof(p.sample[0]), cmp_u64);
	qsort(p.path, p.n, sizeof(p.path[0]), cmp_u64);
	/* the queue waits taken out, a preemption no longer moves it: the median */
	s->wake_path_ns = p.n ? p.path[p.n / 2] : SCHED_WAKE_DEFAULT_NS / 2;
	qsort(p.over, p.nt, sizeof(p.over[0]), cmp_u64);
	s->wake_ns = clamp_wake(p.n ? p.sample[p.n / 4] : SCHED_WAKE_DEFAULT_NS);
	/* unmeasured: one of the round trip's two wake-ups; capped as a learned overshoot is
	 * (policy.c): a nap measured while the CPU was busy woke 3.96 ms late at the lower quartile,
	 * and a worker seeded with that never napped, so never learned better */
	uint64_t over = p.nt ? p.over[p.nt / 4] : s->wake_ns / 2;
	s->timer_ns = over < SCHED_WAKE_MAX_NS ? over : SCHED_WAKE_MAX_NS;
}
