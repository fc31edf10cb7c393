/* SPDX-License-Identifier: MIT */
/*
 * Happens-before edges ThreadSanitizer cannot see on its own. liburcu is not built with TSan, so
 * the ordering its grace periods, call_rcu queue and barriers provide is invisible to it; these
 * annotations restate that ordering. They compile to nothing in other builds.
 */
#ifndef VQS_UTIL_TSAN_H
#define VQS_UTIL_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define VQS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VQS_TSAN 1
#endif
#endif

#ifdef VQS_TSAN
#include <sanitizer/tsan_interface.h>
static inline void vqs_tsan_release(void *addr) { __tsan_release(addr); }
static inline void vqs_tsan_acquire(void *addr) { __tsan_acquire(addr); }
#else
static inline void vqs_tsan_release(void *addr) { (void)addr; }
static inline void vqs_tsan_acquire(void *addr) { (void)addr; }
#endif

#endif
