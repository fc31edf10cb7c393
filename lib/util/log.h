/* SPDX-License-Identifier: MIT */
/* Library-internal logging through the hook set with vqs_set_log(). */
#ifndef VQS_UTIL_LOG_H
#define VQS_UTIL_LOG_H

#include <vqsched/common.h>

void vqs_log(enum vqs_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define vqs_err(...) vqs_log(VQS_LOG_ERR, __VA_ARGS__)
#define vqs_warn(...) vqs_log(VQS_LOG_WARN, __VA_ARGS__)
#define vqs_info(...) vqs_log(VQS_LOG_INFO, __VA_ARGS__)
#define vqs_debug(...) vqs_log(VQS_LOG_DEBUG, __VA_ARGS__)

#endif
