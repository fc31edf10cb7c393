/* SPDX-License-Identifier: MIT */
/*
 * Allocations for state that one thread writes on the hot path. malloc packs small objects
 * side by side, so the driver's ring state could share a cache line with the device's, or one
 * worker's with another's: every write then steals the line from the other CPU (false sharing),
 * which costs a cross-CPU round trip per access in the middle of the data path. These objects
 * start on a line of their own and are padded to whole lines. Free them with free().
 */
#ifndef VQS_UTIL_ALLOC_H
#define VQS_UTIL_ALLOC_H

#include <stddef.h>

#define VQS_CACHE_LINE 64

/* n zeroed elements of size bytes on whole cache lines of their own; NULL when out of memory or
 * when n * size overflows. Threads: any. */
void *vqs_alloc_lines(size_t n, size_t size);

#endif
