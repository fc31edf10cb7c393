/* SPDX-License-Identifier: MIT */
/*
 * The queue state machine (internal.h, comment at the top): a wake makes a queue READY or marks it
 * PENDING, a worker takes it (READY -> RUNNING) and ends its turn (READY, IDLE or PAUSED).
 */
#include "sched/internal.h"

void sched_signal(struct vqs_sched *s)
{
	pthread_mutex_lock(&s->sig_mu);
	pthread_cond_broadcast(&s->sig_cv);
	pthread_mutex_unlock(&s->sig_mu);
}

void sched_queue_wake(struct vqs_queue *q, uint64_t now)
{
	struct vqs_sched *s = q->s;
	uint32_t st = atomic_load_explicit(&q->state, memory_order_relaxed);
	uint32_t next;
	do {
		switch (st & Q_STATE_MASK) {
		case Q_IDLE:
			next = (st & ~Q_STATE_MASK) | Q_READY;
			break;
		case Q_READY:
			next = st; /* already queued: the coming turn sees this work */
			break;
		default:           /* RUNNING or PAUSED: the owner looks again before letting go */
			next = st | Q_PENDING;
			break;
		}
		/*
		 * Always a read-modify-write, even when nothing changes: acq_rel RMWs of the state
		 * are totally ordered, so the owner's next transition (sched_finish, sched_take_turn,
		 * resume_locked; acquire) sees what the waker published before (a completion on
		 * q->done, wake_req), whichever of the two came first.
		 */
	} while (!atomic_compare_exchange_weak_explicit(&q->state, &st, next, memory_order_acq_rel,
							memory_order_relaxed));
	if ((st & Q_STATE_MASK) == Q_IDLE) {
		atomic_store_explicit(&q->noticed_ns, now, memory_order_relaxed);
		group_push(atomic_load_explicit(&q->group, memory_order_acquire), q);
	} else if ((st & Q_STATE_MASK) == Q_PAUSED) {
		sched_signal(s); /* detach may be waiting for this completion */
	}
}

/* End of a turn: back on the list (again, or work arrived meanwhile), idle, or paused. */
void sched_finish(struct vqs_queue *q, bool again)
{
	/* Once PAUSED, a control thread may detach and free q: read what we need first. */
	struct vqs_sched *s = q->s;
	struct sched_group *g = atomic_load_explicit(&q->group, memory_order_relaxed);
	uint32_t st = atomic_load_explicit(&q->state, memory_order_relaxed);
	uint32_t next;
	do {
		if (st & Q_PAUSE_REQ)
			next = Q_PAUSED | (st & Q_PENDING);
		else if (again || (st & Q_PENDING))
			next = Q_READY;
		else
			next = Q_IDLE;
		/* acq_rel: release publishes this turn's owner-side state to the next owner (a
		 * worker's CAS in sched_take_turn or a control thread's in control.c); acquire pairs with a
		 * waker's CAS that set PENDING. */
	} while (!atomic_compare_exchange_weak_explicit(&q->state, &st, next, memory_order_acq_rel,
							memory_order_relaxed));
	if ((next & Q_STATE_MASK) == Q_READY)
		group_push(g, q);
	else if ((next & Q_STATE_MASK) == Q_PAUSED)
		sched_signal(s);
}

/* A queue taken off the ready list: READY -> RUNNING, or PAUSED when a pause is requested. */
bool sched_take_turn(struct vqs_queue *q)
{
	struct vqs_sched *s = q->s; /* q may be freed once PAUSED */
	uint32_t st = atomic_load_explicit(&q->state, memory_order_relaxed);
	uint32_t next;
	do
		next = (st & Q_PAUSE_REQ) ? Q_PAUSED | (st & Q_PENDING) : Q_RUNNING;
	/* acq_rel pairs with sched_finish() / sched_queue_wake / control.c transitions. */
	while (!atomic_compare_exchange_weak_explicit(&q->state, &st, next, memory_order_acq_rel,
						      memory_order_relaxed));
	if (next == Q_RUNNING)
		return true;
	sched_signal(s);
	return false;
}
