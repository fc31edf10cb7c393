/* SPDX-License-Identifier: MIT */
/* Threads, CPUs and clocks for the benchmark. */
#ifndef VQS_BENCH_CPU_H
#define VQS_BENCH_CPU_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench.h"

/* CPUs this process may run on, in ascending order. */
void cpu_allowed(struct cpu_list *l);
/* Restrict the calling thread to one CPU / to a list. 0 or -errno. */
int cpu_pin_self(int cpu);
int cpu_pin_self_list(const struct cpu_list *l);
/* CPU time consumed so far by a thread of this process (Linux thread id / pthread). */
uint64_t cpu_tid_ns(pid_t tid);
uint64_t cpu_pthread_ns(pthread_t t);
/* Time a thread of this process has spent runnable but not running, waiting for a CPU, so far
 * (the kernel's schedstat run delay): the time other threads or processes preempted it. 0 where
 * the kernel keeps no schedstat. */
uint64_t cpu_tid_runq_ns(pid_t tid);
/* Run fa(arg) on cpu_a (this thread) and fb(arg) on cpu_b (a new thread) at once; this thread
 * gets its CPU mask back afterwards (later points place their threads from it). 0 or -errno. */
int cpu_run_pair(int cpu_a, void (*fa)(void *), int cpu_b, void (*fb)(void *), void *arg);
/* Burn ns nanoseconds of CPU on the calling thread (handler cost, guest-exit cost). */
void cpu_spin_ns(uint64_t ns);

/* Wait until the loads and stores before it have completed, and start nothing after it until
 * then: what cpu_busy_iters puts on both sides of its loop. */
static inline void cpu_serialize(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_lfence();
#elif defined(__aarch64__)
	__asm__ __volatile__("dsb sy\n\tisb" ::: "memory");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

/*
 * Burn n turns of a loop the compiler must keep: finer than cpu_spin_ns, whose clock reads
 * alone cost tens of ns, and without its clock; its time per turn is the caller's to measure.
 * Fenced on both sides (n > 0), so that the turns add to the caller's path as work on the
 * data would: an unfenced loop of a few dozen instructions executes out of order in the shadow
 * of the cache misses around it (lines the other CPU wrote), and was hidden there or not
 * depending on how slow the machine's cache-line transfers were at the time: at a fixed amount
 * meant to slow a stream by 10%, 60 ms windows measured -11% to +41%. A fence waits for every
 * miss before it, so a caller fences once per batch, not per request: per request, the fences
 * alone slowed a stream by up to 80% at a few turns (docs/bench.md, "A calibrated regression").
 */
static inline void cpu_busy_iters(uint32_t n)
{
	if (!n)
		return;
	cpu_serialize();
	for (uint32_t i = 0; i < n; i++)
		__asm__ __volatile__("" : "+r"(i));
	cpu_serialize();
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

#endif
