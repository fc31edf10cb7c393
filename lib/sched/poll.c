/* SPDX-License-Identifier: MIT */
/*
 * Keeping queues polled without a trip through the ready list: a worker with a group of its own
 * holds the queues that stay polled (RUNNING, owned by it) and, between ready-list turns, looks at
 * them lightly until one has news. A group's only queue is the hold set with one member.
 */
#include <string.h>

#include "sched/internal.h"
#include "sched/slots.h"

/* Rounds of light looks at the held queues between two full turns of each (see
 * sched_poll_held); one call makes at most about SPIN_LOOKS looks (~20-50 us of them here) and
 * leaves the rest of the rounds to the next. */
#define SPIN_POLLS 64u
#define SPIN_LOOKS 1024u

/*
 * End of a turn that wants the queue polled again (`again`). The worker keeps it instead of
 * requeueing it when nobody else could take it next (its group is its own, or the queue is its
 * group's only one): held, still RUNNING, looked at lightly between ready-list turns
 * (sched_poll_held), so an empty poll of a held queue is a few loads where a requeue is a list
 * push, a lock, a take and two state CASes. This is the one way a queue stays polled; a queue is
 * requeued only when the worker cannot keep it: a pool worker with other queues in the shared
 * group (any worker may take it next), a full hold list, a pause request.
 */
bool sched_hold(struct sched_worker *w, struct vqs_queue *q, bool again)
{
	if (again && w->nheld < SCHED_HELD_MAX &&
	    (w->own_group || atomic_load_explicit(&w->g->nqueues, memory_order_relaxed) <= 1) &&
	    !(atomic_load_explicit(&q->state, memory_order_relaxed) & Q_PAUSE_REQ)) {
		w->held[w->nheld++] = q;
		return true;
	}
	return false;
}

/* Anything for a held queue to do: chains, completions handed over, a wake, a pause request, a
 * broken ring (the turn reports it). The ring is looked at through the queue's session *ss:
 * begun by its first look (*open false), looked at again by the next ones
 * (vqs_vq_session_look) while it stays in its section (*open: begun, in its section). A look
 * that found chains returns with *has their count. Inline: it is the loop of a worker that
 * waits for work. Inside the read-side section. */
static inline __attribute__((always_inline)) bool
held_has_news(struct vqs_queue *q, struct vqs_vq_session *ss, bool *open, unsigned *has)
{
	*has = 0;
	if ((atomic_load_explicit(&q->state, memory_order_relaxed) & (Q_PENDING | Q_PAUSE_REQ)) ||
	    atomic_load_explicit(&q->wake_req, memory_order_relaxed) || !lf_empty(&q->done))
		return true;
	int rc = *open ? vqs_vq_session_look(ss) : vqs_vq_session_begin(q->vq, ss);
	*open = rc >= 0; /* a session that failed left its section */
	if (rc > 0) {
		*has = (unsigned)rc;
		return true;
	}
	return rc < 0 && vqs_vq_error(q->vq) != VQS_VQ_OK;
}

/* Leave an open look's section. */
static inline void held_close(struct vqs_vq_session *ss, bool *open)
{
	if (*open)
		vqs_vq_session_pause(ss);
	*open = false;
}

/* Whether every held queue is to be re-polled after a nap rather than by spinning (the adaptive
 * policy's deferred re-poll). */
static bool held_nap_flags(const struct sched_worker *w)
{
	for (unsigned i = 0; i < w->nheld; i++)
		if (!w->held[i]->ad.nap)
			return false;
	return true;
}

/* held_nap_flags, and nothing is listed or has news: then the worker naps. The flags first: a
 * spinning worker takes no read-side section for this. */
static bool held_all_nap(struct sched_worker *w)
{
	if (!held_nap_flags(w))
		return false;
	if (atomic_load_explicit(&w->g->nready, memory_order_relaxed) > 0)
		return false;
	bool news = false;
	vqs_mem_read_lock(); /* held_has_news reads the rings */
	for (unsigned i = 0; i < w->nheld && !news; i++) {
		struct vqs_vq_session ss;
		bool open = false;
		unsigned has;
		news = held_has_news(w->held[i], &ss, &open, &has);
		held_close(&ss, &open);
	}
	vqs_mem_read_unlock();
	return !news;
}

/*
 * Rounds of light looks at the held queues, then the due ones' full turns (see sched_poll_held).
 * Each held queue keeps one ring session through the rounds (held_has_news): inside the rounds'
 * one section a look after the first is the avail index (packed: the next slot's flags) and a
 * test for a break, where a session's begin and pause also checked the queue and entered and
 * left a nested section (95 of a look's ~150 instructions). The sessions leave their sections
 * before any turn, whose handler may block; the look that found chains is handed to its turn.
 * *in_section: open on entry (the caller's); on return, whether the last turn left the worker in
 * a section (see sched_run_taken). Returns whether a turn served requests.
 */
static bool held_looks(struct sched_worker *w, bool *in_section)
{
	struct vqs_queue *due[SCHED_HELD_MAX];
	struct vqs_vq_session ss[SCHED_HELD_MAX];
	bool open[SCHED_HELD_MAX];
	unsigned n = w->nheld, ndue = 0, kept = 0, first = n, empty_rounds = 0, has = 0;
	unsigned rounds = w->held_rounds;
	uint64_t looks = 0, reqs = w->reqs;
	/* The look of the queue that ended the rounds (held[first]), for its turn: the first due. */
	struct sched_look look = {.has = 0};
	bool all;
	memset(open, 0, n * sizeof(*open));
	/* No pause instruction: measured no better here, and a guest's tight PAUSE loop can take a
	 * pause-loop exit to the hypervisor. */
	while (!(all = ++rounds >= SPIN_POLLS)) {
		for (first = 0; first < n && !held_has_news(w->held[first], &ss[first], &open[first],
							    &has);
		     first++)
			;
		if (first < n)
			break;
		empty_rounds++;
		if (atomic_load_explicit(&w->g->nready, memory_order_relaxed) > 0 ||
		    empty_rounds * n >= SPIN_LOOKS)
			break;
	}
	w->held_rounds = all ? 0 : rounds;
	if (all)
		first = 0;
	else if (first < n && has) {
		look.ss = ss[first]; /* its section goes with it */
		look.has = has;
		open[first] = false;
	}
	/* The round that ended the loop looked at held[0..first) and found nothing. */
	for (unsigned i = 0; i < n; i++) {
		struct vqs_queue *q = w->held[i];
		unsigned empty = empty_rounds + (!all && first < n && i < first), other;
		/* a turn of its own begins after the first's handler */
		bool news = i > first && !all && held_has_news(q, &ss[i], &open[i], &other);
		held_close(&ss[i], &open[i]);
		if (i == first || (i > first && (all || news))) {
			due[ndue++] = q;
		} else {
			w->held[kept++] = q;
			empty += i > first;
		}
		stat_add(&q->c.polls, empty);
		stat_add(&q->c.empty_polls, empty);
		looks += empty;
	}
	w->nheld = kept;
	stat_add(&w->c.polls, looks);
	stat_add(&w->c.empty_polls, looks);
	if (all && atomic_load_explicit(&w->g->armed, memory_order_relaxed) > 0)
		sched_check_events(w, w->now_ns); /* epoll_wait without blocking */
	/* The section goes on into the first due queue's turn, whose first batch begins inside it
	 * (sched_run_taken): the chains just seen are popped without leaving it and entering
	 * another, which costs two liburcu calls on the way from a request's arrival to its pop. */
	for (unsigned i = 0; i < ndue; i++) {
		struct vqs_queue *q = due[i];
		/* acq_rel, as sched_take_turn's CAS: takes in what a waker published before it set
		 * PENDING; this turn is the look again that PENDING asks for. A plain load first:
		 * without the flag there is nothing to take in (completions come through q->done's
		 * exchange), and a flag set after it is seen by the next round. */
		uint32_t st = atomic_load_explicit(&q->state, memory_order_relaxed);
		if (st & (Q_PENDING | Q_PAUSE_REQ))
			st = atomic_fetch_and_explicit(&q->state, ~Q_PENDING, memory_order_acq_rel);
		if (st & Q_PAUSE_REQ) {
			if (!i)
				look_drop(&look);
			if (*in_section) {
				*in_section = false;
				vqs_mem_read_unlock();
			}
			queue_unpin(q);
			sched_finish(q, true);
			continue;
		}
		/* A turn that ends inside a section hands it to the next due queue's turn, which
		 * begins inside it as the first did. */
		sched_run_taken(w, q, in_section, i ? NULL : &look);
	}
	return w->reqs != reqs;
}

/*
 * Between ready-list turns, while queues are held: rounds of light looks at each (avail index,
 * handed-over completions, a wake or a pause request; no clock read, memory-table pin or request
 * slot) inside one read-side section, until one has news, a queue gets on the ready list, or
 * SPIN_POLLS rounds have passed since every held queue last had a full turn; then a full turn
 * for those with news. The section and the loop are bounded (about SPIN_LOOKS looks, tens of
 * microseconds), so a memory-table replacement waiting for a grace period is not held up long.
 * Every SPIN_POLLS rounds every held queue gets a full turn anyway (its
 * policy's timeout needs the clock, which may let it go idle), and the worker looks for kicks of
 * its group's other queues, which it would otherwise only see when it sleeps. With one held
 * queue this is a spin on its avail index a few loads long, which is what a request arriving at
 * a polled queue waits for; with several, an empty poll costs one look instead of a requeue.
 */
void sched_poll_held(struct sched_worker *w)
{
	if (held_all_nap(w)) {
		sched_worker_nap(w, w->nap_ns);
		w->held_rounds = SPIN_POLLS - 1; /* then a full turn of each */
	}
	vqs_mem_read_lock();
	bool in_section = true;
	w->section_ns = w->now_ns; /* the latest clock read, before it */
	/* A turn that served requests ends in a section (serve): opened after its last handler, or,
	 * for a nonblocking handler, this one or a later one, at most SCHED_SECTION_NS old. The
	 * looks go on in it instead of leaving it for the worker's loop, which would enter another
	 * at once (a liburcu unlock and lock, ~100 instructions, per request of a busy-polled
	 * queue). Only then: that section is young and the rounds below bound it again, where a
	 * section that saw no handler has had its rounds. What the loop would do instead is
	 * checked first: a stop, a listed queue, a nap. */
	while (held_looks(w, &in_section) && in_section && w->nheld &&
	       !atomic_load_explicit(&w->g->stop, memory_order_relaxed) &&
	       !atomic_load_explicit(&w->g->nready, memory_order_relaxed) && !held_nap_flags(w))
		;
	if (in_section)
		vqs_mem_read_unlock();
}
