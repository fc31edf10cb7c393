/* SPDX-License-Identifier: MIT */
/*
 * Prefetch for writing. A buffer the other CPU wrote last sits modified in that CPU's cache; a read
 * prefetch brings it here shared, and the store that follows pays a second cross-CPU round trip
 * to take ownership. PREFETCHW asks for ownership at once. GCC emits it for
 * __builtin_prefetch(p, 1) only when built for a CPU that has it, so it is issued here after a
 * one-time CPUID check (a read prefetch elsewhere, and on other architectures the compiler's
 * write hint).
 */
#ifndef VQS_UTIL_PREFETCH_H
#define VQS_UTIL_PREFETCH_H

#include <stdbool.h>

#if defined(__x86_64__) || defined(__i386__)
extern bool vqs_cpu_has_prefetchw;

static inline void vqs_prefetch_write(const void *p)
{
	if (vqs_cpu_has_prefetchw)
		__asm__ volatile("prefetchw %0" : : "m"(*(const volatile char *)p));
	else
		__builtin_prefetch(p, 0);
}
#else
static inline void vqs_prefetch_write(const void *p)
{
	__builtin_prefetch(p, 1);
}
#endif

#endif
