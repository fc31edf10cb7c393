/* SPDX-License-Identifier: MIT */
/*
 * One turn of a RUNNING queue: publish handed-over completions, then one ring session per batch
 * (begin, pop into request slots, the handler, fill, end) and the call, until the ring is empty
 * or the budget spent; then the policy decides whether the queue stays polled or re-arms its
 * notifications, the worker looks for kicks of its other queues if it is due to, and the queue
 * is held, requeued or let go.
 */
#include <errno.h>

#include "mem/table.h"
#include "sched/internal.h"
#include "sched/slots.h"
#include "util/log.h"
#include "util/prefetch.h"

/* How serve ended: the ring found empty by a poll; emptied by a batch that took all the ring had
 * (the clock was read after it: the present, for the policy); budget spent; nothing more can be
 * taken now. */
enum turn_end { TURN_DRAINED, TURN_TOOK_ALL, TURN_BUDGET, TURN_STALLED };

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

/*
 * Pop up to want chains (want <= what the session's begin saw, see serve) with one ring call,
 * each straight into the request of its chain id (the ring refuses an id already in flight,
 * VQS_VQ_ERR_BUFFER_ID, before it writes that request), and give each what the handler needs.
 * The batch's pin and the time it was noticed are the batch's, not written into each request:
 * only a request still open after the handler call needs its own (hand_over). Returns how many,
 * *bytes their bytes; *empty when that was all the ring had.
 */
static unsigned pop_batch(struct sched_worker *w, struct vqs_queue *q, struct vqs_vq_session *ss,
			  unsigned want, uint64_t *bytes, bool *empty)
{
	if (q->nlong)
		restore_long(q);
	const uint16_t *ids = w->pop_ids;
	struct vqs_pop_to to = {.base = &slot_of(q, 0)->req.elem, .stride = q->req_stride,
				.by_id = true, .ids = w->pop_ids};
	int rc = vqs_vq_session_pop(ss, &to, want);
	unsigned n = rc > 0 ? (unsigned)rc : 0;
	/* Fewer than the ring had: it broke at the next chain (reported now, from its state), or
	 * that long chain waits until long chains in flight complete (-EBUSY, from the pop that
	 * tries it first: not empty, and their completions wake the queue). */
	if ((rc < 0 && rc != -EBUSY) || (n < want && vqs_vq_error(q->vq) != VQS_VQ_OK))
		queue_broken(q);
	*empty = n < want && !q->broken && rc != -EBUSY;
	uint64_t b = 0;
	/* pointers, not an index: the loop's count stays out of memory */
	struct req_slot **bp = w->batch;
	for (const uint16_t *id = ids, *end = ids + n; id < end; id++) {
		struct req_slot *r = slot_of(q, *id);
		r->req.user = NULL;
		r->st = SLOT_HANDED;
		*bp++ = r;
		b += r->req.elem.out_len + r->req.elem.in_len;
		/* built in the ring's long-chain area (see vqs_elem); its id is the element's, read
		 * there: the loop keeps no copy of it */
		if (__builtin_expect(r->req.elem.iov != r->iov, 0))
			q->long_ids[q->nlong++] = r->req.elem.id;
	}
	/* A pass of its own: a queue that prefetches nothing (a handler that reads no buffer)
	 * tests that once a batch, not once a request. */
	if (q->prefetch_lines)
		for (unsigned i = 0; i < n; i++)
			prefetch_buffer(&w->batch[i]->req.elem, q->prefetch_lines);
	*bytes = b;
	q->nout += n;
	if (q->in_order)
		for (unsigned i = 0; i < n; i++)
			q->order[order_at(q, q->ord_len++)] = ids[i];
	return n;
}

/* fill_collected's way on after the ring refused an entry (k: what the fill of the m returned):
 * the refused one is reported and skipped, the rest filled after it. Out of line: a queue reset
 * under the turn, not the data path. */
static __attribute__((noinline)) void fill_refused(struct sched_worker *w,
						   struct vqs_vq_session *ss, unsigned m, int k)
{
	for (unsigned done = 0;;) {
		if (k < 0) {
			warn_rejected(w->fill_elems[done]);
			k = 1;
		}
		if ((done += (unsigned)k) == m)
			return;
		k = vqs_vq_session_fill(ss, w->fill_elems + done, w->fill_written + done, m - done);
	}
}

/* Write the used entries of the m requests collected in w->fill_elems/fill_written, in that
 * order, with one ring call unless the ring refuses one. Owner of q. */
static void fill_collected(struct sched_worker *w, struct vqs_queue *q, struct vqs_vq_session *ss,
			   unsigned m)
{
	int k = vqs_vq_session_fill(ss, w->fill_elems, w->fill_written, m);
	if (__builtin_expect(k != (int)m, 0))
		fill_refused(w, ss, m, k);
	stat_add(&q->c.reqs, m);
}

/* Give batch[from..n) back to the ring unconsumed (they hold no pin reference yet: hand_over).
 * Returns their bytes. */
static uint64_t give_back(struct sched_worker *w, struct vqs_queue *q, unsigned from, unsigned n)
{
	uint64_t b = 0;
	for (unsigned i = from; i < n; i++) {
		w->giveback[i - from] = w->batch[i]->req.elem;
		b += w->batch[i]->req.elem.out_len + w->batch[i]->req.elem.in_len;
	}
	if (vqs_vq_unpop(q->vq, w->giveback, n - from) < 0)
		vqs_err("sched: could not give back %u requests", n - from);
	for (unsigned i = from; i < n; i++)
		slot_free(q, w->batch[i]);
	if (q->in_order)
		q->ord_len -= n - from; /* the newest popped */
	return b;
}

/*
 * pop_batch, with the batch's requests sharing one pin on the memory table their chains were
 * translated through (the session's), so that the handler can run outside the read-side section.
 * A table replaced since the session began is out of date (the frontend may unmap the old
 * regions once the replacement is acknowledged): the chains go back and are popped again, through
 * the new table, in the same session. The pin is the queue's current one (pin_cur) while the
 * table stays the same: two atomic RMWs per table the queue's worker sees, not per batch.
 * *pin: the batch's pin. Through the handler call the queue's own reference on it (pin_cur's,
 * which only the owner drops, between turns or batches) keeps the table; hand_over then takes
 * one for each request left open, so a batch completed in the call counts none.
 */
static unsigned pop_pinned(struct sched_worker *w, struct vqs_queue *q, struct vqs_vq_session *ss,
			   unsigned want, uint64_t *bytes, bool *empty, struct pin_ref **pin)
{
	struct vqs_mem *mem = q->mem;
	for (;;) {
		const struct vqs_mem_table *t = ss->table;
		unsigned n = pop_batch(w, q, ss, want, bytes, empty);
		if (!n)
			return 0;
		/* t cannot be freed inside the section, so no newer table has its address */
		if (mem_current(mem) == t) {
			struct pin_ref *p = q->pin_cur;
			if (!p || p->t != t) {
				queue_unpin(q);
				/* A free pin is there: each pin in use holds at least one request,
				 * and at most nslots - n are outstanding besides this batch. */
				p = q->free_pins;
				q->free_pins = p->next_free;
				vqs_mem_table_pin(t);
				p->t = t;
				p->refs = 1;
				q->pin_cur = p;
			}
			*pin = p;
			return n;
		}
		give_back(w, q, 0, n);
		/* the session's next pop enters the new table */
		vqs_vq_session_pause(ss);
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

/* IN_ORDER: stage the used entries of batch[0..taken) completed inside the handler call again,
 * in pop order, in w->fill_elems/fill_written, and free them, while nothing older is
 * outstanding (the batch is the newest in the order) and up to the batch's first open request;
 * the others wait in the order, with the batch's pin and t0 for their completion. Returns how
 * many were staged. */
static unsigned stage_in_order(struct sched_worker *w, struct vqs_queue *q, unsigned taken,
			       uint64_t t0, struct pin_ref *pin)
{
	bool now = q->ord_len == taken;
	unsigned m = 0;
	for (unsigned i = 0; i < taken; i++) {
		struct req_slot *r = w->batch[i];
		if (r->st == SLOT_DONE_HERE && now) {
			/* Free already: the slot is next written by this thread's next pop, after
			 * the fill has read it. */
			r->st = SLOT_FREE;
			w->fill_elems[m] = &r->req.elem;
			w->fill_written[m++] = r->written;
			continue;
		}
		/* completed behind an open request, or still with the handler */
		now = false;
		r->st = r->st == SLOT_DONE_HERE ? SLOT_HELD : SLOT_OUT;
		r->pin = pin;
		r->t0_ns = t0;
	}
	return m;
}

/* The requests of batch[0..taken) the handler did not complete in its call (still with it, or
 * completed by another thread, waiting on q->done, which only q's owner reaps, later) get the
 * batch's pin and t0 for their completion. */
static void mark_open(struct sched_worker *w, unsigned taken, uint64_t t0, struct pin_ref *pin)
{
	for (unsigned i = 0; i < taken; i++) {
		struct req_slot *r = w->batch[i];
		if (r->st != SLOT_HANDED)
			continue;
		r->st = SLOT_OUT;
		r->pin = pin;
		r->t0_ns = t0;
	}
}

/* Run the handler on batch[0..n), noticed at t0 and pinned by pin; returns how many it took (the
 * rest went back to the ring, their bytes taken off *bytes). Those it completed during the call
 * were staged as it completed them (stage_here; an IN_ORDER queue stages them again in pop
 * order) and are filled together: *done of them, whose latency serve's clock_read counts. The
 * others each take a reference on pin for their completion. A batch completed whole during the
 * call takes no second pass over it. Outside the read-side section unless the handler is
 * nonblocking: the batch's pin keeps the buffers mapped, so a handler that blocks holds up no
 * grace period. */
static unsigned hand_over(struct sched_worker *w, struct vqs_queue *q, struct vqs_vq_session *ss,
			  unsigned n, uint64_t t0, struct pin_ref *pin, bool *in_section,
			  uint64_t *bytes, unsigned *done)
{
	w->nstaged = 0;
	sched_running = (struct sched_running){q, w, n};
	unsigned taken = q->handler(q, (struct vqs_req *const *)w->batch, n, q->opaque);
	sched_running.q = NULL;
	/* One read-side section from here to the pop of the turn's next batch (see serve): the
	 * session's fill and end, and the next begin and pop, nest in it. A nonblocking handler
	 * ran in it already. */
	if (!*in_section) {
		vqs_mem_read_lock();
		*in_section = true;
		w->section_ns = q->clock_ns; /* the batch's clock read, before the section */
	}
	if (taken > n) {
		vqs_warn("sched: handler took %u of %u requests", taken, n);
		taken = n;
	}
	if (taken < n)
		taken = keep_completed(w, q, taken, n);
	if (taken < n) {
		*bytes -= give_back(w, q, taken, n);
		stat_add(&q->c.given_back, n - taken);
		q->parked = true;
	}
	/* all staged are before taken (keep_completed) */
	unsigned m = w->nstaged;
	if (q->in_order)
		m = stage_in_order(w, q, taken, t0, pin);
	else if (m < taken)
		mark_open(w, taken, t0, pin);
	pin->refs += taken - m;
	if (m) {
		q->nout -= m;
		if (q->in_order)
			order_advance(q, m);
		fill_collected(w, q, ss, m);
	}
	*done = m;
	return taken;
}

/* Leave the read-side section the caller of the turn was in (*in: it still is), once the turn
 * no longer needs it. */
static inline void leave_section(bool *in)
{
	if (*in) {
		*in = false;
		vqs_mem_read_unlock();
	}
}

/*
 * The batches of a turn since its last clock read. A read is tens of ns in a VM (29.5 alone
 * here), and a turn of batches of one read it after every batch: at batch 1 that held busy-poll
 * to about 0.8 of the rate it had without the reads (in one of the host's phases; docs/bench.md,
 * "At batch 1"). So batches back to back share a read while they are short (clock_due); their
 * requests completed inside the handler calls are timed at the read that ends the run, each
 * batch the run's time over its batches (the batches of a run are the same queue's, back to
 * back, so a batch slower than the others shares its excess with them). A batch of the default
 * 64, or a slow handler's, is a run of its own.
 */
struct clock_run {
	uint64_t t0;              /* when its first batch was noticed: the read before the run
				   * (serve's t), or a wake's time */
	unsigned batches, reqs;   /* served since that read */
	unsigned done;            /* of those, completed inside the handler calls */
};

/* Whether the run has taken long enough, by q's estimate, or enough requests, that the clock is
 * read now: the time after a batch (latency, the policy's view, the section's age) is then at
 * most about SCHED_CLOCK_NS old. A first batch noticed before the read (a wake-up's) is a run of
 * its own: the wait for the worker is its requests' alone, not shared with the batches after.
 * Owner of q. */
static inline bool clock_due(const struct vqs_queue *q, const struct clock_run *run,
			     uint64_t since)
{
	return run->reqs >= SCHED_CLOCK_REQS || (uint64_t)run->reqs * q->req_ns >= SCHED_CLOCK_NS ||
	       run->t0 != since;
}

/* Read the clock after a run of batches (at least one), which began after the read `since`:
 * time their completions inside the handler calls (published by now), update q's estimate of a
 * request's time, and leave a section that has grown old (see serve). Returns the time read,
 * which starts the next run. */
static uint64_t clock_read(struct sched_worker *w, struct vqs_queue *q, struct clock_run *run,
			   uint64_t since, bool *in_section)
{
	uint64_t t = vqs_now_ns();
	uint64_t per = (t - since) / run->reqs;
	q->req_ns = per < SCHED_CLOCK_NS ? (uint32_t)per : SCHED_CLOCK_NS;
	if (run->done)
		stat_latency(q, 0, (t - run->t0) / run->batches, run->done);
	if (*in_section && t - w->section_ns > SCHED_SECTION_NS)
		leave_section(in_section);
	*run = (struct clock_run){.t0 = t};
	return t;
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
 * latest clock read); on return, a read made after the last batch, or after the empty poll that
 * ended the turn: the caller reads no clock of its own, and the batches read it once per run
 * (struct clock_run).
 *
 * Read-side sections: a handler that may block runs outside any, everything else may run inside
 * one, and entering or leaving the outermost is two liburcu calls (with three __tls_get_addr).
 * So one section runs from each handler's return through the fill and end of its batch to the
 * begin and pop of the next (the sessions nest in it), and is left before the next handler call
 * or demand callback (which may block, or take a lock a thread waiting for a grace period
 * holds): one outermost section per batch, not two; for a nonblocking handler, whose calls stay
 * in it, one per SCHED_SECTION_NS (a busy-polled queue's turns then run in the light looks'
 * section until it is that old). *in_section: a section is open; on entry, the caller's
 * (the light looks that found the chains: the first batch begins inside it); on return, the one
 * the last batch opened, which the caller leaves (or goes on looking in: sched_run_taken).
 * look: as sched_run_taken's, the first batch's session when it found chains. */
static enum turn_end serve(struct sched_worker *w, struct vqs_queue *q, uint64_t *now,
			   struct turn_budget *used, bool *in_section, struct sched_look *look)
{
	struct vqs_sched *s = q->s;
	const struct sched_policy *pol = s->pol;
	/* Load first: set only by a wake that made the queue READY, so 0 on most polls. */
	uint64_t noticed = atomic_load_explicit(&q->noticed_ns, memory_order_relaxed);
	if (noticed)
		atomic_store_explicit(&q->noticed_ns, 0, memory_order_relaxed);
	uint64_t t = *now;
	uint64_t t0 = noticed && noticed < t ? noticed : t;
	struct clock_run run = {.t0 = t0};
	uint64_t pkts = used->pkts, bytes = used->bytes;
	unsigned polls = 0; /* counted once a serve, not once a batch */
	enum turn_end end = TURN_STALLED;

	/* A replaced table: let go of it now, not when traffic comes (a comparison, no access). */
	if (q->pin_cur && mem_current(q->mem) != q->pin_cur->t)
		queue_unpin(q);
	/* Completions that came after the look are filled in a session of their own: not between
	 * the look's begin and its pop. */
	if (!lf_empty(&q->done))
		look_drop(look);
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
		if (want > q->nslots - q->nout)
			want = q->nslots - q->nout;
		if (!want)
			break; /* every slot is out: completions will wake the queue */
		if (q->demand) {
			look_drop(look);
			leave_section(in_section);
			unsigned d = q->demand(q, q->opaque);
			if (!d) {
				q->parked = true; /* as after a give-back: until vqs_queue_wake */
				break;
			}
			if (want > d)
				want = d;
		}
		/* The batch's ring session: its begin reads the avail index once, so an empty poll
		 * costs no more and no more slots are taken than there are chains. */
		struct vqs_vq_session ss;
		int rc;
		if (look && look->has) {
			ss = look->ss;
			rc = (int)look->has;
			look->has = 0;
		} else {
			rc = vqs_vq_session_begin(q->vq, &ss);
		}
		unsigned has = rc > 0 ? (unsigned)rc : 0;
		bool empty = true;
		unsigned n = 0;
		if (rc < 0 && vqs_vq_error(q->vq) != VQS_VQ_OK) {
			queue_broken(q);
			break;
		}
		uint64_t b = 0;
		struct pin_ref *pin = NULL;
		if (has)
			n = pop_pinned(w, q, &ss, want < has ? want : has, &b, &empty, &pin);
		empty |= n == has; /* took all begin saw: the next batch begins again */
		unsigned backlog = n && !empty ? has - n : 0;
		polls++;
		if (!n) {
			vqs_vq_session_pause(&ss);
			stat_add(&q->c.empty_polls, 1);
			stat_add(&w->c.empty_polls, 1);
			if (empty)
				end = TURN_DRAINED;
			break;
		}
		/* A handler that may block runs outside any section; a nonblocking one inside the
		 * pop's, and the session goes on to its fill and end without entering and checking
		 * again (see vqs_queue_opts.handler_nonblocking). */
		if (!q->handler_nonblocking) {
			vqs_vq_session_pause(&ss);
			leave_section(in_section);
		}
		q->clock_ns = t;
		unsigned done;
		unsigned taken = hand_over(w, q, &ss, n, t0, pin, in_section, &b, &done);
		/* Publish first: the policy's feedback, the batch's counters and the clock read (tens
		 * of ns in a VM) are not on the way of the completions to the driver (busy-poll rr
		 * waits for exactly this path). */
		sched_end_call(q, &ss);
		/* Found at t (the last clock read, at most a short run of batches before this pop):
		 * what the rate estimate and the poll timeout need, at poll-loop resolution. */
		q->last_work_ns = t;
		pol->observe(s, q, n, backlog, t);
		stat_add(&q->c.batch_hist[stat_bucket(n, VQS_STATS_BATCH_BUCKETS)], 1);
		run.batches++;
		run.reqs += n;
		run.done += done;
		/* Batches of a nonblocking handler stay in one section (and a busy-polled queue's
		 * turns in the looks'): clock_read leaves it once it is old, or a grace period would
		 * wait as long as the traffic lasts; the next batch's begin enters another. */
		if (clock_due(q, &run, t))
			t = clock_read(w, q, &run, t, in_section);
		/* Only what the handler took counts against the budget: given-back chains come again. */
		pkts += taken;
		bytes += b;
		t0 = t;
		if (empty && taken == n) {
			end = TURN_TOOK_ALL;
			break;
		}
	}
	look_drop(look); /* the loop ended before its first batch */
	stat_add(&q->c.polls, polls);
	stat_add(&w->c.polls, polls);
	stat_add(&q->c.bytes, bytes - used->bytes);
	if (run.batches)
		t = clock_read(w, q, &run, t, in_section);
	else if (end == TURN_DRAINED)
		t = vqs_now_ns(); /* an empty poll: the policy's timeout needs the present */
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

/* Re-arm races served within one turn before the queue goes back on the list. */
#define MAX_REARMS 4u

/* One turn of a RUNNING queue: serve, then let the policy decide (keep polling or re-arm).
 * Returns whether the queue goes back on the list; *pkts: requests it served. *in_section: as
 * serve's (the policy's decision and the re-arm run inside the section the turn ends in). */
static bool one_turn(struct sched_worker *w, struct vqs_queue *q, uint64_t *now, uint64_t *pkts,
		     bool *in_section, struct sched_look *look)
{
	uint64_t start = *now;
	/* Load first: a relaxed load is free, the exchange only when a wake asked for it. */
	if (atomic_load_explicit(&q->wake_req, memory_order_relaxed) &&
	    atomic_exchange_explicit(&q->wake_req, false, memory_order_relaxed))
		q->parked = false;
	struct turn_budget used = {0, 0};
	bool again;
	for (unsigned rearms = 0;; rearms++) {
		enum turn_end end = serve(w, q, now, &used, in_section, look);
		if (end != TURN_DRAINED && end != TURN_TOOK_ALL) {
			again = end == TURN_BUDGET;
			break;
		}
		/* Empty ring: the policy says whether to stay polled; else re-arm, and what slipped
		 * in meanwhile is served in this same turn (within its budget), not requeued. A ring
		 * that keeps saying "more" without yielding any goes back on the list instead. *now
		 * is serve's read after its last batch or its empty poll: one read a turn, where
		 * busy-poll rr once read the clock twice per request. */
		if (w->pending.woke_ns)
			sched_cost_settle(w, *now); /* the wake-up's requests are served */
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

/* While queues keep being requeued the worker never sleeps, so it looks for kicks of the other
 * queues between turns: after every turn that served requests and goes back on the list (so a
 * kicked queue gets on the list before it), and every EVENT_CHECK_TURNS turns otherwise (empty
 * polls). A group with one queue has no other queue a kick could bring in, so it never looks:
 * that epoll_wait was a system call per request for a busy-polled queue. */
#define EVENT_CHECK_TURNS 32u

/* A turn of q, which this worker owns (RUNNING); then q is held, requeued, idle or paused. */
void sched_run_taken(struct sched_worker *w, struct vqs_queue *q, bool *in_section,
		     struct sched_look *look)
{
	uint64_t now = w->now_ns, pkts;
	bool again = one_turn(w, q, &now, &pkts, in_section, look);
	w->reqs += pkts;
	/* No queue of the group with notifications on: no kick could concern one (a late kick for
	 * a polled queue waits in the epoll set for the next look). */
	if (atomic_load_explicit(&w->g->nqueues, memory_order_relaxed) > 1 &&
	    atomic_load_explicit(&w->g->armed, memory_order_relaxed) > 0 &&
	    ((again && pkts) || ++w->turns_since_check >= EVENT_CHECK_TURNS)) {
		w->turns_since_check = 0;
		sched_check_events(w, now);
	}
	w->now_ns = now;
	if (sched_hold(w, q, again))
		return;
	/* Letting q go may wake a control thread (sched_signal's mutex): outside the section. */
	leave_section(in_section);
	queue_unpin(q);
	sched_finish(q, again);
}
