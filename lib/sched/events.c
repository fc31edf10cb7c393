/* SPDX-License-Identifier: MIT */
/*
 * Kick events: the group's epoll set turned into wakes, either after a sleep in epoll_wait (a
 * worker with nothing ready) or by a look without blocking between turns.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include <urcu-bp.h>

#include "sched/internal.h"
#include "util/log.h"
#include "util/tsan.h"

static struct vqs_queue *lookup(struct vqs_sched *s, uint64_t key)
{
	uint32_t idx = (uint32_t)key;
	if (idx >= SCHED_MAX_QUEUES)
		return NULL;
	/* acquire pairs with the release store in control.c's attach. */
	struct vqs_queue *q = atomic_load_explicit(&s->table[idx], memory_order_acquire);
	return q && q->key == key ? q : NULL;
}

/* Turn kick edges into wakes. Queues are looked up by key inside a read-side section: a queue
 * detached after epoll_wait returned its event is gone from the table, or alive until we leave. */
static void dispatch(struct sched_worker *w, const struct epoll_event *ev, int n, uint64_t now)
{
	urcu_bp_read_lock();
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u64 == SCHED_BELL_KEY) {
			uint64_t v;
			if (read(w->g->bell_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				vqs_warn("sched: doorbell read failed: %d", errno);
			continue;
		}
		struct vqs_queue *q = lookup(w->s, ev[i].data.u64);
		if (!q)
			continue;
		atomic_fetch_add_explicit(&q->c.kicks, 1, memory_order_relaxed);
		sched_queue_wake(q, now);
	}
	vqs_tsan_release(&sched_tsan_grace);
	urcu_bp_read_unlock();
}

/* Set once a call answered ENOSYS; relaxed: every thread that reads it stale learns it again. */
static atomic_bool no_pwait2;

int sched_epoll_wait_ns(int epfd, struct epoll_event *ev, int max, int64_t timeout_ns)
{
	struct timespec ts = {(time_t)(timeout_ns / 1000000000), (long)(timeout_ns % 1000000000)};
	if (!atomic_load_explicit(&no_pwait2, memory_order_relaxed)) {
		int n = epoll_pwait2(epfd, ev, max, timeout_ns < 0 ? NULL : &ts, NULL);
		if (n >= 0 || errno != ENOSYS)
			return n;
		if (!atomic_exchange_explicit(&no_pwait2, true, memory_order_relaxed))
			vqs_info("sched: no epoll_pwait2 (ENOSYS): timed sleeps use ppoll");
	}
	if (timeout_ns < 0)
		return epoll_wait(epfd, ev, max, -1);
	struct pollfd p = {.fd = epfd, .events = POLLIN};
	int r = ppoll(&p, 1, &ts, NULL);
	/* Another worker of the group may take the events in between: then it reads as a timeout. */
	return r > 0 ? epoll_wait(epfd, ev, max, 0) : r;
}

/* The reads after a measured wake-up wait until the requests it brought are served: a read of
 * the thread's CPU clock is a system call (~1.3 us here) and of its schedstat a pread (1-4 us),
 * and made before the turn they put both on the path of the wake-up's first request. Every nap
 * is measured, so a request a nap's re-poll found waited them every time; a sleeping worker
 * measures one sleep in ADAPT_SLEEP_MEASURE_EVERY (test_sched_hold,
 * test_measured_wake_reads_after_its_request). The span from the wake-up to the reads ran on
 * the CPU (less any run queue wait in it, which the schedstat counts into W instead): it is
 * taken out of the sleep's CPU. */
void sched_cost_settle(struct sched_worker *w, uint64_t now)
{
	struct sched_wake_reads *r = &w->pending;
	uint64_t cpu = sched_worker_cpu_ns(w);
	uint64_t q1 = r->queued_ns != SCHED_QUEUED_UNKNOWN ? sched_worker_queued_ns(w)
							   : SCHED_QUEUED_UNKNOWN;
	uint64_t queued = q1 != SCHED_QUEUED_UNKNOWN ? q1 - r->queued_ns : SCHED_QUEUED_UNKNOWN;
	uint64_t awake = now - r->woke_ns, spent = cpu - r->cpu_ns;
	sched_cost_woke(w, now, cpu, r->event, spent > awake ? spent - awake : 0,
			r->timed ? SCHED_QUEUED_UNKNOWN : queued);
	if (r->timed)
		sched_cost_timed_wake(w, r->asked_ns, r->slept_ns, queued);
	r->woke_ns = 0;
}

/* Sleep on the group's epoll set at most timeout_ns (-1: until an event), then dispatch what woke
 * the worker; a timeout is a timed wake-up for the cost model to learn from. */
static void wait_events(struct sched_worker *w, int64_t timeout_ns)
{
	struct sched_group *g = w->g;
	struct epoll_event ev[64];
	if (w->pending.woke_ns)
		sched_cost_settle(w, vqs_now_ns()); /* the last wake-up brought no request */
	/* seq_cst pair with group_push: announce, then re-check the list. */
	atomic_fetch_add(&g->sleepers, 1);
	if (atomic_load(&g->nready) > 0 || atomic_load(&g->stop)) {
		atomic_fetch_sub(&g->sleepers, 1);
		return;
	}
	/* adaptive: a sample of the CPU the worker got while awake since its last read (policy.c,
	 * the stall), and the start of what the policy measures around this sleep
	 * (sched_cost_sleep_reads: the sleep's CPU, c or a nap's, and its run queue wait, W) */
	bool adaptive = w->s->pol->id == VQS_POLICY_ADAPTIVE;
	enum sched_sleep_reads reads =
		adaptive ? sched_cost_sleep_reads(w, timeout_ns >= 0) : SCHED_READS_NONE;
	uint64_t q0 = reads == SCHED_READS_CPU_QUEUED ? sched_worker_queued_ns(w)
						       : SCHED_QUEUED_UNKNOWN;
	uint64_t t = vqs_now_ns(), c0 = 0;
	if (reads != SCHED_READS_NONE || (adaptive && w->mark_ns)) {
		c0 = sched_worker_cpu_ns(w);
		sched_cost_sample(w, t, c0);
	}
	if (adaptive && timeout_ns >= 0)
		sched_cost_nap_start(w, c0);
	int n = sched_epoll_wait_ns(g->epfd, ev, 64, timeout_ns);
	uint64_t now = vqs_now_ns();
	w->now_ns = now;
	uint64_t slept = now - t;
	w->awake_ns = sched_awake_after_sleep(w->awake_ns, t, now, timeout_ns >= 0);
	atomic_fetch_sub(&g->sleepers, 1);
	stat_add(&w->c.idle_ns, slept);
	stat_add(&w->c.wakeups, 1);
	if (n < 0 && errno != EINTR)
		vqs_err("sched: epoll wait failed: %d", errno);
	if (adaptive) {
		sched_cost_wake(w);
		/* the sleep's CPU and run queue wait are read once the wake-up's requests are
		 * served (sched_cost_settle); a nap that an event ended teaches W too */
		if (reads != SCHED_READS_NONE && n >= 0)
			w->pending = (struct sched_wake_reads){
				.woke_ns = now,
				.cpu_ns = c0,
				.queued_ns = q0,
				.asked_ns = timeout_ns >= 0 ? (uint64_t)timeout_ns : 0,
				.slept_ns = slept,
				.event = n > 0 && timeout_ns < 0,
				.timed = !n && timeout_ns >= 0,
			};
	}
	if (n > 0)
		dispatch(w, ev, n, now);
}

/* Nothing ready: sleep until a kick, a doorbell (wake, completion, stop) or a signal. */
void sched_worker_sleep(struct sched_worker *w)
{
	wait_events(w, -1);
}

/*
 * The deferred re-poll's nap: the same sleep, bounded. Its queues keep notifications off, so only
 * the timer (or a kick of another, armed queue, a doorbell, a stop) ends it; the worker then polls
 * them again. The worker thread's timer slack is 1 ns (worker.c): at the default 50 us a 10 us
 * timeout slept 80-100 us here; epoll_pwait2 took the same time to wake as clock_nanosleep and
 * a timerfd (vqs-timer-cost), and is the one of them a kick also ends.
 */
void sched_worker_nap(struct sched_worker *w, uint64_t ns)
{
	stat_add(&w->c.naps, 1);
	if (w->renting)
		stat_add(&w->c.rent_naps, 1);
	wait_events(w, (int64_t)ns);
}

void sched_check_events(struct sched_worker *w, uint64_t now)
{
	struct epoll_event ev[64];
	int n = epoll_wait(w->g->epfd, ev, 64, 0);
	if (n > 0)
		dispatch(w, ev, n, now);
}
