/* SPDX-License-Identifier: MIT */
#include "util/prefetch.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

bool vqs_cpu_has_prefetchw;

/* CPUID 0x80000001 ECX bit 8 (3DNowPrefetch): PREFETCH and PREFETCHW. Read once at load time,
 * before any queue can be served. */
__attribute__((constructor)) static void detect_prefetchw(void)
{
	unsigned a, b, c, d;
	vqs_cpu_has_prefetchw = __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8));
}
#endif
