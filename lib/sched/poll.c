/* SPDX-License-Identifier: MIT */
/*
 * Keeping a queue polled without a trip through the ready list: in place when it is its group's
 * only queue (light looks between turns), held by its worker otherwise (a light look at every
 * held queue between ready-list turns).
 */
#include "sched/internal.h"

/*
 * q stays polled and its worker could only take it again: it is the one queue of the group,
 * nothing else is listed, and no control thread waits for it. Then the next poll runs right here,
 * as part of the same turn: no trip through the ready list (lock, list and state RMWs), which is
 * most of what a busy-polling worker spends between two requests. A wake meanwhile only sets
 * PENDING (the queue is RUNNING), and each poll reaps handed-over completions itself.
 */
bool sched_poll_again_here(struct sched_worker *w, struct vqs_queue *q)
{
	struct sched_group *g = w->g;
	return atomic_load_explicit(&g->nqueues, memory_order_relaxed) <= 1 &&
	       atomic_load_explicit(&g->nready, memory_order_relaxed) <= 0 &&
	       !(atomic_load_explicit(&q->state, memory_order_relaxed) & Q_PAUSE_REQ);
}

/* Light polls between two turns of a queue polled in place (see sched_spin_for_work). */
#define SPIN_POLLS 64u

/*
 * Between two turns of a queue polled in place, poll it lightly: look at the avail index and the
 * handed-over completions only, up to SPIN_POLLS times, inside one read-side section (bounded: a
 * few microseconds, so a memory-table replacement waiting for a grace period is not held up).
 * A full turn costs a clock read (the poll timeout), a memory-table pin and the counters; doing
 * one per SPIN_POLLS empty polls instead of one per poll makes the loop that waits for the next
 * request a few loads long, which is what a request arriving at a polled queue waits for.
 * Returns when it saw work or something else to look at (a pause request, a listed queue), or
 * after SPIN_POLLS looks.
 */
void sched_spin_for_work(struct sched_worker *w, struct vqs_queue *q)
{
	unsigned i = 0;
	vqs_mem_read_lock();
	/* No pause instruction: measured no better here, and a guest's tight PAUSE loop can take a
	 * pause-loop exit to the hypervisor. */
	while (i < SPIN_POLLS && lf_empty(&q->done) && !ring_has(q) && sched_poll_again_here(w, q))
		i++;
	vqs_mem_read_unlock();
	stat_add(&q->c.polls, i);
	stat_add(&q->c.empty_polls, i);
	stat_add(&w->c.polls, i);
	stat_add(&w->c.empty_polls, i);
}

/*
 * End of a turn that wants the queue polled again (`again`). A worker with a group of its own
 * keeps it instead of requeueing it: held, still RUNNING, looked at lightly between ready-list
 * turns (sched_poll_held), so an empty poll of a held queue is a few loads where a requeue is a
 * list push, a lock, a take and two state CASes. A pool worker requeues, so that any worker may take
 * the queue next; so does a worker whose hold list is full, and one asked to pause the queue.
 */
void sched_hold_or_finish(struct sched_worker *w, struct vqs_queue *q, bool again)
{
	if (again && w->own_group && w->nheld < SCHED_HELD_MAX &&
	    !(atomic_load_explicit(&q->state, memory_order_relaxed) & Q_PAUSE_REQ)) {
		w->held[w->nheld++] = q;
		return;
	}
	sched_finish(q, again);
}

/* Anything for a held queue to do: chains, completions handed over, a wake, a pause request. */
static bool held_has_news(struct vqs_queue *q)
{
	return (atomic_load_explicit(&q->state, memory_order_relaxed) & (Q_PENDING | Q_PAUSE_REQ)) ||
	       atomic_load_explicit(&q->wake_req, memory_order_relaxed) || !lf_empty(&q->done) ||
	       ring_has(q);
}

/*
 * Between ready-list turns, while queues are held: one light look at each (inside one read-side
 * section, no clock read), and a full turn for those with news. Every SPIN_POLLS rounds every held
 * queue gets a full turn anyway (its policy's timeout needs the clock, which may let it go idle),
 * and the worker looks for kicks of its group's other queues, which it would otherwise only see
 * when it sleeps.
 */
void sched_poll_held(struct sched_worker *w)
{
	struct vqs_queue *due[SCHED_HELD_MAX];
	unsigned ndue = 0, kept = 0;
	bool all = ++w->held_rounds >= SPIN_POLLS;
	if (all)
		w->held_rounds = 0;
	vqs_mem_read_lock();
	for (unsigned i = 0; i < w->nheld; i++) {
		struct vqs_queue *q = w->held[i];
		if (all || held_has_news(q)) {
			due[ndue++] = q;
			continue;
		}
		w->held[kept++] = q;
		stat_add(&q->c.polls, 1);
		stat_add(&q->c.empty_polls, 1);
		stat_add(&w->c.polls, 1);
		stat_add(&w->c.empty_polls, 1);
	}
	w->nheld = kept;
	vqs_mem_read_unlock();
	if (all && atomic_load_explicit(&w->g->armed, memory_order_relaxed) > 0)
		sched_check_events(w, w->now_ns);
	for (unsigned i = 0; i < ndue; i++) {
		struct vqs_queue *q = due[i];
		/* acq_rel, as sched_take_turn's CAS: takes in what a waker published before it set
		 * PENDING; this turn is the look again that PENDING asks for. */
		uint32_t st = atomic_fetch_and_explicit(&q->state, ~Q_PENDING, memory_order_acq_rel);
		if (st & Q_PAUSE_REQ)
			sched_finish(q, true);
		else
			sched_run_taken(w, q);
	}
}
