/* SPDX-License-Identifier: MIT */
/*
 * Inside the scheduler: queues and their state machine, groups (ready lists with their epoll
 * set), workers, the policy decision modules, placement.
 *
 * A group is one scheduling domain: an epoll set holding the kick eventfds of its queues and a
 * doorbell eventfd, a ready list, and the workers that serve it. dedicated, poll and adaptive
 * give each worker its own group; pool gives all workers one group, so any idle worker takes any
 * kicked queue. Kick eventfds are registered edge-triggered: every kick write is one event
 * delivered to one waiting worker (epoll wakes waiters exclusively), and the counter is never read,
 * so a worker never blocks on someone else's eventfd and pays no read() per kick.
 *
 * Queue state word (q->state): a state in the low bits plus two flags.
 *   IDLE    not on a list, not running; notifications armed, waiting for a kick/completion/wake.
 *   READY   on exactly one group's ready list.
 *   RUNNING exactly one worker is serving it (owns the vq).
 *   PAUSED  the control thread holds it (owns the vq); nothing serves it.
 *   PENDING flag: work arrived while RUNNING or PAUSED; the next transition serves it again.
 *   PAUSE_REQ flag: a control thread waits for the queue to stop; the worker that would serve it
 *   next parks it in PAUSED instead.
 * "Requeued" is READY again after a turn (budget spent, or still polled).
 * Only the IDLE->READY transition (and a turn's end) pushes the queue on a list, so it is never queued twice and
 * never runs on two workers at once. Every transition is a CAS with acq_rel ordering: the worker
 * (or control thread) that gets the queue next sees everything the previous owner wrote.
 * "Broken" (the ring broke a rule) and "parked" (the handler gave requests back) are owner-side
 * flags: a broken or parked queue still runs turns to publish completions but pops nothing.
 */
#ifndef VQS_SCHED_INTERNAL_H
#define VQS_SCHED_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>
#include <vqsched/sched.h>
#include <vqsched/stats.h>

#include "sched/lflist.h"

#define Q_IDLE 0u
#define Q_READY 1u
#define Q_RUNNING 2u
#define Q_PAUSED 3u
#define Q_STATE_MASK 3u
#define Q_PENDING 4u
#define Q_PAUSE_REQ 8u

/* Queues one scheduler can hold at once (size of the epoll key table). */
#define SCHED_MAX_QUEUES 4096u
#define SCHED_BATCH_MAX 256u /* cap of vqs_sched_opts.batch_max */
#define SCHED_SPIN_PCT_MAX 10000u /* cap of vqs_sched_opts.spin_pct */
/* Queues a worker keeps polling without requeueing (poll.c): at least the sweep's 50, whose
 * requeued queues each cost a full turn per empty poll. */
#define SCHED_HELD_MAX 64u
#define SCHED_BELL_KEY UINT64_MAX
/* The longest a worker stays in one read-side section across batches (turn.c, serve): a
 * nonblocking handler's batches run in one, and a grace period (a memory table replacement's)
 * waits for its end, so a busy worker leaves it this often; as long as the held looks' rounds
 * (poll.c), far below a vhost-user reply's timeout, and a leave and enter (~100 instructions)
 * per 50 us is nothing to a worker. */
#define SCHED_SECTION_NS 50000u
/* Batches back to back in a turn share one clock read while they take less than
 * SCHED_CLOCK_NS together, by the queue's estimate, and SCHED_CLOCK_REQS requests at most
 * (turn.c, clock_due). */
#define SCHED_CLOCK_NS 2000u
#define SCHED_CLOCK_REQS 16u
/* Empty turns a queue rides out with notifications off while its worker has other work
 * (policy.c, "Deferral"). */
#define SCHED_DEFER_LOOKS 16u

/* Request slot states, as the queue's owner sees them. */
enum slot_state {
	SLOT_FREE,
	SLOT_HANDED,    /* given to the handler in the current call */
	SLOT_DONE_HERE, /* completed on the worker during the handler call, staged for the
			 * batch's fill; once the handler returned, filled: as free as SLOT_FREE
			 * (a pop sets each request it writes SLOT_HANDED) */
	SLOT_OUT,       /* with the handler beyond its call */
	SLOT_HELD,      /* IN_ORDER: completed, waiting for an older request (see order_drain) */
};

/* One memory-table pin shared by the requests of a batch until each is completed: the handler
 * runs outside the read-side section, so the pin is what keeps its buffers mapped. Owner of the
 * queue only (plain counter). */
struct pin_ref {
	const struct vqs_mem_table *t;
	unsigned refs;
	struct pin_ref *next_free;
};

struct req_slot {
	struct vqs_req req; /* first: vqs_req pointers convert back */
	struct lf_node done; /* link in q->done once completed from another thread */
	struct vqs_queue *q;
	enum slot_state st;
	uint32_t written;                 /* SLOT_DONE_HERE, or set by a remote completer before
					   * the push */
	struct pin_ref *pin;              /* keeps the iovecs mapped until completed */
	uint64_t t0_ns;                   /* when the worker noticed the request */
	struct iovec iov[];
};

/* Counters written by one thread at a time (see stat_add), read relaxed by anyone. */
struct q_counters {
	_Atomic uint64_t kicks, calls, calls_suppressed, polls, empty_polls, turns, budget_exhausted,
		reqs, bytes, given_back, async_completions, busy_ns, completed_given_back, rearms;
	/* Completers add to it (any thread, RMW): see vqs_queue_stats.async_handovers. */
	_Atomic uint64_t async_handovers;
	_Atomic uint64_t batch_hist[VQS_STATS_BATCH_BUCKETS];
	_Atomic uint64_t latency_hist[VQS_STATS_LAT_BUCKETS];
};

struct w_counters {
	_Atomic uint64_t wakeups, turns, polls, empty_polls, idle_ns, naps;
	/* system calls the adaptive cost model made to measure (thread CPU clock, schedstat) */
	_Atomic uint64_t cost_reads;
	/* adaptive: what its polling decided (vqs_worker_stats) */
	_Atomic uint64_t mode_changes, polling_ends, rent_naps, late_naps;
	/* sched_worker's cost model inputs and thresholds, published for the stats */
	_Atomic uint64_t wake_ns, timer_ns, nap_cpu_ns, spin_max_ns, poll_max_ns, stall_ns,
		sleep_cpu_ns, stall_tail_ns;
};

/* An arrival process as the adaptive controller sees it (policy.c): of one queue, or of all the
 * queues of one worker. */
struct adapt_arrivals {
	uint64_t gap_ewma_ns;     /* smoothed time between pops that found requests */
	uint64_t last_arrival_ns; /* last pop that found work; 0 = none yet */
};

/* Per-queue decision state (owner only); see policy.c. */
struct adapt_state {
	uint32_t batch;           /* adaptive: chains per handler call */
	uint32_t looks;           /* dedicated, pool: empty turns since the queue last found work */
	/* adaptive: stays polled by naps of its worker rather than by spinning (policy.c,
	 * "Deferred re-poll"). */
	bool nap;
	struct adapt_arrivals q;  /* adaptive: the queue's own arrivals */
	uint64_t seen;            /* adaptive: its worker's arrivals at its last one */
	/* adaptive: its last pop left chains in the ring, so the next pop that finds some finds
	 * those, not an arrival (policy.c, adapt_observe) */
	bool backlog;
	uint64_t wake_seen;       /* adaptive: its worker's wakes at its last arrival */
};

struct sched_group;
struct sched_worker;
struct sched_look;

struct vqs_queue {
	struct lf_node ready;          /* link in a group's ready list */
	struct vqs_sched *s;
	_Atomic uint32_t state;
	uint64_t key;                  /* epoll key: table index | generation << 32 */
	/* Where wakes push the queue; changed only while PAUSED (so stable while READY). */
	_Atomic(struct sched_group *) group;
	struct sched_worker *home;     /* control: the worker it is assigned to (NULL in pool) */
	int group_id, pref_worker;     /* from the attach options */
	bool user_paused;              /* control: paused by vqs_queue_pause */
	struct vqs_vq *vq;
	vqs_handler_fn handler;
	void *opaque;
	void (*on_broken)(struct vqs_queue *q, enum vqs_vq_err why, void *opaque);
	void *on_broken_opaque;
	struct vqs_mem *mem; /* the vq's memory map, read at attach and resume */
	_Atomic int kick_fd, call_fd;
	uint16_t iov_per_req;
	uint8_t prefetch_lines;
	bool handler_nonblocking;
	vqs_demand_fn demand;

	/* Owner side (the worker running it, or the control thread while PAUSED). */
	/* One request per chain id (split: head index; packed: buffer id), req_stride bytes
	 * apart: the ring keeps ids unique while in flight (a repeat breaks it,
	 * VQS_VQ_ERR_BUFFER_ID), so the id is the request's place and no free list is kept. */
	char *reqs;
	uint32_t req_stride;
	unsigned nslots, nout;         /* nslots = the queue size; nout: requests popped, not freed */
	/* The ring pops each chain straight into its id's request (vqs_pop_to.by_id), into the
	 * iovecs the request's element names: a long chain's names the ring's long-chain area
	 * (vqs_elem), until the request is free again and the next pop restores it (pop_batch).
	 * long_ids: the nlong requests whose element may still name the area. */
	uint16_t *long_ids;
	unsigned nlong;
	struct pin_ref *pin_mem, *free_pins; /* nslots of them: one per batch at most */
	/* The pin of the latest batch, on which the owner keeps a reference of its own while it
	 * has the queue: the batches that follow on the same table join it (a plain count), so a
	 * polled queue takes no atomic pin per batch. Dropped when the table is replaced (at the
	 * next turn) and before the queue leaves its worker (sched_run_taken, a pause). */
	struct pin_ref *pin_cur;
	bool notify_on, parked, broken;
	bool miscount_warned;          /* a handler gave back a request it completed: warned */
	/*
	 * IN_ORDER negotiated: a used entry tells the driver every older buffer is used too, so
	 * completions reach the ring in pop order. `order` holds the requests popped and not yet
	 * published, oldest first (ord_len chain ids from ord_head, a ring of nslots); a completion
	 * that is not the oldest waits there (SLOT_HELD) until the older ones are completed.
	 */
	bool in_order;
	uint16_t *order;
	unsigned ord_head, ord_len;
	uint64_t last_work_ns;         /* poll policy: last pop that found work */
	uint64_t clock_ns;             /* the worker's read before this handler call (see
					* vqs_queue_clock_ns) */
	/* What a request of its turns took, the latest estimate: the time between the last two
	 * clock reads of a turn over the requests served between them (turn.c, clock_due). */
	uint32_t req_ns;
	struct adapt_state ad;

	_Atomic bool wake_req;         /* vqs_queue_wake since the last turn */
	_Atomic uint64_t noticed_ns;   /* when a wake made the queue READY */
	struct lf_list done;           /* completions from other threads */
	struct q_counters c;
	struct vqs_queue *next_attached; /* control: the scheduler's list */
};

struct sched_group {
	int epfd, bell_fd;
	pthread_mutex_t take_lock;     /* consumers of the ready list (a group's workers) */
	struct lf_node *fifo, *fifo_tail; /* taken from `incoming`, in order; under take_lock */
	struct lf_list incoming;
	_Atomic int nready;            /* queues on the list; seq_cst, see group_push/worker_wait */
	_Atomic int sleepers;
	/* Queues assigned to the group (written by control threads, under ctl; read relaxed by its
	 * workers: a stale value only costs one needless or one skipped event check, and a queue
	 * joins or leaves only while PAUSED, after which its first turn reads it afresh). */
	_Atomic unsigned nqueues;
	/* Of those, queues with notifications on (notify_on): only they can be kicked, so workers
	 * busy with other queues look for kicks between turns only while there is one. Changed by
	 * a queue's owner (relaxed: a stale read only moves that look to the next turn). */
	_Atomic int armed;
	_Atomic bool stop;
};

struct sched_worker {
	struct vqs_sched *s;
	struct sched_group *g;
	bool own_group;        /* g belongs to this worker (not the pool's shared group) */
	unsigned index;
	int group_id;          /* dedicated: the queue group it serves, -1 = one queue */
	unsigned nqueues;      /* control */
	pthread_t th;
	_Atomic int tid;
	cpu_set_t mask;        /* the mask it was created with */
	int numa_node;         /* AUTO: node its memory should come from; -1 = any */
	struct w_counters c;
	unsigned turns_since_check;
	/* Its latest clock read: a turn starts from it, so the loop between two turns reads none
	 * (a clock read is tens of ns, more in a VM, and a busy worker takes ~10^5 turns/s). */
	uint64_t now_ns;
	/* When its current outermost read-side section began, or earlier (a clock read before
	 * it): see SCHED_SECTION_NS. */
	uint64_t section_ns;
	/* A measured sleep whose reads after the wake-up wait for sched_cost_settle (woke_ns 0:
	 * none; on now_ns's cache line, as every empty poll checks it): when it woke, the reads
	 * before it (CPU; run queue wait, SCHED_QUEUED_UNKNOWN when not read), the timeout asked
	 * and the time slept, and whether an event or the timer ended it. */
	struct sched_wake_reads {
		uint64_t woke_ns, cpu_ns, queued_ns, asked_ns, slept_ns;
		bool event, timed;
	} pending;
	/* now_ns - awake_ns: how long it has been awake, less the time it slept meanwhile (naps
	 * count as awake: sched_awake_after_sleep); the adaptive policy's hold is a share of it. */
	uint64_t awake_ns;
	/* The arrivals of all its queues together (adaptive; written by its turns): whether the
	 * worker has work, where a queue's own gap only says how often that queue has some. */
	struct adapt_arrivals ad;
	/* The spread of ad's gap samples (the EWMA of their squared deviation from the estimate,
	 * ns^2), the mode the gap estimate last chose (policy.c, enum poll_mode) and since when:
	 * the hysteresis that keeps the mode at the break-even (policy.c, rate_mode). */
	uint64_t gap_var;
	unsigned rate_mode;
	uint64_t mode_since_ns;
	/* The mode its last decision took (policy.c, worker_mode), and whether by the rent ((d)):
	 * the stats count the ends of polling and the naps the rent bought. */
	unsigned poll_mode;
	bool renting;
	/* Its arrivals so far, and how many queues share them, x 16 (policy.c, (d)). */
	uint64_t arrivals, queues_x16;
	/* Its wake-ups so far; since the last one, until the queues listed then are served
	 * (woken), it found work on woken_found queues (policy.c, adapt_observe: work found
	 * together after a wake-up is one arrival). */
	uint64_t wakes;
	bool woken;
	unsigned woken_found;
	/* The cost model's learned inputs (policy.c, "Cost model"; adaptive): the wake-up round
	 * trip W (learned from its kicked wake-ups), the overshoot of a timed wake-up and a nap's
	 * CPU (learned from its naps), all seeded with the creation-time measurements; the nap to
	 * ask for next; and the gaps below which spinning, then napping, costs less than sleeping,
	 * recomputed from them. */
	uint64_t wake_ns, timer_ns, nap_cpu_ns, nap_ns, spin_max_ns, poll_max_ns;
	uint64_t timer_sq; /* the mean square of a timer's overshoot, ns^2: its spread */
	/* A nap's CPU is learned from one nap's start to the next's (sched_cost_nap_start): the
	 * thread's CPU and requests served at the last nap's start, and whether its timer ended it. */
	uint64_t nap_start_cpu_ns, nap_start_reqs;
	bool nap_timed;
	/* What a request waits, on average, because its worker was preempted while awake (policy.c,
	 * "stall"), learned from the samples of its CPU time against the wall time it was awake:
	 * the mark of the last sample (wall, thread CPU, time slept since, requests served then),
	 * the requests served so far, and the stall, the sleep's cost and the nap's priced when
	 * the thresholds were last recomputed (policy.c, cost_maybe_update). Over two horizons of
	 * wall time (stall: 75 ms, whose mean prices a spin; tail: a second, which the stall's tail
	 * needs as well: policy.c, stall_tail), the wait a stall makes a request's on average, the
	 * share of requests a stall catches (the lost share of the awake time, in 1/2^16), and the
	 * requests the two stand for, faded over time (policy.c, by_time). */
	struct sched_stall_avg {
		uint64_t wait_ns, share, reqs;
	} stall, tail;
	uint64_t stall_priced_ns, sleep_priced_ns, nap_priced_ns;
	uint64_t stall_at_ns; /* the end of the last stall sample (0: none) */
	uint64_t mark_ns, mark_cpu_ns, mark_reqs, reqs;
	/* The most requests one pop found (taken and left) since the last sample: no more than
	 * that many arrived in one stall (policy.c, sched_cost_awake). */
	uint64_t found_max;
	/* c: the CPU a sleep and its wake-up by an event cost the worker's thread, seeded with the
	 * creation-time measurement (vqs_sched.wake_cpu_ns) and learned from its sleeps. */
	uint64_t sleep_cpu_ns;
	/* Its thread's schedstat (sched_queued_open; -1: none): the run queue wait of its
	 * wake-ups, kicked or timed, teaches W (adaptive), read around one sleep in SCHED_QUEUED_EVERY (queued_sleeps
	 * counts them); sleep_mode_sleeps counts the sleeps of a worker whose gap picks sleeping,
	 * one in 256 of which it measures (policy.c, sched_cost_sleep_reads). */
	int queued_fd;
	unsigned queued_sleeps, sleep_mode_sleeps;
	/* Queues it keeps polling between ready-list turns instead of requeueing them after each
	 * empty poll: RUNNING, owned by it (see sched_hold). */
	struct vqs_queue *held[SCHED_HELD_MAX];
	unsigned nheld, held_rounds;
	struct vqs_elem giveback[SCHED_BATCH_MAX]; /* scratch for vqs_vq_unpop */
	struct req_slot *batch[SCHED_BATCH_MAX];
	uint16_t pop_ids[SCHED_BATCH_MAX]; /* the ids of the batch, in pop order */
	/* The batch's requests completed during the handler call, filled in one session fill:
	 * nstaged of them, staged as they are completed (stage_here) */
	const struct vqs_elem *fill_elems[SCHED_BATCH_MAX];
	uint32_t fill_written[SCHED_BATCH_MAX];
	unsigned nstaged;
};

/* A policy's decisions, plugged into the one worker loop (turn.c, poll.c). */
struct sched_policy {
	enum vqs_policy id;
	/* Chains to pop for the next handler call. */
	unsigned (*batch)(const struct vqs_sched *s, struct vqs_queue *q);
	/* Feedback after a pop found n chains and `backlog` were still available. */
	void (*observe)(const struct vqs_sched *s, struct vqs_queue *q, unsigned n,
			unsigned backlog, uint64_t now);
	/* The ring was found empty: keep polling it (true) or re-arm notifications and sleep. */
	bool (*keep_polling)(const struct vqs_sched *s, struct vqs_queue *q, uint64_t now);
};
const struct sched_policy *sched_policy_get(enum vqs_policy p);
/* The start of a worker's awake span (sched_worker.awake_ns) after a sleep from asleep_ns to
 * now_ns, or a nap (the deferred re-poll, which the span goes on through): the adaptive hold's
 * measure of sustained load (policy.c, (c)). */
uint64_t sched_awake_after_sleep(uint64_t awake_ns, uint64_t asleep_ns, uint64_t now_ns,
				 bool nap);
/* Seed w's learned costs from the scheduler's creation-time measurement. Owner of w. */
void sched_cost_init(struct sched_worker *w);
/* w asked to sleep asked_ns and slept slept_ns, then waited queued_ns on a run queue
 * (SCHED_QUEUED_UNKNOWN: not known): learn a nap's overshoot from a timer wake-up, and W from
 * the wait. Owner of w. */
void sched_cost_timed_wake(struct sched_worker *w, uint64_t asked_ns, uint64_t slept_ns,
			   uint64_t queued_ns);
/* w starts a nap with its thread's CPU at cpu_ns: learn a nap's CPU from the last one's start,
 * when its timer ended it and no request was served since. Owner of w. */
void sched_cost_nap_start(struct sched_worker *w, uint64_t cpu_ns);
/* w was awake for awake_ns (not asleep) up to now_ns, its thread ran cpu_ns of it and it served
 * reqs requests, at most found_max of them found by one pop: learn what its preemption costs a
 * request (the time since the last sample outside awake_ns was not seen). Owner of w. */
void sched_cost_awake(struct sched_worker *w, uint64_t now_ns, uint64_t awake_ns, uint64_t cpu_ns,
		      uint64_t reqs, uint64_t found_max);
/* Sample w's thread CPU (cpu_ns, read at now_ns) against the wall time since the last sample or
 * wake-up, all of it awake, for sched_cost_awake. Owner of w. */
void sched_cost_sample(struct sched_worker *w, uint64_t now_ns, uint64_t cpu_ns);
/* Every wake-up of w, measured or not: the requests found next are the wake-up's (adapt_observe)
 * and no stall sample spans the sleep. Owner of w. */
void sched_cost_wake(struct sched_worker *w);
/* What w measured around a sleep, at now_ns with its thread's CPU at cpu_ns: event: an event
 * ended a sleep (not a nap), which cost slept_cpu_ns of CPU: learn c; the thread then waited
 * queued_ns on a run queue after a wake-up an event ended, a sleep's or a nap's
 * (SCHED_QUEUED_UNKNOWN: not known, or a nap's timer ended it): learn W; the next stall sample
 * starts at the mark. Owner of w. */
void sched_cost_woke(struct sched_worker *w, uint64_t now_ns, uint64_t cpu_ns, bool event,
		     uint64_t slept_cpu_ns, uint64_t queued_ns);
/* What w measures around its next sleep (nap: a timed one): nothing, its thread's CPU before
 * and after (c, c_n, the stall), or that and its run queue wait (W). Owner of w. */
enum sched_sleep_reads { SCHED_READS_NONE, SCHED_READS_CPU, SCHED_READS_CPU_QUEUED };
enum sched_sleep_reads sched_cost_sleep_reads(struct sched_worker *w, bool nap);

struct vqs_sched {
	struct vqs_sched_opts o;
	const struct sched_policy *pol; /* changed only while every queue is PAUSED */
	pthread_mutex_t ctl;            /* serialises control operations */
	pthread_mutex_t sig_mu;         /* with sig_cv: "a queue reached PAUSED / got a completion" */
	pthread_cond_t sig_cv;
	struct sched_worker **w;
	unsigned nw, capw;
	struct sched_group *pool_group; /* pool only */
	struct vqs_queue *queues;       /* attached, under ctl */
	_Atomic(struct vqs_queue *) table[SCHED_MAX_QUEUES];
	uint32_t table_gen[SCHED_MAX_QUEUES];
	cpu_set_t inherit_mask;         /* the creating thread's mask */
	uint64_t wake_ns;               /* a sleep/wake round trip here, measured at creation (cost.c) */
	uint64_t wake_path_ns;          /* a wake-up's delay outside the run queue, measured with it */
	uint64_t wake_cpu_ns;           /* the CPU one sleep/wake costs its thread, measured with it */
	uint64_t timer_ns, timer_cpu_ns; /* how late a 10 us timed sleep wakes, and its CPU */
	void *topo;                     /* hwloc topology (AUTO), NULL otherwise */
};

/* ---- worker.c: the loop ---- */
/* TSan stand-in for the RCU grace period that keeps a queue alive for wakers and kick events:
 * read-side sections release it before leaving, detach acquires it after synchronize_rcu. */
extern char sched_tsan_grace;
void *sched_worker_main(void *arg);

/* ---- ready.c: ready lists ---- */
void group_push(struct sched_group *g, struct vqs_queue *q);
void group_ring(struct sched_group *g);
/* The list's oldest queue, NULL when it is empty. A worker of g. */
struct vqs_queue *group_take(struct sched_group *g);

/* ---- state.c: the queue state machine ---- */
/* Make q schedulable (kick, completion, wake, resume). Threads: any, inside an RCU read-side
 * section or while q cannot be freed. */
void sched_queue_wake(struct vqs_queue *q, uint64_t now);
/* The end of q's turn on its worker: READY again (`again`, or PENDING), IDLE or PAUSED. */
void sched_finish(struct vqs_queue *q, bool again);
/* q taken off a ready list: true when it is now RUNNING, false when it went PAUSED. */
bool sched_take_turn(struct vqs_queue *q);
/* Signal control threads waiting in sched_wait_cond. */
void sched_signal(struct vqs_sched *s);

/* ---- complete.c: completion (request slots and pins: slots.h) ---- */
/* The batch whose handler runs on this thread right now (q NULL: none), its worker and its size
 * (w->batch[0..n)): completions of the batch's requests are staged in w's fill arrays for the
 * batch's one fill, completions of q's other requests fill directly. */
struct sched_running {
	struct vqs_queue *q;
	struct sched_worker *w;
	unsigned n;
};
extern _Thread_local struct sched_running sched_running __attribute__((tls_model("initial-exec")));
/* Publish completions handed over from other threads. Owner of q. */
void sched_reap(struct vqs_queue *q);
/* End q's ring session ss: publish what was filled, decide the call (EVENT_IDX coalesces it per
 * batch) and make it. Owner of q. */
void sched_end_call(struct vqs_queue *q, struct vqs_vq_session *ss);

/* ---- turn.c: one turn ---- */
/* A turn of q, which w owns (RUNNING); then it is held, requeued, idle or paused. *in_section:
 * on entry, the caller is in a read-side section of its own (not nested in another), which the
 * turn leaves before any handler or demand callback runs; on return, whether the turn ended
 * inside a section (the one its last batch opened after its handler, or the caller's), which the
 * caller leaves. Never inside one when q was let go (requeued, idle or paused). look: NULL, or a
 * look at q's ring inside the caller's section, which the turn uses or drops. */
void sched_run_taken(struct sched_worker *w, struct vqs_queue *q, bool *in_section,
		     struct sched_look *look);

/* ---- events.c: kick events ---- */
/* Nothing ready: sleep until a kick, a doorbell (wake, completion, stop) or a signal. */
void sched_worker_sleep(struct sched_worker *w);
/* Complete the measurement of w's last wake-up (w->pending, woke_ns not 0) at now_ns (a clock
 * read just made): read its thread's CPU and run queue wait, once the requests the wake-up
 * brought were served, and learn from them (sched_cost_woke, sched_cost_timed_wake). Owner of w. */
void sched_cost_settle(struct sched_worker *w, uint64_t now_ns);
/* Turn the group's pending kicks into wakes, without blocking. */
void sched_check_events(struct sched_worker *w, uint64_t now);
/* Held queues napping and nothing ready: sleep at most ns on the group's epoll set (a kick, a
 * doorbell or a stop ends it sooner), then learn from the timed wake-up. */
void sched_worker_nap(struct sched_worker *w, uint64_t ns);
/* epoll_pwait2 where the kernel has it (5.11 on; a nap's timeout in ns), else ppoll on the epoll
 * fd for the precise timeout and epoll_wait without blocking for the events: a kernel before
 * 5.11, a seccomp sandbox or valgrind answers ENOSYS, and a worker that took the error for a
 * wake-up never slept and never saw a kick. timeout_ns < 0: until an event. Returns what
 * epoll_wait returns. Any thread. */
struct epoll_event;
int sched_epoll_wait_ns(int epfd, struct epoll_event *ev, int max, int64_t timeout_ns);

/* ---- poll.c: queues kept polled without a trip through the ready list ---- */
/* Keep q, whose turn wants it polled again (`again`), in w's hold set: false when w cannot
 * (then the caller lets it go: sched_finish). Owner of q. */
bool sched_hold(struct sched_worker *w, struct vqs_queue *q, bool again);
void sched_poll_held(struct sched_worker *w);

/* ---- cost.c ---- */
/* A sleep/wake round trip through an eventfd between two threads, where it could not be
 * measured, and the range a measurement is clamped to. */
#define SCHED_WAKE_DEFAULT_NS 50000u
#define SCHED_WAKE_MIN_NS 2000u
#define SCHED_WAKE_MAX_NS 200000u
/* A nap's timer wake-up this much later than asked is counted (vqs_worker_stats.late_naps): a
 * request that arrived meanwhile waits it, longer than a spinning worker's tail here (busy-poll's
 * p99 2-40 us at 100k-400k requests/s in the sweeps). */
#define SCHED_NAP_LATE_NS 100000u
/* The calling thread's /proc/thread-self/schedstat, -1 where there is none (no
 * CONFIG_SCHED_INFO). Threads: the thread whose queue waits it reads. */
int sched_queued_open(void);
/* The total time the thread of fd (sched_queued_open) waited on a run queue, runnable and not
 * running; SCHED_QUEUED_UNKNOWN when fd is -1 or unreadable. A pread, ~3-4 us here. */
#define SCHED_QUEUED_UNKNOWN UINT64_MAX
uint64_t sched_queued_ns(int fd);
/* Two of those reads per sleep (before, after) cost 7-8 us here at load average ~9, against
 * 12-20 us of CPU for the sleep itself: one measured sleep or nap in 8 teaches W, ~1 us per
 * sleep (policy.c, sched_cost_sleep_reads). */
#define SCHED_QUEUED_EVERY 8u
/* Measure s's wake_ns, wake_path_ns, wake_cpu_ns, timer_ns, timer_cpu_ns now (about 15 round
 * trips and 15 timed sleeps, at most ~10 ms), between the CPUs of sched_cost_cpus. Threads: any;
 * blocks. */
void sched_measure_costs(struct vqs_sched *s);

/* ---- placement.c ---- */
/* The mask worker `index` gets under the scheduler's placement; node_hint: NUMA node of the memory
 * it will serve, -1 unknown. Fills *node with the NUMA node chosen (-1 = any). */
int sched_place(struct vqs_sched *s, unsigned index, int node_hint, cpu_set_t *mask, int *node);
int sched_place_init(struct vqs_sched *s);
void sched_place_fini(struct vqs_sched *s);
/* NUMA node of the memory at p, -1 when unknown. */
int sched_mem_node(const void *p);
/* The two CPUs sched_measure_costs measures a wake-up between: worker 0's (under the placement)
 * and another of the creating thread's (s->inherit_mask), or worker 0's again when that thread
 * has no other; -1 where unknown. Needs sched_place_init. */
void sched_cost_cpus(struct vqs_sched *s, int cpu[2]);

/* A counter with one writer at a time: a plain add, published relaxed (no locked instruction). */
static inline void stat_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
			      memory_order_relaxed);
}

/* The calling thread's CPU time (a system call in a VM: for the cost model's samples only). */
static inline uint64_t sched_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The adaptive cost model's reads of worker w's thread (w's own thread only): its CPU clock and
 * its run queue wait, each a system call, counted in w->c.cost_reads. */
static inline uint64_t sched_worker_cpu_ns(struct sched_worker *w)
{
	stat_add(&w->c.cost_reads, 1);
	return sched_thread_cpu_ns();
}
static inline uint64_t sched_worker_queued_ns(struct sched_worker *w)
{
	if (w->queued_fd >= 0)
		stat_add(&w->c.cost_reads, 1);
	return sched_queued_ns(w->queued_fd);
}

/* log2 bucket of v, capped at n-1. */
static inline unsigned stat_bucket(uint64_t v, unsigned n)
{
	unsigned b = v ? 63u - (unsigned)__builtin_clzll(v) : 0;
	return b < n ? b : n - 1;
}

/* A held queue's light look at its ring (poll.c) that found chains, handed to the queue's turn:
 * its first batch pops from this session instead of beginning another (a second check of the
 * queue and read of the avail index, 83 instructions, between a request's arrival and its pop). */
struct sched_look {
	struct vqs_vq_session ss; /* begun, in its read-side section, while has > 0 */
	unsigned has;             /* the chains its begin counted; 0: no session */
};

/* Leave look's session unused. */
static inline void look_drop(struct sched_look *look)
{
	if (look && look->has) {
		look->has = 0;
		vqs_vq_session_pause(&look->ss);
	}
}

#endif
