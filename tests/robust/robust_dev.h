/* SPDX-License-Identifier: MIT */
/*
 * The device the robustness tests serve: each request's first 8 readable bytes (its tag) are
 * written back into its writable buffer. A crash plan makes the handler kill its own process at a
 * chosen point of the completion path. Plus the process counters the leak checks compare.
 */
#ifndef VQS_TEST_ROBUST_DEV_H
#define VQS_TEST_ROBUST_DEV_H

#include <stdatomic.h>
#include <vqsched/vqsched.h>

/* Where the handler raises SIGKILL once `after` requests were handled. */
enum robust_kill_at {
	KILL_NEVER,
	KILL_AFTER_POP,   /* batch popped (recorded in flight), nothing completed */
	KILL_AFTER_FILL,  /* half the batch completed (used entries staged), not flushed */
	KILL_AFTER_FLUSH, /* previous batches flushed; entering the next turn (calls the driver
			   * suppressed are still owed) */
};

struct robust_dev {
	struct vqs_vu_device_ops ops;
	enum robust_kill_at kill_at;
	uint64_t kill_after;
	_Atomic uint64_t handled;
};
void robust_dev_init(struct robust_dev *d, uint16_t num_queues);
/* Parse "pop", "fill", "flush"; KILL_NEVER otherwise. */
enum robust_kill_at robust_kill_parse(const char *s);

/* Scheduler (pool, 1 worker) and a server-mode backend of d on path. */
struct robust_backend {
	struct vqs_sched *sched;
	struct vqs_vu_backend *b;
};
int robust_backend_start(struct robust_backend *rb, struct robust_dev *d, const char *path,
			 uint32_t msg_timeout_ms);
void robust_backend_stop(struct robust_backend *rb);

/* A frontend on path: queue of 64, VERSION_1 + EVENT_IDX, 1 MiB. Not connected. */
int robust_frontend(struct vqs_vu_frontend **f, const char *path, uint16_t num_queues);

/* Requests in flight on one queue of a frontend, each tagged with a unique number. */
#define ROBUST_SLOTS 32
struct robust_traffic {
	struct vqs_vu_frontend *f;
	unsigned q;
	struct { uint64_t out, in, tag; bool busy; } slot[ROBUST_SLOTS];
	uint8_t *done;                       /* completions per tag */
	uint64_t submitted, completed, total;
	unsigned dups, wrong;
};
int robust_traffic_init(struct robust_traffic *t, struct vqs_vu_frontend *f, unsigned q,
			uint64_t total);
void robust_traffic_fini(struct robust_traffic *t);
/* Offer free slots (until total), kick. */
void robust_traffic_submit(struct robust_traffic *t);
/* Take completions, checking each; wait up to wait_ms for a call when none. */
void robust_traffic_reap(struct robust_traffic *t, int wait_ms);
/* Every tag completed exactly once with its own data. */
bool robust_traffic_exact(const struct robust_traffic *t);


#endif
