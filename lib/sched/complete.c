/* SPDX-License-Identifier: MIT */
/*
 * Completion: vqs_req_complete on the queue's worker (staged with its batch, or filled at once)
 * or from any other thread (handed over on q->done and reaped by the queue's next turn), and the
 * flush and call decision that publishes them. Also the handler-side queue calls.
 */
#include <errno.h>
#include <unistd.h>
#include <urcu-bp.h>

#include "sched/internal.h"
#include "sched/slots.h"
#include "util/log.h"
#include "util/tsan.h"

/* The batch whose handler runs on this thread right now. Read once per completed request:
 * initial-exec makes that a plain %fs-relative load instead of a __tls_get_addr call (the shared
 * library's default model). The cost is two pointers of the static TLS surplus glibc keeps for
 * libraries loaded with dlopen. */
_Thread_local struct sched_running sched_running __attribute__((tls_model("initial-exec")));

/* Write r's used entry in session ss on q's ring. Owner of q. Latency is counted by the
 * caller. */
static void fill(struct vqs_vq_session *ss, struct vqs_queue *q, struct req_slot *r,
		 uint32_t written)
{
	const struct vqs_elem *e = &r->req.elem;
	written = checked_written(r, written);
	if (vqs_vq_session_fill(ss, &e, &written, 1) < 0)
		warn_rejected(e);
	stat_add(&q->c.reqs, 1);
}

/* Publish the completed requests at the head of the order, oldest first, up to the first one
 * still outstanding. After it, the head is never SLOT_HELD. Owner of q. */
static void order_drain(struct vqs_vq_session *ss, struct vqs_queue *q)
{
	uint64_t now = 0;
	while (q->ord_len) {
		struct req_slot *r = slot_of(q, q->order[q->ord_head]);
		if (r->st != SLOT_HELD)
			break;
		order_advance(q, 1);
		fill(ss, q, r, r->written);
		if (!now)
			now = vqs_now_ns();
		stat_latency(q, r->t0_ns, now, 1);
		slot_put(q, r);
	}
}

void sched_end_call(struct vqs_queue *q, struct vqs_vq_session *ss)
{
	bool call;
	if (!vqs_vq_session_end(ss, &call))
		return;
	if (!call) {
		stat_add(&q->c.calls_suppressed, 1);
		return;
	}
	int fd = atomic_load_explicit(&q->call_fd, memory_order_relaxed);
	uint64_t one = 1;
	if (fd >= 0 && write(fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		vqs_warn("sched: call eventfd write failed: %d", errno);
	stat_add(&q->c.calls, 1);
}

void sched_reap(struct vqs_queue *q)
{
	/* A plain load first: a polling worker reaps once per poll, and the list is nearly always
	 * empty; no read-modify-write on a line completers write unless there is something. */
	if (lf_empty(&q->done))
		return;
	struct lf_node *n = lf_take_all(&q->done);
	uint64_t now = vqs_now_ns();
	struct vqs_vq_session ss = {.vq = q->vq}; /* completes only: no begin */
	while (n) {
		struct req_slot *r = (struct req_slot *)((char *)n - offsetof(struct req_slot, done));
		n = n->next;
		stat_add(&q->c.async_completions, 1);
		if (q->in_order) {
			r->st = SLOT_HELD;
			continue;
		}
		fill(&ss, q, r, r->written);
		stat_latency(q, r->t0_ns, now, 1);
		slot_put(q, r);
	}
	if (q->in_order)
		order_drain(&ss, q);
	sched_end_call(q, &ss);
}

/* Hand completed requests (a chain linked newest to oldest) over to q's worker from another
 * thread: one push, one wake, whatever their number. */
static void hand_over_done(struct vqs_queue *q, struct lf_node *newest, struct lf_node *oldest)
{
	/* The read-side section keeps q alive until the wake is done: detach frees q only after a
	 * grace period (control.c), and may otherwise see the completion and free q first. */
	urcu_bp_read_lock();
	lf_push_chain(&q->done, newest, oldest);
	atomic_fetch_add_explicit(&q->c.async_handovers, 1, memory_order_relaxed);
	sched_queue_wake(q, vqs_now_ns());
	vqs_tsan_release(&sched_tsan_grace);
	urcu_bp_read_unlock();
}

/* vqs_req_complete of anything but a request of the current batch on its worker: out of line,
 * so that the common case saves no registers for the session this one may need. */
static __attribute__((noinline)) void complete_other(struct req_slot *r, struct vqs_queue *q,
						     uint32_t written)
{
	if (sched_running.q != q) {
		r->written = written;
		hand_over_done(q, &r->done, &r->done);
		return;
	}
	/* On q's worker inside its handler: q is ours. */
	if (r->st == SLOT_HANDED) { /* of the batch, reported longer than its buffer */
		struct sched_worker *w = sched_running.w;
		unsigned k = w->nstaged++;
		stage_here(&w->fill_elems[k], &w->fill_written[k], r, checked_written(r, written));
		return;
	}
	if (r->st == SLOT_DONE_HERE || r->st == SLOT_HELD) {
		vqs_warn("sched: request for chain %u completed twice", r->req.elem.id);
		return;
	}
	/* An older request: its used entry now, published with the batch's at the turn's end. */
	struct vqs_vq_session ss = {.vq = q->vq};
	if (q->in_order) {
		r->written = written;
		r->st = SLOT_HELD;
		order_drain(&ss, q);
	} else {
		fill(&ss, q, r, written);
		stat_latency(q, r->t0_ns, vqs_now_ns(), 1);
		slot_put(q, r);
	}
	vqs_vq_session_pause(&ss);
}

void vqs_req_complete(struct vqs_req *req, uint32_t written)
{
	struct req_slot *r = (struct req_slot *)req;
	struct vqs_queue *q = r->q;
	/* A request of the current batch on its worker, inside the handler: staged for the batch's
	 * one fill when the handler returns (one ring call) and timed after the flush (one clock
	 * read per batch). */
	if (sched_running.q == q && r->st == SLOT_HANDED && written <= r->req.elem.in_len) {
		struct sched_worker *w = sched_running.w;
		unsigned k = w->nstaged++;
		stage_here(&w->fill_elems[k], &w->fill_written[k], r, written);
		return;
	}
	complete_other(r, q, written);
}

/* Stage the run of requests of the current batch (q's, SLOT_HANDED, written within their
 * buffers) at the start of reqs[0..n), as vqs_req_complete would each; returns how many. Out of
 * line: inlined, its loop kept its state in fewer registers (19 instructions a request, 17 in a
 * function of its own). */
static __attribute__((noinline)) unsigned stage_run(struct sched_worker *w, struct vqs_queue *q,
						     struct vqs_req *const *reqs,
						     const uint32_t *written, unsigned n)
{
	const struct vqs_elem **fe = w->fill_elems + w->nstaged;
	uint32_t *fw = w->fill_written + w->nstaged;
	unsigned i = 0;
	for (; i < n; i++) {
		struct req_slot *r = (struct req_slot *)reqs[i];
		if (r->q != q || r->st != SLOT_HANDED || written[i] > r->req.elem.in_len)
			break;
		stage_here(&fe[i], &fw[i], r, written[i]);
	}
	w->nstaged += i;
	return i;
}

/* The handler completing the batch it was handed, from its first request on, in its order
 * (reqs is the batch's array), before it completed any of it (nothing staged): each request is
 * then the running batch's and SLOT_HANDED, and its place in the fill arrays is its place in the
 * batch, so only its length is tested. Not for IN_ORDER queues, whose turn stages again from
 * each request's `written` (stage_in_order); no other reads it of a request staged here. Returns
 * how many were staged, up to the first reported longer than its buffer. */
static __attribute__((noinline)) unsigned stage_batch(struct sched_worker *w,
						      struct req_slot *const *reqs,
						      const uint32_t *written, unsigned n)
{
	unsigned i = 0;
	for (; i < n; i++) {
		struct req_slot *r = reqs[i];
		uint32_t wr = written[i]; /* once: the fill arrays' stores could alias it */
		if (wr > r->req.elem.in_len)
			break;
		r->st = SLOT_DONE_HERE;
		w->fill_elems[i] = &r->req.elem;
		w->fill_written[i] = wr;
	}
	w->nstaged = i;
	return i;
}

void vqs_req_complete_batch(struct vqs_req *const *reqs, const uint32_t *written, unsigned n)
{
	unsigned i = 0;
	struct sched_worker *w = sched_running.w;
	if (sched_running.q && reqs == (struct vqs_req *const *)w->batch && n <= sched_running.n &&
	    !w->nstaged && !sched_running.q->in_order)
		i = stage_batch(w, w->batch, written, n);
	while (i < n) {
		struct req_slot *r = (struct req_slot *)reqs[i];
		struct vqs_queue *q = r->q;
		if (sched_running.q == q) {
			i += stage_run(sched_running.w, q, reqs + i, written + i, n - i);
			/* the first other one of q's, as vqs_req_complete would */
			if (i < n && (r = (struct req_slot *)reqs[i])->q == q) {
				complete_other(r, q, written[i]);
				i++;
			}
			continue;
		}
		/* The run of q's requests from here: linked newest first, handed over at once. */
		struct lf_node *oldest = &r->done, *newest = oldest;
		r->written = written[i];
		for (i++; i < n && ((struct req_slot *)reqs[i])->q == q; i++) {
			struct req_slot *s = (struct req_slot *)reqs[i];
			s->written = written[i];
			s->done.next = newest;
			newest = &s->done;
		}
		hand_over_done(q, newest, oldest);
	}
}

struct vqs_queue *vqs_req_queue(const struct vqs_req *req)
{
	return ((const struct req_slot *)req)->q;
}

uint64_t vqs_queue_clock_ns(const struct vqs_queue *q) { return q->clock_ns; }

void vqs_queue_wake(struct vqs_queue *q)
{
	atomic_store_explicit(&q->wake_req, true, memory_order_relaxed);
	/* From a handler (one queue's handler waking another, say), the time its worker read before
	 * the call will do for when q was noticed, without a clock read: it only starts q's latency
	 * a little early. */
	struct vqs_queue *running = sched_running.q;
	uint64_t now = running ? running->clock_ns : vqs_now_ns();
	/* The flag is published by the acq_rel CAS in sched_queue_wake, or seen by the running
	 * owner's exchange at its next turn (which PENDING guarantees). */
	urcu_bp_read_lock();
	sched_queue_wake(q, now);
	vqs_tsan_release(&sched_tsan_grace);
	urcu_bp_read_unlock();
}
