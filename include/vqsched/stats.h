/* SPDX-License-Identifier: MIT */
/*
 * Scheduler counters, per queue and per worker, as structs and as JSON.
 *
 * Counters only grow (per queue: for the queue's whole attachment, across moves and policy
 * changes; per worker: for the life of that worker thread, which a policy change replaces).
 * Each counter is written by one thread at a time and read with relaxed loads, so a snapshot is
 * consistent per counter, not across counters; polls and bytes are added when a turn's run of
 * batches ends (at most a turn's budget behind the requests counted).
 */
#ifndef VQSCHED_STATS_H
#define VQSCHED_STATS_H

#include <stddef.h>
#include <vqsched/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Batch-size histogram: bucket i counts handler calls with n chains, 2^i <= n < 2^(i+1). */
#define VQS_STATS_BATCH_BUCKETS 9
/* Latency histogram: bucket i counts requests that took t ns, 2^i <= t < 2^(i+1) (bucket 0 also
 * holds t == 0; the last bucket holds everything longer). */
#define VQS_STATS_LAT_BUCKETS 40

struct vqs_queue_stats {
	uint32_t size;             /* caller: sizeof(struct vqs_queue_stats) */
	uint64_t kicks;            /* kick eventfd edges seen */
	uint64_t calls;            /* call eventfd writes */
	uint64_t calls_suppressed; /* flushes after which the driver did not want a call (EVENT_IDX) */
	uint64_t polls;            /* pop attempts (one per handler batch, plus empty ones) */
	uint64_t empty_polls;      /* pop attempts that found nothing */
	uint64_t turns;            /* times a worker served the queue */
	uint64_t budget_exhausted; /* turns ended by the packet or byte budget (then requeued) */
	uint64_t reqs;             /* requests completed */
	uint64_t bytes;            /* readable + writable bytes of the chains popped */
	uint64_t given_back;       /* requests a handler gave back (unpopped, served again later) */
	uint64_t async_completions; /* completions handed over from other threads */
	uint64_t busy_ns;          /* wall time workers spent in this queue's turns */
	uint64_t batch_hist[VQS_STATS_BATCH_BUCKETS];
	/* From the moment the worker noticed the request (kick wakeup, or the poll that found it)
	 * to its completion; short batches back to back, which share a clock read, each at the
	 * run's time over its batches. */
	uint64_t latency_hist[VQS_STATS_LAT_BUCKETS];
	/* Requests a handler completed during its call and then returned as given back (a count
	 * at or below their index): a handler bug. The completion is kept and the request counted
	 * as taken, never served again; the first one logs a warning. */
	uint64_t completed_given_back;
	/* Empty rings after which notifications were re-armed (the queue stopped being polled and
	 * the driver may kick again). */
	uint64_t rearms;
	/* Hand-overs of completions from other threads to the queue's worker, each one push on its
	 * list and one wake: one per vqs_req_complete, one per run of the queue's requests in a
	 * vqs_req_complete_batch. Last: a caller's older, shorter size copies a prefix. */
	uint64_t async_handovers;
};

struct vqs_worker_stats {
	uint32_t size;        /* caller: sizeof(struct vqs_worker_stats) */
	int tid;              /* Linux thread id */
	uint64_t wakeups;     /* returns from the blocking wait */
	uint64_t turns;       /* queue turns run */
	uint64_t polls;       /* pop attempts */
	uint64_t empty_polls; /* pop attempts that found nothing */
	uint64_t cpu_ns;      /* thread CPU time (busy: user + system) */
	uint64_t idle_ns;     /* wall time blocked waiting for work */
	uint64_t naps;        /* timed sleeps of the deferred re-poll (adaptive; a subset of
			       * wakeups) */
	uint64_t wake_ns;     /* the wake-up round trip the cost model uses now (learned) */
	/* The adaptive cost model's other learned inputs and the thresholds it derives from them
	 * (docs/sched.md, "Cost model"): how late a timed wake-up comes, a nap's CPU, and the
	 * expected gaps below which it spins, and below which it naps rather than sleeps; what a
	 * request waits on average because the worker was preempted while awake (the stall); the
	 * CPU a sleep and its wake-up by an event cost it; and the stall's tail, the wait it puts
	 * on the p99 of a spinning worker's requests (0 while stalls catch 1% of them or fewer). */
	uint64_t timer_ns, nap_cpu_ns, spin_max_ns, poll_max_ns, stall_ns, sleep_cpu_ns,
		stall_tail_ns;
	/* System calls the adaptive cost model made to measure those (its thread's CPU clock, its
	 * schedstat), around sleeps and naps and while spinning: what it costs beyond the sleeps
	 * dedicated also makes. */
	uint64_t cost_reads;
	/* What the adaptive policy's polling decided (docs/sched.md, "Cost model"): how often the
	 * worker's mode by its arrival rate (spin, nap, sleep) changed; how often a silence of its
	 * queues outlasted the polling their rate earned, so they re-armed and it slept; the naps
	 * it took past its windows because re-arming many queues would cost more (the rent); and
	 * the naps whose timer woke it more than 100 us later than asked. Last: a caller's older,
	 * shorter size copies a prefix. */
	uint64_t mode_changes, polling_ends, rent_naps, late_naps;
};

struct vqs_sched;
struct vqs_queue;

/* Snapshot of q's counters (fields up to st->size). Threads: any, while q is attached. */
VQS_API int vqs_queue_stats_get(struct vqs_queue *q, struct vqs_queue_stats *st);
/* Snapshot of worker i's counters. -ENOENT when there is no worker i. Threads: control. */
VQS_API int vqs_worker_stats_get(struct vqs_sched *s, unsigned i, struct vqs_worker_stats *st);
/*
 * Upper bound of the bucket holding the p-th fraction (0 < p <= 1) of a log2 histogram's
 * samples (2^(i+1) - 1 for bucket i), 0 when it is empty. Threads: any.
 */
VQS_API uint64_t vqs_stats_hist_quantile(const uint64_t *hist, unsigned nbuckets, double p);
/*
 * The scheduler's policy, every worker's and every attached queue's counters as one JSON object,
 * written like snprintf: returns the length the whole text needs (excluding the NUL) and writes
 * at most len bytes including the NUL. Threads: control.
 */
VQS_API int vqs_sched_stats_json(struct vqs_sched *s, char *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif
