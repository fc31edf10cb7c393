/* SPDX-License-Identifier: MIT */
/*
 * Things every vqsched header needs: the export macro, version checks, the logging hook.
 *
 * Conventions of the whole API:
 *  - functions return 0 (or a count) on success and -errno on failure; bool only for predicates;
 *  - option structs start with a `size` field set to sizeof(struct) by the caller, so that they can
 *    grow without breaking old callers (fields past `size` take their documented defaults);
 *  - each function says which threads may call it ("Threads:").
 */
#ifndef VQSCHED_COMMON_H
#define VQSCHED_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <vqsched/version.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VQS_API __attribute__((visibility("default")))

/* Version of the library actually loaded, as VQS_VERSION_NUM. Threads: any. */
VQS_API unsigned vqs_version(void);
VQS_API const char *vqs_version_string(void);

/*
 * 0 when the loaded library can serve a program built against headers of version
 * (major, minor): same major, and a minor at least as new (major 0: the same minor, since a
 * minor before 1.0 may break the API). -ENOTSUP otherwise.
 * Threads: any. Programs call VQS_CHECK_VERSION() once at start.
 */
VQS_API int vqs_version_check(unsigned major, unsigned minor);
#define VQS_CHECK_VERSION() vqs_version_check(VQS_VERSION_MAJOR, VQS_VERSION_MINOR)

enum vqs_log_level { VQS_LOG_ERR = 3, VQS_LOG_WARN = 4, VQS_LOG_INFO = 6, VQS_LOG_DEBUG = 7 };
typedef void (*vqs_log_fn)(enum vqs_log_level level, const char *msg, void *opaque);

/*
 * Route the library's messages (peer errors, broken queues, placement decisions). The default
 * prints WARN and worse to stderr; fn == NULL restores it. Messages above max_level are dropped
 * before formatting. Threads: any; takes effect for messages logged after it returns.
 */
VQS_API void vqs_set_log(vqs_log_fn fn, void *opaque, enum vqs_log_level max_level);

/* Monotonic clock in nanoseconds (CLOCK_MONOTONIC). Threads: any. */
VQS_API uint64_t vqs_now_ns(void);
/* CPU time consumed by the calling thread, in nanoseconds. Threads: any. */
VQS_API uint64_t vqs_thread_cpu_ns(void);

#ifdef __cplusplus
}
#endif
#endif
