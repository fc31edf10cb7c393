/* SPDX-License-Identifier: MIT */
/*
 * The one worker loop every policy runs: take a ready queue and serve a turn of it (turn.c), look
 * at the queues the policy keeps polled (held, poll.c) between ready-list turns, and sleep on the
 * group's epoll set (events.c) when nothing is ready or held.
 */
#include <numa.h>
#include <unistd.h>

#include "sched/internal.h"

char sched_tsan_grace;

/* While queues keep being requeued the worker never sleeps, so it looks for kicks of the other
 * queues between turns: after every turn that served requests and goes back on the list (so a
 * kicked queue gets on the list before it), and every EVENT_CHECK_TURNS turns otherwise (empty
 * polls). A group with one queue has no other queue a kick could bring in, so it never looks:
 * that epoll_wait was a system call per request for a busy-polled queue. */
#define EVENT_CHECK_TURNS 32u

/* A turn of q, which this worker owns (RUNNING); then q is held, requeued, idle or paused. */
void sched_run_taken(struct sched_worker *w, struct vqs_queue *q)
{
	uint64_t now = w->now_ns, pkts;
	bool again = sched_one_turn(w, q, &now, &pkts);
	/* No queue of the group with notifications on: no kick could concern one (a late kick for
	 * a polled queue waits in the epoll set for the next look). */
	if (atomic_load_explicit(&w->g->nqueues, memory_order_relaxed) > 1 &&
	    atomic_load_explicit(&w->g->armed, memory_order_relaxed) > 0 &&
	    ((again && pkts) || ++w->turns_since_check >= EVENT_CHECK_TURNS)) {
		w->turns_since_check = 0;
		sched_check_events(w, now);
	}
	w->now_ns = now;
	sched_hold_or_finish(w, q, again);
}

static void run_queue(struct sched_worker *w, struct vqs_queue *q)
{
	if (sched_take_turn(q))
		sched_run_taken(w, q);
}

void *sched_worker_main(void *arg)
{
	struct sched_worker *w = arg;
	if (w->numa_node >= 0 && numa_available() >= 0)
		numa_set_preferred(w->numa_node); /* what it and its handlers allocate: its node */
	atomic_store(&w->tid, (int)gettid());
	w->now_ns = vqs_now_ns();
	w->awake_ns = w->now_ns;
	sched_signal(w->s);
	while (!atomic_load_explicit(&w->g->stop, memory_order_acquire)) {
		struct vqs_queue *q = group_take(w->g);
		if (q)
			run_queue(w, q);
		/* Held queues get a look after every list turn too: a list that never empties (more
		 * polled queues than the hold list takes, say) must not starve them. */
		if (w->nheld)
			sched_poll_held(w);
		else if (!q)
			sched_worker_sleep(w);
	}
	group_ring(w->g); /* pass the stop on to the group's next sleeping worker */
	return NULL;
}
