/* SPDX-License-Identifier: MIT */
/*
 * The one worker loop every policy runs: take a ready queue and serve a turn of it (turn.c), look
 * at the queues the policy keeps polled (held, poll.c) between ready-list turns, and sleep on the
 * group's epoll set (events.c) when nothing is ready or held.
 */
#include <numa.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sched/internal.h"

char sched_tsan_grace;

static void run_queue(struct sched_worker *w, struct vqs_queue *q)
{
	bool in_section = false;
	if (sched_take_turn(q))
		sched_run_taken(w, q, &in_section, NULL);
	if (in_section)
		vqs_mem_read_unlock();
}

void *sched_worker_main(void *arg)
{
	struct sched_worker *w = arg;
	if (w->numa_node >= 0 && numa_available() >= 0)
		numa_set_preferred(w->numa_node); /* what it and its handlers allocate: its node */
	atomic_store(&w->tid, (int)gettid());
	/* Timed sleeps (the deferred re-poll's naps) end when asked, not up to 50 us later. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	w->queued_fd = sched_queued_open(); /* this thread's: opened by it */
	sched_cost_init(w);
	w->now_ns = vqs_now_ns();
	w->awake_ns = w->now_ns;
	w->mark_ns = w->now_ns;
	w->mark_cpu_ns = sched_thread_cpu_ns();
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
	if (w->queued_fd >= 0)
		close(w->queued_fd);
	return NULL;
}
