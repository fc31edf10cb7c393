/* SPDX-License-Identifier: MIT */
#include "util/log.h"

#include <stdatomic.h>
#include <stdio.h>

/* The hook is three words changed together; a reader may see a mix for one message while a
 * setter runs, which only misroutes that message, so a lock on every log call is not worth it. */
static _Atomic(vqs_log_fn) log_fn;
static _Atomic(void *) log_opaque;
static _Atomic int log_max = VQS_LOG_WARN;

void vqs_set_log(vqs_log_fn fn, void *opaque, enum vqs_log_level max_level)
{
	atomic_store(&log_opaque, opaque);
	atomic_store(&log_max, fn ? (int)max_level : (int)VQS_LOG_WARN);
	atomic_store(&log_fn, fn);
}

static const char *level_name(enum vqs_log_level l)
{
	switch (l) {
	case VQS_LOG_ERR: return "error";
	case VQS_LOG_WARN: return "warning";
	case VQS_LOG_INFO: return "info";
	default: return "debug";
	}
}

void vqs_log(enum vqs_log_level level, const char *fmt, ...)
{
	if ((int)level > atomic_load_explicit(&log_max, memory_order_relaxed))
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	vqs_log_fn fn = atomic_load(&log_fn);
	if (fn)
		fn(level, msg, atomic_load(&log_opaque));
	else
		fprintf(stderr, "vqsched %s: %s\n", level_name(level), msg);
}
