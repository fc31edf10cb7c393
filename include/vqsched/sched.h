/* SPDX-License-Identifier: MIT */
/*
 * The scheduler: worker threads that serve virtqueues under one of four policies, with per-queue
 * budgets, batching, call coalescing and explicit placement.
 *
 * Data path (one worker, one queue turn): wake (kick eventfd or poll) -> policy picks the batch
 * size -> pop chains -> handler -> fill/flush used -> EVENT_IDX call decision -> call eventfd.
 *
 * Ownership: the thread that creates a vqs_sched owns it and destroys it. Queues are attached and
 * detached by control threads (any thread except the scheduler's own workers; a handler may
 * control queues that other workers serve, see vqs_handler_fn). While attached, the queue's
 * vqs_vq belongs to the scheduler: only handlers (on the worker) may touch it, through the
 * requests they are given.
 */
#ifndef VQSCHED_SCHED_H
#define VQSCHED_SCHED_H

#define _GNU_SOURCE 1
#include <sched.h>
#include <vqsched/common.h>
#include <vqsched/vring.h>

#ifdef __cplusplus
extern "C" {
#endif

enum vqs_policy {
	VQS_POLICY_DEDICATED = 0, /* a thread per queue (or queue group), sleeping on the kick */
	VQS_POLICY_POOL = 1,      /* N workers take kicked queues from a shared ready list */
	VQS_POLICY_POLL = 2,      /* workers spin over their queues; sleep after poll_timeout_us */
	VQS_POLICY_ADAPTIVE = 3,  /* per-queue choice of notify vs poll and of batch size */
};
VQS_API const char *vqs_policy_name(enum vqs_policy p);
/* Parse "dedicated", "pool", "poll", "adaptive". -EINVAL otherwise. Threads: any. */
VQS_API int vqs_policy_parse(const char *s, enum vqs_policy *out);

enum vqs_placement {
	VQS_PLACE_FLOAT = 0,   /* all CPUs the process may use (the old vhost kthread) */
	VQS_PLACE_INHERIT = 1, /* the creating thread's mask, as vhost_task: only when asked */
	VQS_PLACE_PIN = 2,     /* exactly `cpus`, spread one CPU per worker where possible */
	VQS_PLACE_AUTO = 3,    /* hwloc: avoid busy_cpus, prefer the ring memory's NUMA node/cache */
};
VQS_API const char *vqs_placement_name(enum vqs_placement p);
VQS_API int vqs_placement_parse(const char *s, enum vqs_placement *out);

struct vqs_sched_opts {
	uint32_t size;             /* sizeof(struct vqs_sched_opts) */
	enum vqs_policy policy;
	unsigned nworkers;         /* pool/poll/adaptive workers (default 1); dedicated: unused */
	uint32_t poll_timeout_us;  /* poll: spin this long idle, then sleep; 0 = spin forever
				    * (default 50) */
	uint32_t batch_max;        /* most chains per handler call (default 64, at most 256) */
	uint32_t budget_pkts;      /* per queue turn (default 256, as VHOST_NET_PKT_WEIGHT) */
	uint64_t budget_bytes;     /* per queue turn (default 0x80000, as VHOST_NET_WEIGHT) */
	enum vqs_placement placement;
	cpu_set_t cpus;            /* PIN: allowed CPUs; AUTO: candidates (empty = all allowed) */
	cpu_set_t busy_cpus;       /* AUTO: CPUs to keep off (e.g. vCPU threads) */
	int numa_node;             /* AUTO: preferred node; -1 = the ring memory's node */
	/*
	 * adaptive: the price of latency, in percent: the CPU time it may spend to spare a request
	 * one unit of latency. Its cost model (docs/sched.md) weighs, per expected gap between
	 * requests, spinning (the gap's CPU), napping with notifications off (a nap's CPU per short
	 * timed sleep, half a nap's latency) and sleeping (a wake-up's latency and CPU, the
	 * driver's kick), with wake-up costs measured at creation and learned by the workers.
	 * Default 200: a microsecond of latency is worth two of CPU. 0: latency is free, so it
	 * spins only through gaps shorter than a sleep/wake's CPU and never naps; larger: more
	 * CPU, fewer wake-ups. At most 10000.
	 */
	uint32_t spin_pct;
	/*
	 * adaptive: what one kick costs the driver, in ns (a VM exit for a real guest; vqs-bench's
	 * --exit-ns stands for it). A queue that re-arms its notifications lets the driver kick, so
	 * the cost model counts it against sleeping (docs/sched.md, "Cost model"). Default 0.
	 */
	uint32_t kick_ns;
};
/* Fill defaults (size set, every field its documented default). Threads: any. */
VQS_API void vqs_sched_opts_init(struct vqs_sched_opts *o);

struct vqs_sched;
struct vqs_queue;

/*
 * A popped request as handlers see it. `elem` describes the chain (its iovecs stay valid until
 * the request is completed: the requests of a batch share one pin on the memory table their
 * chains were translated through, so a table replaced meanwhile stays mapped for them); `user`
 * is free for the handler.
 */
struct vqs_req {
	struct vqs_elem elem;
	void *user;
};

/*
 * Handler: given n requests popped from q (n >= 1), it must, for each of the first `taken` ones,
 * eventually call vqs_req_complete (now, on this thread, or later from any thread), and return
 * `taken` (0..n). Requests taken..n-1 are given back to the ring unconsumed (backpressure): the
 * scheduler then stops serving q until vqs_queue_wake(q). A request the handler completed during
 * the call is never given back: a count at or below its index is raised past it (the requests
 * before it then count as taken too and must be completed), counted in
 * vqs_queue_stats.completed_given_back and warned about once.
 * Runs on a worker thread; never on two threads at once for the same queue. Runs outside the
 * memory read-side section (the batch's pin keeps its buffers mapped), so it may block (a disk
 * write, say) without holding up a memory-table replacement, and may call control functions on
 * queues that another worker serves (pause, resume, detach, set_fds, move); not on its own queue
 * or one its own worker serves, which would wait for the handler to return.
 */
typedef unsigned (*vqs_handler_fn)(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
				   void *opaque);

/*
 * Demand: how many requests q's handler can take right now, asked (with the handler's opaque)
 * before each pop of q's turns, outside the memory read-side section as the handler; the batch
 * popped is capped by it, so chains the handler would only give back are never popped (a
 * receive queue with three frames waiting wants three buffers, not a batch of 64 with 61 handed
 * back). 0 stops serving q until vqs_queue_wake(q),
 * exactly as a handler that takes nothing: the device arranges that wake (e.g. when a frame
 * arrives), and a wake that races with the 0 is not lost. A cap, not a promise: the handler may
 * still give back. Runs on the worker serving q, inside its turn; keep it short.
 */
typedef unsigned (*vqs_demand_fn)(struct vqs_queue *q, void *opaque);

struct vqs_queue_opts {
	uint32_t size;          /* sizeof(struct vqs_queue_opts) */
	struct vqs_vq *vq;      /* configured queue; the scheduler uses it until detach */
	/* eventfd the driver kicks; -1 = none (polling only: the queue stays polled whatever the
	 * policy). Watched edge-triggered: every write is a kick; the scheduler never reads
	 * (resets) its counter. */
	int kick_fd;
	int call_fd;            /* eventfd to interrupt the driver; -1 = none */
	vqs_handler_fn handler;
	void *opaque;           /* passed to the handler */
	int group;              /* dedicated: queues with the same group >= 0 share a thread */
	int worker;             /* pool/poll/adaptive: preferred worker, -1 = any */
	/* iovecs per request (default 16); a longer chain is served from the ring's long-chain
	 * area (vqs_elem.iov points there), a slower path */
	uint16_t iov_per_req;
	/*
	 * Called once, on the worker, when the queue stops because its ring broke (why =
	 * vqs_vq_error); e.g. vhost-user signals the ring's error eventfd. The queue stays attached
	 * and pops nothing until it is paused, reconfigured and resumed. Runs inside the memory
	 * read-side section of the pop that found the break: it must not block. NULL = no hook. Gets
	 * on_broken_opaque, not the handler's opaque: the party that owns the ring's error reporting
	 * (e.g. a vhost-user backend) is often not the device whose handler runs.
	 */
	void (*on_broken)(struct vqs_queue *q, enum vqs_vq_err why, void *opaque);
	void *on_broken_opaque;
	/*
	 * The first prefetch_lines * 64 bytes of each request's first buffer (the lines holding
	 * them) are prefetched by the worker as it pops a batch (for writing when the chain has no
	 * readable buffer), so that the misses on buffers the driver wrote on its CPU overlap the
	 * rest of the pops instead of stalling the handler one after another (default 1; 0 = none,
	 * for handlers that do not touch the buffers). A prefetch never faults, whatever the chain
	 * says.
	 */
	uint8_t prefetch_lines;
	vqs_demand_fn demand; /* NULL = the policy's batch size alone */
	/*
	 * The handler never blocks: it does not sleep or wait for I/O or for another thread's
	 * progress, takes no lock a thread may hold while it waits for a memory grace period, and
	 * calls nothing that waits for one (vqs_mem_synchronize, vqs_mem_destroy, the calls whose
	 * threads are "control"). Short locks among handlers are fine. It then runs inside the
	 * memory read-side section its batch was popped in, which stays open through the batch's
	 * fill and end. Otherwise (false, the default) the worker leaves that section before each
	 * handler call and enters it again after, two liburcu calls and a second readiness check
	 * of the ring per batch, so that a blocking handler holds up no table replacement (its
	 * batch's pin keeps its buffers mapped). With this set, a replacement of the memory table
	 * waits for the handler calls running meanwhile. The demand callback is called outside any
	 * section either way. Older callers' smaller struct (size) leaves it false.
	 */
	bool handler_nonblocking;
};
VQS_API void vqs_queue_opts_init(struct vqs_queue_opts *o);

/* Create the scheduler and its workers (placed per opts). Threads: any. */
VQS_API int vqs_sched_create(struct vqs_sched **out, const struct vqs_sched_opts *opts);
/* Detach every queue (see vqs_sched_detach), stop and join the workers, free everything: no
 * thread, fd it opened, or memory left. Threads: the owner, not a worker. */
VQS_API void vqs_sched_destroy(struct vqs_sched *s);

/* Attach a queue; it starts being served at once. Threads: control. */
VQS_API int vqs_sched_attach(struct vqs_sched *s, const struct vqs_queue_opts *o,
			     struct vqs_queue **out);
/*
 * Stop serving q and wait until no worker runs it and every request it handed out was completed
 * (used entries flushed, driver called if needed); then free q. The vq is the caller's again.
 * Threads: control.
 */
VQS_API int vqs_sched_detach(struct vqs_queue *q);
/*
 * Stop serving q (returns when no worker runs it; requests already handed out may still
 * complete) / serve it again. Between the two, the vq may be used by the caller (e.g. read the
 * ring state for GET_VRING_BASE, reconfigure it). Threads: control.
 */
VQS_API int vqs_queue_pause(struct vqs_queue *q);
VQS_API int vqs_queue_resume(struct vqs_queue *q);
/* Replace the kick and/or call eventfd (-1 = none); the old fds are not closed. Threads: control. */
VQS_API int vqs_queue_set_fds(struct vqs_queue *q, int kick_fd, int call_fd);
/*
 * Move q to worker `worker` (dedicated/poll/adaptive; under pool every worker already serves
 * every queue, so this only checks `worker`). No request lost or run twice. -EINVAL for a worker
 * that does not exist. Threads: control.
 */
VQS_API int vqs_queue_move(struct vqs_queue *q, unsigned worker);
/* Serve q again after a handler gave requests back. Threads: any, including handlers. */
VQS_API void vqs_queue_wake(struct vqs_queue *q);
/*
 * Change the policy of a running scheduler; traffic keeps flowing. The queues pause while the
 * old workers stop and the new ones start (completions meanwhile are kept and published after);
 * queues keep their counters. Threads: control.
 */
VQS_API int vqs_sched_set_policy(struct vqs_sched *s, enum vqs_policy p);

/*
 * Complete a request with `written` bytes written to its writable buffers. On the worker inside
 * the handler, a request of the batch being handled is staged in the used ring with the batch's
 * other completions when the handler returns (in the order of the batch), an older one right
 * away; from any other thread the completion is handed to the queue's worker, which publishes it
 * and decides on the call. Exactly once per request (a second call on the worker is ignored with
 * a warning). Threads: any.
 *
 * VIRTIO_F_IN_ORDER: requests may complete in any order, the driver still sees them used in the
 * order they were popped. With IN_ORDER a used entry (split) or used descriptor (packed) tells
 * the driver that every buffer made available before it is used too, so a queue whose vq
 * negotiated it keeps a reorder stage: a completion whose request is the oldest outstanding
 * goes to the ring as above, one behind an older outstanding request waits until that one is
 * completed, and then both are published, oldest first. While completions come in pop order
 * nothing waits (the stage only records each request's place), and without IN_ORDER the stage
 * is not used. The alternative, refusing IN_ORDER for queues that may complete out of order,
 * would cost every device with asynchronous completions the feature, though only an
 * out-of-order completion needs the wait.
 */
VQS_API void vqs_req_complete(struct vqs_req *r, uint32_t written);
/*
 * Complete n requests, reqs[i] with written[i] bytes, as n calls of vqs_req_complete would, in
 * that order. From a thread other than a queue's worker, each run of consecutive requests of one
 * queue is handed over together: one push on the queue's completion list and one wake, where
 * vqs_req_complete costs one of each per request (an asynchronous device that finishes requests
 * in bunches: a disk's I/O completions, a batch of offloaded packets). On a queue's worker inside
 * its handler, each of its requests is completed as by vqs_req_complete. Threads: any.
 */
VQS_API void vqs_req_complete_batch(struct vqs_req *const *reqs, const uint32_t *written,
				    unsigned n);
/* The queue a request came from. Threads: any, until the request is completed. */
VQS_API struct vqs_queue *vqs_req_queue(const struct vqs_req *r);
/*
 * The time (vqs_now_ns's clock) q's worker read last before the current handler call: at most
 * about one batch earlier, or one run of short batches (calls that take a few microseconds
 * together share a read): for a handler that stamps a batch (ageing, timeouts) and would
 * otherwise read the clock on every call, which costs tens of ns, more in a VM. Threads: q's
 * handler, during a call.
 */
VQS_API uint64_t vqs_queue_clock_ns(const struct vqs_queue *q);

/* Worker threads running now (dedicated: one per queue or group attached so far; threads whose
 * queues left are kept for reuse). Threads: control. */
VQS_API unsigned vqs_sched_nworkers(const struct vqs_sched *s);
/* The CPU mask worker i actually runs with (read back from the thread). Threads: control. */
VQS_API int vqs_sched_worker_cpus(struct vqs_sched *s, unsigned i, cpu_set_t *cpus);
/* Linux thread id of worker i (for placement checks and tools). Threads: control. */
VQS_API int vqs_sched_worker_tid(struct vqs_sched *s, unsigned i);

#ifdef __cplusplus
}
#endif
#endif
