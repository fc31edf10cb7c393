/* SPDX-License-Identifier: MIT */
/*
 * Ready lists: a group's lock-free list of queues with work, the workers' FIFO take from it, and
 * the doorbell that wakes a sleeping worker of the group (see the sleep in events.c).
 */
#include <errno.h>
#include <unistd.h>

#include "sched/internal.h"
#include "util/log.h"

void group_ring(struct sched_group *g)
{
	uint64_t one = 1;
	/* The doorbell is EFD_NONBLOCK: a full counter (never reached) would only mean a wake is
	 * already pending. */
	if (write(g->bell_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		vqs_warn("sched: doorbell write failed: %d", errno);
}

void group_push(struct sched_group *g, struct vqs_queue *q)
{
	lf_push(&g->incoming, &q->ready);
	/* seq_cst: either this load sees a worker announced in sched_worker_sleep, or that worker's
	 * re-check of nready sees this increment (pairs with sched_worker_sleep). */
	atomic_fetch_add(&g->nready, 1);
	if (atomic_load(&g->sleepers) > 0)
		group_ring(g);
}

struct vqs_queue *group_take(struct sched_group *g)
{
	if (atomic_load_explicit(&g->nready, memory_order_relaxed) <= 0)
		return NULL;
	pthread_mutex_lock(&g->take_lock);
	if (!g->fifo) {
		g->fifo = lf_take_all(&g->incoming);
		for (g->fifo_tail = g->fifo; g->fifo_tail && g->fifo_tail->next;)
			g->fifo_tail = g->fifo_tail->next;
	} else if (!lf_empty(&g->incoming)) {
		/* Append newcomers behind the ones already taken, so the list stays FIFO. */
		struct lf_node *more = lf_take_all(&g->incoming);
		g->fifo_tail->next = more;
		while (g->fifo_tail->next)
			g->fifo_tail = g->fifo_tail->next;
	}
	struct lf_node *n = g->fifo;
	if (n)
		g->fifo = n->next;
	pthread_mutex_unlock(&g->take_lock);
	if (!n)
		return NULL;
	/* A pusher increments after pushing, so nready can lag a visible node: never below 0 for
	 * long, and a worker that saw nready <= 0 re-checks before sleeping. */
	atomic_fetch_sub(&g->nready, 1);
	/* Chain wakeups: one doorbell edge may stand for several pushes. */
	if (atomic_load(&g->nready) > 0 && atomic_load(&g->sleepers) > 0)
		group_ring(g);
	return (struct vqs_queue *)((char *)n - offsetof(struct vqs_queue, ready));
}
