/* SPDX-License-Identifier: MIT */
#include "cpu.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

void cpu_allowed(struct cpu_list *l)
{
	cpu_set_t set;
	l->n = 0;
	if (sched_getaffinity(0, sizeof(set), &set))
		return;
	for (int c = 0; c < CPU_SETSIZE && l->n < BENCH_MAX_CPUS; c++)
		if (CPU_ISSET(c, &set))
			l->cpu[l->n++] = c;
}

int cpu_pin_self_list(const struct cpu_list *l)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	for (unsigned i = 0; i < l->n; i++)
		CPU_SET(l->cpu[i], &set);
	int rc = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	return -rc;
}

int cpu_pin_self(int cpu)
{
	struct cpu_list l = {.n = 1, .cpu = {cpu}};
	return cpu_pin_self_list(&l);
}

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	if (clock_gettime(c, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The per-thread CPU clock id of another thread, as the kernel encodes it (what glibc's
 * pthread_getcpuclockid builds): ~tid << 3 | CPUCLOCK_PERTHREAD_MASK | CPUCLOCK_SCHED. It lets us
 * read the scheduler's worker threads, of which we only know the Linux thread ids.
 */
uint64_t cpu_tid_ns(pid_t tid)
{
	clockid_t c = (clockid_t)(((unsigned)~tid << 3) | 6u);
	return clock_ns(c);
}

uint64_t cpu_tid_runq_ns(pid_t tid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", (int)tid);
	FILE *f = fopen(path, "r");
	unsigned long long run = 0, wait = 0;
	if (!f)
		return 0;
	if (fscanf(f, "%llu %llu", &run, &wait) != 2)
		wait = 0;
	fclose(f);
	return wait;
}

uint64_t cpu_pthread_ns(pthread_t t)
{
	clockid_t c;
	if (pthread_getcpuclockid(t, &c))
		return 0;
	return clock_ns(c);
}

void cpu_spin_ns(uint64_t ns)
{
	if (!ns)
		return;
	uint64_t end = vqs_now_ns() + ns;
	while (vqs_now_ns() < end)
		cpu_relax();
}

struct pair_arg {
	int cpu;
	void (*fn)(void *);
	void *arg;
};

static void *pair_thread(void *p)
{
	struct pair_arg *a = p;
	cpu_pin_self(a->cpu);
	a->fn(a->arg);
	return NULL;
}

int cpu_run_pair(int cpu_a, void (*fa)(void *), int cpu_b, void (*fb)(void *), void *arg)
{
	struct pair_arg b = {.cpu = cpu_b, .fn = fb, .arg = arg};
	struct cpu_list mine;
	pthread_t t;
	cpu_allowed(&mine);
	if (pthread_create(&t, NULL, pair_thread, &b))
		return -EAGAIN;
	cpu_pin_self(cpu_a);
	fa(arg);
	pthread_join(t, NULL);
	cpu_pin_self_list(&mine);
	return 0;
}
