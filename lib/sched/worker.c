/* SPDX-License-Identifier: MIT */
/*
 * The one worker loop every policy runs: take a ready queue and serve one turn of it (publish
 * handed-over completions, pop, run the handler, fill/flush, call), let the policy decide whether
 * it stays polled, then sleep on the group's epoll set when nothing is ready.
 */
#include <errno.h>
#include <numa.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <urcu-bp.h>

#include "mem/pin.h"
#include "sched/internal.h"
#include "util/log.h"
#include "util/prefetch.h"
#include "util/tsan.h"

char sched_tsan_grace;

/* The queue whose handler runs on this thread right now: completions for it fill directly.
 * Read once per completed request: initial-exec makes that a plain %fs-relative load instead of
 * a __tls_get_addr call (the shared library's default model). The cost is one pointer of the
 * static TLS surplus glibc keeps for libraries loaded with dlopen. */
static _Thread_local struct vqs_queue *tls_running __attribute__((tls_model("initial-exec")));

/* ---- ready lists ---- */

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
	/* seq_cst: either this load sees a worker announced in worker_sleep, or that worker's
	 * re-check of nready sees this increment (pairs with worker_sleep). */
	atomic_fetch_add(&g->nready, 1);
	if (atomic_load(&g->sleepers) > 0)
		group_ring(g);
}

static struct vqs_queue *group_take(struct sched_group *g)
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
		 * are totally ordered, so the owner's next transition (finish, take_turn,
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

/* ---- request slots ---- */

static struct req_slot *slot_get(struct vqs_queue *q)
{
	struct req_slot *r = q->free_slots;
	q->free_slots = r->free_next;
	q->nfree--;
	return r;
}

/* Drop n of pin's references; the last one unpins the table. */
static void pin_drop(struct vqs_queue *q, struct pin_ref *pin, unsigned n)
{
	if ((pin->refs -= n))
		return;
	vqs_mem_table_put(pin->t);
	pin->next_free = q->free_pins;
	q->free_pins = pin;
}

/* Free r, whose reference on its batch's pin (if any) the caller drops. */
static void slot_free(struct vqs_queue *q, struct req_slot *r)
{
	r->pin = NULL;
	r->st = SLOT_FREE;
	r->free_next = q->free_slots;
	q->free_slots = r;
	q->nfree++;
}

static void slot_put(struct vqs_queue *q, struct req_slot *r)
{
	if (r->pin)
		pin_drop(q, r->pin, 1);
	slot_free(q, r);
}

/* Count the latency of n requests noticed at t0, from then to `now`. Owner of q. */
static void stat_latency(struct vqs_queue *q, uint64_t t0, uint64_t now, unsigned n)
{
	stat_add(&q->c.latency_hist[stat_bucket(now - t0, VQS_STATS_LAT_BUCKETS)], n);
}

/* What a handler reported written, within r's writable bytes. */
static uint32_t checked_written(const struct req_slot *r, uint32_t written)
{
	if (written > r->req.elem.in_len) {
		vqs_warn("sched: handler reported %u bytes written into a %u-byte buffer", written,
			 r->req.elem.in_len);
		return r->req.elem.in_len;
	}
	return written;
}

static void warn_rejected(const struct vqs_elem *e)
{
	vqs_warn("sched: used entry for chain %u rejected (queue reset?)", e->id);
}

/* Stage r's used entry. Owner of q. Latency is counted by the caller. */
static void fill(struct vqs_queue *q, struct req_slot *r, uint32_t written)
{
	if (vqs_vq_fill(q->vq, &r->req.elem, checked_written(r, written)) < 0)
		warn_rejected(&r->req.elem);
	stat_add(&q->c.reqs, 1);
}

/* Stage the used entries of the m requests collected in w->fill_elems/fill_written, in that
 * order, with as few ring calls as the ring allows (one, unless it refuses one, which is reported
 * and skipped as fill does). Owner of q. */
static void fill_collected(struct sched_worker *w, struct vqs_queue *q, unsigned m)
{
	for (unsigned done = 0; done < m;) {
		int k = vqs_vq_fill_batch(q->vq, w->fill_elems + done, w->fill_written + done,
					  m - done);
		if (k < 0) {
			warn_rejected(w->fill_elems[done]);
			k = 1;
		}
		done += (unsigned)k;
	}
	stat_add(&q->c.reqs, m);
}

/* ---- IN_ORDER: completions reach the ring in pop order ---- */

void sched_queue_order_init(struct vqs_queue *q)
{
	struct vqs_vq_config c;
	/* Only while nothing is outstanding: the order holds every request popped since. */
	if (q->nfree == q->nslots && vqs_vq_get_config(q->vq, &c) == 0)
		q->in_order = c.features & VQS_BIT(VQS_F_IN_ORDER);
}

static unsigned order_at(const struct vqs_queue *q, unsigned i)
{
	unsigned k = q->ord_head + i;
	return k < q->nslots ? k : k - q->nslots;
}

/* The m oldest requests left the order (published). */
static void order_advance(struct vqs_queue *q, unsigned m)
{
	q->ord_head = order_at(q, m);
	q->ord_len -= m;
}

/* Publish the completed requests at the head of the order, oldest first, up to the first one
 * still outstanding. After it, the head is never SLOT_HELD. Owner of q. */
static void order_drain(struct vqs_queue *q)
{
	uint64_t now = 0;
	while (q->ord_len) {
		struct req_slot *r = q->order[q->ord_head];
		if (r->st != SLOT_HELD)
			break;
		order_advance(q, 1);
		fill(q, r, r->written);
		if (!now)
			now = vqs_now_ns();
		stat_latency(q, r->t0_ns, now, 1);
		slot_put(q, r);
	}
}

/* Publish what was filled and decide the call (EVENT_IDX coalesces it per batch). Owner of q. */
static void flush_call(struct vqs_queue *q)
{
	if (!vqs_vq_flush(q->vq))
		return;
	if (!vqs_vq_need_call(q->vq)) {
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
	while (n) {
		struct req_slot *r = (struct req_slot *)((char *)n - offsetof(struct req_slot, done));
		n = n->next;
		stat_add(&q->c.async_completions, 1);
		if (q->in_order) {
			r->st = SLOT_HELD;
			continue;
		}
		fill(q, r, r->written);
		stat_latency(q, r->t0_ns, now, 1);
		slot_put(q, r);
	}
	if (q->in_order)
		order_drain(q);
	flush_call(q);
}

void vqs_req_complete(struct vqs_req *req, uint32_t written)
{
	struct req_slot *r = (struct req_slot *)req;
	struct vqs_queue *q = r->q;
	if (tls_running == q) {
		/* On q's worker inside its handler: q is ours. A request of the current batch is
		 * staged with the batch's others when the handler returns (one ring call) and
		 * timed after the flush (one clock read per batch); an older one right away. */
		if (r->st == SLOT_HANDED) {
			r->written = written;
			r->st = SLOT_DONE_HERE;
		} else if (r->st == SLOT_DONE_HERE || r->st == SLOT_HELD) {
			vqs_warn("sched: request for chain %u completed twice", r->req.elem.id);
		} else if (q->in_order) {
			r->written = written;
			r->st = SLOT_HELD;
			order_drain(q);
		} else {
			fill(q, r, written);
			stat_latency(q, r->t0_ns, vqs_now_ns(), 1);
			slot_put(q, r);
		}
		return;
	}
	r->written = written;
	/* The read-side section keeps q alive until the wake is done: detach frees q only after a
	 * grace period (control.c), and may otherwise see the completion and free q first. */
	urcu_bp_read_lock();
	lf_push(&q->done, &r->done);
	sched_queue_wake(q, vqs_now_ns());
	vqs_tsan_release(&sched_tsan_grace);
	urcu_bp_read_unlock();
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
	struct vqs_queue *running = tls_running;
	uint64_t now = running ? running->clock_ns : vqs_now_ns();
	/* The flag is published by the acq_rel CAS in sched_queue_wake, or seen by the running
	 * owner's exchange at its next turn (which PENDING guarantees). */
	urcu_bp_read_lock();
	sched_queue_wake(q, now);
	vqs_tsan_release(&sched_tsan_grace);
	urcu_bp_read_unlock();
}

/* ---- one turn ---- */

enum turn_end { TURN_DRAINED, TURN_BUDGET, TURN_STALLED };

/* What one turn consumed of the queue's budget. */
struct turn_budget {
	uint64_t pkts, bytes;
};

/* Start fetching the lines holding the first prefetch_lines * 64 bytes of e's first buffer (see
 * vqs_queue_opts.prefetch_lines): one line more when they straddle a line boundary, since a
 * buffer rarely starts on one (a virtio-net header then puts the Ethernet header in the next). */
static inline void prefetch_buffer(const struct vqs_elem *e, unsigned lines)
{
	if (!e->out_num && !e->in_num)
		return;
	const uint8_t *p = e->iov[0].iov_base;
	size_t len = e->iov[0].iov_len < (size_t)lines * 64 ? e->iov[0].iov_len : (size_t)lines * 64;
	if (!len)
		return;
	const uint8_t *l = (const uint8_t *)((uintptr_t)p & ~(uintptr_t)63), *end = p + len;
	if (e->out_num) {
		do
			__builtin_prefetch(l, 0);
		while ((l += 64) < end);
	} else {
		do
			vqs_prefetch_write(l);
		while ((l += 64) < end);
	}
}

/* The ring broke: stop serving q and tell the hook, once. */
static void queue_broken(struct vqs_queue *q)
{
	if (q->broken)
		return;
	q->broken = true;
	if (q->on_broken)
		q->on_broken(q, vqs_vq_error(q->vq), q->on_broken_opaque);
}

/* Pop up to want chains (want <= what the ring had a moment ago, see serve) into free slots of
 * the worker's batch, with one ring call. Returns how many; *empty when that was all the ring
 * had. */
static unsigned pop_batch(struct sched_worker *w, struct vqs_queue *q, unsigned want,
			  uint64_t t0, bool *empty)
{
	for (unsigned i = 0; i < want; i++) {
		struct req_slot *r = slot_get(q);
		r->req.elem.iov = r->iov;
		r->req.elem.iov_cap = q->iov_per_req;
		w->batch[i] = r;
		w->pop_elems[i] = &r->req.elem;
	}
	int rc = vqs_vq_pop_into(q->vq, w->pop_elems, want);
	unsigned n = rc > 0 ? (unsigned)rc : 0;
	for (unsigned i = want; i-- > n;)
		slot_free(q, w->batch[i]);
	/* Fewer than the ring had: it broke at the next chain (reported now, from its state), or
	 * that long chain waits until long chains in flight complete (-EBUSY, from the pop that
	 * tries it first: not empty, and their completions wake the queue). */
	if ((rc < 0 && rc != -EBUSY) || (n < want && vqs_vq_error(q->vq) != VQS_VQ_OK))
		queue_broken(q);
	*empty = n < want && !q->broken && rc != -EBUSY;
	for (unsigned i = 0; i < n; i++) {
		struct req_slot *r = w->batch[i];
		if (q->prefetch_lines)
			prefetch_buffer(&r->req.elem, q->prefetch_lines);
		r->st = SLOT_HANDED;
		r->t0_ns = t0;
		r->req.user = NULL;
	}
	if (q->in_order)
		for (unsigned i = 0; i < n; i++)
			q->order[order_at(q, q->ord_len++)] = w->batch[i];
	return n;
}

/* Give batch[from..n) back to the ring unconsumed. */
static void give_back(struct sched_worker *w, struct vqs_queue *q, unsigned from, unsigned n)
{
	for (unsigned i = from; i < n; i++)
		w->giveback[i - from] = w->batch[i]->req.elem;
	if (vqs_vq_unpop(q->vq, w->giveback, n - from) < 0)
		vqs_err("sched: could not give back %u requests", n - from);
	struct pin_ref *pin = w->batch[from]->pin; /* the batch's, or none before it is pinned */
	for (unsigned i = from; i < n; i++)
		slot_free(q, w->batch[i]);
	if (pin)
		pin_drop(q, pin, n - from);
	if (q->in_order)
		q->ord_len -= n - from; /* the newest popped */
}

/*
 * pop_batch, with the batch's requests sharing one pin on the memory table their chains were
 * translated through, so that the handler can run outside the read-side section: each pop
 * translates through the table current at that moment, so if the table was replaced meanwhile,
 * the chains go back and are popped again; then every iovec of the batch lies in the pinned
 * table. One pin per batch (two atomic RMWs), not one per request. Inside vqs_mem_read_lock.
 */
static unsigned pop_pinned(struct sched_worker *w, struct vqs_queue *q, unsigned want,
			   uint64_t t0, bool *empty)
{
	struct vqs_mem *mem = q->mem;
	for (;;) {
		const struct vqs_mem_table *t = vqs_mem_current(mem);
		unsigned n = pop_batch(w, q, want, t0, empty);
		if (!n)
			return 0;
		/* t cannot be freed inside the section, so no newer table has its address */
		if (vqs_mem_current(mem) == t) {
			/* A free pin is there: each pin in use holds at least one request. */
			struct pin_ref *pin = q->free_pins;
			q->free_pins = pin->next_free;
			vqs_mem_table_pin(t);
			pin->t = t;
			pin->refs = n;
			for (unsigned i = 0; i < n; i++)
				w->batch[i]->pin = pin;
			return n;
		}
		give_back(w, q, 0, n);
	}
}

/*
 * The handler returned `taken` but completed a request at or after it: a request it completed is
 * never given back (un-popping it would lose the completion and serve the chain twice), so the
 * count is raised past the last one it completed; the requests before that one count as taken
 * too. Counted, and warned once per queue. Returns the count to use.
 */
static unsigned keep_completed(struct sched_worker *w, struct vqs_queue *q, unsigned taken,
			       unsigned n)
{
	unsigned last = n;
	while (last > taken && w->batch[last - 1]->st != SLOT_DONE_HERE)
		last--;
	if (last == taken)
		return taken;
	unsigned done = 0;
	for (unsigned i = taken; i < last; i++)
		done += w->batch[i]->st == SLOT_DONE_HERE;
	stat_add(&q->c.completed_given_back, done);
	if (!q->miscount_warned) {
		q->miscount_warned = true;
		vqs_warn("sched: handler returned %u of %u requests but completed request %u; "
			 "counted as taken", taken, n, last - 1);
	}
	return last;
}

/* Run the handler on batch[0..n); returns how many it took (the rest went back to the ring).
 * Those it completed during the call are staged here, together (IN_ORDER: those with no older
 * request outstanding; the others wait in the order), and stay SLOT_DONE_HERE for
 * retire_done_here, after the flush. Outside the read-side section: the batch's pin keeps the
 * buffers mapped, so a handler that blocks holds up no grace period. */
static unsigned hand_over(struct sched_worker *w, struct vqs_queue *q, unsigned n)
{
	tls_running = q;
	unsigned taken = q->handler(q, (struct vqs_req *const *)w->batch, n, q->opaque);
	tls_running = NULL;
	if (taken > n) {
		vqs_warn("sched: handler took %u of %u requests", taken, n);
		taken = n;
	}
	if (taken < n)
		taken = keep_completed(w, q, taken, n);
	if (taken < n) {
		give_back(w, q, taken, n);
		stat_add(&q->c.given_back, n - taken);
		q->parked = true;
	}
	/* IN_ORDER: the batch's completions go to the ring now only while nothing older is
	 * outstanding (the batch is the newest in the order) and up to its first open request. */
	bool now = !q->in_order || q->ord_len == taken;
	unsigned m = 0;
	for (unsigned i = 0; i < taken; i++) {
		struct req_slot *r = w->batch[i];
		if (r->st == SLOT_DONE_HERE && now) {
			w->fill_elems[m] = &r->req.elem;
			w->fill_written[m++] = checked_written(r, r->written);
			continue;
		}
		now = !q->in_order;
		/* Still with the handler (maybe already completed elsewhere and waiting on q->done,
		 * which only q's owner reaps, later), or completed behind an open request. */
		r->st = r->st == SLOT_DONE_HERE ? SLOT_HELD : SLOT_OUT;
	}
	if (m) {
		if (q->in_order)
			order_advance(q, m);
		fill_collected(w, q, m);
	}
	return taken;
}

/* Count and free the requests of batch[0..taken) completed inside the handler call, published
 * by now. They were noticed together (one t0, pop_batch), so they share a latency bucket. Owner
 * of q. */
static void retire_done_here(struct sched_worker *w, struct vqs_queue *q, unsigned taken,
			     uint64_t now)
{
	if (!taken)
		return;
	unsigned done = 0;
	uint64_t t0 = w->batch[0]->t0_ns;
	struct pin_ref *pin = w->batch[0]->pin; /* the batch's: dropped once for all of them */
	for (unsigned i = 0; i < taken; i++) {
		struct req_slot *r = w->batch[i];
		if (r->st == SLOT_DONE_HERE) {
			done++;
			slot_free(q, r);
		}
	}
	if (done) {
		pin_drop(q, pin, done);
		stat_latency(q, t0, now, done);
	}
}

/* Chains to pop, from a cheap look at the avail index (no pop path): at least 1 when the ring is
 * broken, so it goes to the pop that reports it. Inside the read-side section. */
static unsigned ring_has(struct vqs_queue *q)
{
	unsigned n = vqs_vq_avail_count(q->vq);
	return n || vqs_vq_error(q->vq) == VQS_VQ_OK ? n : 1;
}

/* Record whether q's notifications are on, in q and in its group's count of queues a kick can
 * concern (see sched_group.armed). Owner of q. */
static void set_notify_on(struct vqs_queue *q, bool on)
{
	if (q->notify_on == on)
		return;
	q->notify_on = on;
	struct sched_group *g = atomic_load_explicit(&q->group, memory_order_relaxed);
	atomic_fetch_add_explicit(&g->armed, on ? 1 : -1, memory_order_relaxed);
}

/* Pop, hand over and publish until the ring is empty, the budget is spent, or the queue cannot
 * take more (no free slot, handler gave back, ring broken). *now: the time on entry (the turn's
 * latest clock read); on return, the latest read made (after the last handler call), so the caller
 * reads the clock once per batch, not once per step. */
static enum turn_end serve(struct sched_worker *w, struct vqs_queue *q, uint64_t *now,
			   struct turn_budget *used)
{
	struct vqs_sched *s = q->s;
	const struct sched_policy *pol = s->pol;
	/* Load first: set only by a wake that made the queue READY, so 0 on most polls. */
	uint64_t noticed = atomic_load_explicit(&q->noticed_ns, memory_order_relaxed);
	if (noticed)
		atomic_store_explicit(&q->noticed_ns, 0, memory_order_relaxed);
	uint64_t t = *now;
	uint64_t t0 = noticed && noticed < t ? noticed : t;
	uint64_t pkts = used->pkts, bytes = used->bytes;
	enum turn_end end = TURN_STALLED;

	sched_reap(q);
	if (q->notify_on && !q->parked && !q->broken) {
		vqs_vq_disable_notify(q->vq);
		set_notify_on(q, false);
	}
	while (!q->parked && !q->broken) {
		if (pkts >= s->o.budget_pkts || bytes >= s->o.budget_bytes) {
			stat_add(&q->c.budget_exhausted, 1);
			end = TURN_BUDGET;
			break;
		}
		unsigned want = pol->batch(s, q);
		if (want > s->o.budget_pkts - pkts)
			want = (unsigned)(s->o.budget_pkts - pkts);
		if (want > q->nfree)
			want = q->nfree;
		if (!want)
			break; /* every slot is out: completions will wake the queue */
		if (q->demand) {
			unsigned d = q->demand(q, q->opaque);
			if (!d) {
				q->parked = true; /* as after a give-back: until vqs_queue_wake */
				break;
			}
			if (want > d)
				want = d;
		}
		/* A look at the avail index first: an empty poll costs no more, and no more slots are
		 * taken than there are chains. The ring is read inside a read-side section that ends
		 * before the handler runs. */
		vqs_mem_read_lock();
		unsigned has = ring_has(q);
		bool empty = true;
		unsigned n = 0;
		if (has)
			n = pop_pinned(w, q, want < has ? want : has, t0, &empty);
		empty |= n == has; /* took all the look showed: the next turn looks again */
		unsigned backlog = n && !empty ? vqs_vq_avail_count(q->vq) : 0;
		vqs_mem_read_unlock();
		stat_add(&q->c.polls, 1);
		stat_add(&w->c.polls, 1);
		if (!n) {
			stat_add(&q->c.empty_polls, 1);
			stat_add(&w->c.empty_polls, 1);
			if (empty)
				end = TURN_DRAINED;
			break;
		}
		/* Found at t (the last clock read, just before this pop): what the rate estimate and
		 * the poll timeout need, at poll-loop resolution. */
		q->last_work_ns = t;
		pol->observe(s, q, n, backlog, t);
		stat_add(&q->c.batch_hist[stat_bucket(n, VQS_STATS_BATCH_BUCKETS)], 1);
		for (unsigned i = 0; i < n; i++)
			w->batch_bytes[i] = w->batch[i]->req.elem.out_len + w->batch[i]->req.elem.in_len;
		q->clock_ns = t;
		unsigned taken = hand_over(w, q, n);
		/* Publish first: the clock read (tens of ns in a VM) and the bookkeeping of the batch
		 * are not on the way of the completions to the driver. */
		flush_call(q);
		t = vqs_now_ns();
		retire_done_here(w, q, taken, t);
		/* Only what the handler took counts against the budget: given-back chains come again. */
		uint64_t b = 0;
		for (unsigned i = 0; i < taken; i++)
			b += w->batch_bytes[i];
		pkts += taken;
		bytes += b;
		stat_add(&q->c.bytes, b);
		t0 = t;
		if (empty && taken == n) {
			end = TURN_DRAINED;
			break;
		}
	}
	used->pkts = pkts;
	used->bytes = bytes;
	*now = t;
	return end;
}

/* Re-arm notifications on a ring found empty. A chain that slipped in while they were off
 * would get no kick, so enable_notify re-checks: true means keep draining (notifications are off
 * again). The event fields live in guest memory: inside the read-side section. */
static bool rearm_finds_more(struct vqs_queue *q)
{
	vqs_mem_read_lock();
	stat_add(&q->c.rearms, 1);
	bool more = vqs_vq_enable_notify(q->vq);
	if (more)
		vqs_vq_disable_notify(q->vq);
	set_notify_on(q, !more);
	vqs_mem_read_unlock();
	return more;
}

/* End of a turn: back on the list (again, or work arrived meanwhile), idle, or paused. */
static void finish(struct vqs_queue *q, bool again)
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
		 * worker's CAS in take_turn or a control thread's in control.c); acquire pairs with a
		 * waker's CAS that set PENDING. */
	} while (!atomic_compare_exchange_weak_explicit(&q->state, &st, next, memory_order_acq_rel,
							memory_order_relaxed));
	if ((next & Q_STATE_MASK) == Q_READY)
		group_push(g, q);
	else if ((next & Q_STATE_MASK) == Q_PAUSED)
		sched_signal(s);
}

/* A queue taken off the ready list: READY -> RUNNING, or PAUSED when a pause is requested. */
static bool take_turn(struct vqs_queue *q)
{
	struct vqs_sched *s = q->s; /* q may be freed once PAUSED */
	uint32_t st = atomic_load_explicit(&q->state, memory_order_relaxed);
	uint32_t next;
	do
		next = (st & Q_PAUSE_REQ) ? Q_PAUSED | (st & Q_PENDING) : Q_RUNNING;
	/* acq_rel pairs with finish() / sched_queue_wake / control.c transitions. */
	while (!atomic_compare_exchange_weak_explicit(&q->state, &st, next, memory_order_acq_rel,
						      memory_order_relaxed));
	if (next == Q_RUNNING)
		return true;
	sched_signal(s);
	return false;
}

/* ---- events ---- */

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

/* Nothing ready: sleep until a kick, a doorbell (wake, completion, stop) or a signal. */
static void worker_sleep(struct sched_worker *w)
{
	struct sched_group *g = w->g;
	struct epoll_event ev[64];
	/* seq_cst pair with group_push: announce, then re-check the list. */
	atomic_fetch_add(&g->sleepers, 1);
	if (atomic_load(&g->nready) > 0 || atomic_load(&g->stop)) {
		atomic_fetch_sub(&g->sleepers, 1);
		return;
	}
	uint64_t t = w->now_ns;
	int n = epoll_wait(g->epfd, ev, 64, -1);
	uint64_t now = vqs_now_ns();
	w->now_ns = now;
	uint64_t slept = now - t;
	w->awake_ns = sched_awake_after_sleep(w->awake_ns, t, now);
	atomic_fetch_sub(&g->sleepers, 1);
	stat_add(&w->c.idle_ns, slept);
	stat_add(&w->c.wakeups, 1);
	if (n < 0 && errno != EINTR)
		vqs_err("sched: epoll_wait failed: %d", errno);
	if (n > 0)
		dispatch(w, ev, n, now);
}

/* While queues keep being requeued the worker never sleeps, so it looks for kicks of the other
 * queues between turns: after every turn that served requests and goes back on the list (so a
 * kicked queue gets on the list before it), and every EVENT_CHECK_TURNS turns otherwise (empty
 * polls). A group with one queue has no other queue a kick could bring in, so it never looks:
 * that epoll_wait was a system call per request for a busy-polled queue. */
#define EVENT_CHECK_TURNS 32u
/* Re-arm races served within one turn before the queue goes back on the list. */
#define MAX_REARMS 4u

static void check_events(struct sched_worker *w, uint64_t now)
{
	struct epoll_event ev[64];
	int n = epoll_wait(w->g->epfd, ev, 64, 0);
	if (n > 0)
		dispatch(w, ev, n, now);
}

/*
 * q stays polled and its worker could only take it again: it is the one queue of the group,
 * nothing else is listed, and no control thread waits for it. Then the next poll runs right here,
 * as part of the same turn: no trip through the ready list (lock, list and state RMWs), which is
 * most of what a busy-polling worker spends between two requests. A wake meanwhile only sets
 * PENDING (the queue is RUNNING), and each poll reaps handed-over completions itself.
 */
static bool poll_again_here(struct sched_worker *w, struct vqs_queue *q)
{
	struct sched_group *g = w->g;
	return atomic_load_explicit(&g->nqueues, memory_order_relaxed) <= 1 &&
	       atomic_load_explicit(&g->nready, memory_order_relaxed) <= 0 &&
	       !(atomic_load_explicit(&q->state, memory_order_relaxed) & Q_PAUSE_REQ);
}

/* Light polls between two turns of a queue polled in place (see spin_for_work). */
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
static void spin_for_work(struct sched_worker *w, struct vqs_queue *q)
{
	unsigned i = 0;
	vqs_mem_read_lock();
	/* No pause instruction: measured no better here, and a guest's tight PAUSE loop can take a
	 * pause-loop exit to the hypervisor. */
	while (i < SPIN_POLLS && lf_empty(&q->done) && !ring_has(q) && poll_again_here(w, q))
		i++;
	vqs_mem_read_unlock();
	stat_add(&q->c.polls, i);
	stat_add(&q->c.empty_polls, i);
	stat_add(&w->c.polls, i);
	stat_add(&w->c.empty_polls, i);
}

/* One turn of a RUNNING queue: serve, then let the policy decide (keep polling or re-arm).
 * Returns whether the queue goes back on the list; *pkts: requests it served. */
static bool one_turn(struct sched_worker *w, struct vqs_queue *q, uint64_t *now, uint64_t *pkts)
{
	uint64_t start = *now;
	/* Load first: a relaxed load is free, the exchange only when a wake asked for it. */
	if (atomic_load_explicit(&q->wake_req, memory_order_relaxed) &&
	    atomic_exchange_explicit(&q->wake_req, false, memory_order_relaxed))
		q->parked = false;
	struct turn_budget used = {0, 0};
	bool again;
	for (unsigned rearms = 0;; rearms++) {
		enum turn_end end = serve(w, q, now, &used);
		if (end != TURN_DRAINED) {
			again = end == TURN_BUDGET;
			break;
		}
		/* Empty ring: the policy says whether to stay polled; else re-arm, and what slipped
		 * in meanwhile is served in this same turn (within its budget), not requeued. A ring
		 * that keeps saying "more" without yielding any goes back on the list instead. The
		 * clock is read here, once per empty poll: poll timeouts need the present. */
		*now = vqs_now_ns();
		again = atomic_load_explicit(&q->kick_fd, memory_order_relaxed) < 0 ||
			q->s->pol->keep_polling(q->s, q, *now); /* no kick fd: only polling sees work */
		if (again || !rearm_finds_more(q))
			break;
		if (rearms == MAX_REARMS) {
			again = true;
			break;
		}
	}
	stat_add(&q->c.turns, 1);
	stat_add(&q->c.busy_ns, *now - start);
	stat_add(&w->c.turns, 1);
	*pkts = used.pkts;
	return again;
}

/*
 * End of a turn that wants the queue polled again (`again`). A worker with a group of its own
 * keeps it instead of requeueing it: held, still RUNNING, looked at lightly between ready-list
 * turns (poll_held), so an empty poll of a held queue is a few loads where a requeue is a list
 * push, a lock, a take and two state CASes. A pool worker requeues, so that any worker may take
 * the queue next; so does a worker whose hold list is full, and one asked to pause the queue.
 */
static void hold_or_finish(struct sched_worker *w, struct vqs_queue *q, bool again)
{
	if (again && w->own_group && w->nheld < SCHED_HELD_MAX &&
	    !(atomic_load_explicit(&q->state, memory_order_relaxed) & Q_PAUSE_REQ)) {
		w->held[w->nheld++] = q;
		return;
	}
	finish(q, again);
}

/* Turns of q, which this worker owns (RUNNING), until the policy lets it go. */
static void run_taken(struct sched_worker *w, struct vqs_queue *q)
{
	uint64_t now = w->now_ns, pkts;
	bool again;
	/* In place, no clock read when the light polls find work: `now` was read at the end of the
	 * turn before them, at most SPIN_POLLS looks earlier, which is when the found requests'
	 * latency (and the rate estimate's arrival) is taken to start. */
	while ((again = one_turn(w, q, &now, &pkts)) && poll_again_here(w, q))
		spin_for_work(w, q);
	/* No queue of the group with notifications on: no kick could concern one (a late kick for
	 * a polled queue waits in the epoll set for the next look). */
	if (atomic_load_explicit(&w->g->nqueues, memory_order_relaxed) > 1 &&
	    atomic_load_explicit(&w->g->armed, memory_order_relaxed) > 0 &&
	    ((again && pkts) || ++w->turns_since_check >= EVENT_CHECK_TURNS)) {
		w->turns_since_check = 0;
		check_events(w, now);
	}
	w->now_ns = now;
	hold_or_finish(w, q, again);
}

static void run_queue(struct sched_worker *w, struct vqs_queue *q)
{
	if (take_turn(q))
		run_taken(w, q);
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
static void poll_held(struct sched_worker *w)
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
		check_events(w, w->now_ns);
	for (unsigned i = 0; i < ndue; i++) {
		struct vqs_queue *q = due[i];
		/* acq_rel, as take_turn's CAS: takes in what a waker published before it set
		 * PENDING; this turn is the look again that PENDING asks for. */
		uint32_t st = atomic_fetch_and_explicit(&q->state, ~Q_PENDING, memory_order_acq_rel);
		if (st & Q_PAUSE_REQ)
			finish(q, true);
		else
			run_taken(w, q);
	}
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
			poll_held(w);
		else if (!q)
			worker_sleep(w);
	}
	group_ring(w->g); /* pass the stop on to the group's next sleeping worker */
	return NULL;
}
