/* SPDX-License-Identifier: MIT */
/*
 * One measured point: `streams` driver-side queues in one guest-memory arena, served by a vqsched
 * scheduler, fed by `drivers` threads (the guests) through real eventfd kicks and calls.
 *
 * A completion for a slot not in flight is a duplicate, and whatever is still in flight after the
 * drain deadline is lost. When the handler touches the payload (read, copy), every request also
 * carries a sequence number in its readable buffer that the handler echoes into the writable one,
 * and a wrong echo is corrupted; the null handler (touch none) touches no payload at all, as the
 * minimal ring of the floors does not, and a non-zero length written is corrupted. Latency is
 * from just before the kick decision of the batch a request went out in to the moment its driver
 * sees it used.
 *
 * Phases (main thread drives them): warm-up, measure (counters and histograms run), drain.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cpu.h"
#include "inject.h"
#include "transport_vu.h"

enum phase { PH_WARMUP, PH_MEASURE, PH_DRAIN };

#define DRAIN_NS 2000000000ull
#define CAL_MAX 65536u
#define SEQ_BYTES 8u

/* A request's buffers and state, a line of its own: the driver's reap and submit read and write
 * t_submit and the two addresses of each request, in the first half of the line. */
struct slot {
	_Alignas(64) uint64_t t_submit; /* the submitting batch's clock, never 0; 0: not in flight */
	uint64_t out_gpa, in_gpa;
	uint64_t seq;
	unsigned char *out, *in;
};

/* One side's injected work on one queue: the fraction of a turn carried to its next request
 * (inject_turns), and the requests given work and the turns they got, written by that side
 * alone and read by main at the window's ends (relaxed: counters). */
struct inject_side {
	_Alignas(64) uint32_t carry;
	atomic_uint_fast64_t reqs, turns;
};

struct stream {
	struct run *run;
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	struct vqs_queue *q;
	int kick_fd, call_fd;
	struct slot *slots;
	struct slot **free_list; /* the slots not in flight, the last freed on top */
	/* Written by the driver for every request: on a line apart from what the handler reads on
	 * the worker's CPU (run), which would otherwise move back and forth between the two CPUs
	 * with each request and put a miss in every handler call (packed rr: p50 528 -> 440 ns) */
	_Alignas(64) unsigned nfree, inflight;
	uint64_t next_seq;
	/* --inject-slowdown-pct, [0] the handler's side (the worker serving the queue), [1] the
	 * driver's reap, each on a cache line of its own: written for every request on two CPUs,
	 * beside each other or the driver's fields they would move the line back and forth (one
	 * turn of work then measured a third of a stream's request) */
	struct inject_side inj[2];
};

struct driver {
	struct run *run;
	pthread_t thread;
	bool started;
	int cpu;
	unsigned first, count; /* streams [first, first+count) */
	uint64_t period_ns;    /* offered rate pacing, 0 = as fast as possible */
	struct hist lat[2]; /* by run.side: [1] the slices with the injection (--interleave) */
	/* written by this driver, read by main at phase boundaries (relaxed: counters only) */
	atomic_uint_fast64_t done, kicks;
	uint64_t dup, corrupt, lost;
	/* --inject-slowdown-pct calibration: one entry per reap that found completions while the
	 * busy work was off [0] / on [1], rings of CAL_MAX the main thread reads below cal_n: the
	 * time since this driver's previous such reap per request (1/16 ns, high 32 bits) and the
	 * requests (low 32 bits) */
	uint64_t *cal_tpo[2];
	atomic_uint cal_n[2];
	uint64_t last_reap_ns;
	uint64_t slice_done; /* --interleave, driver 0: completions in the current slice */
	atomic_uint slice;   /* and the slices it finished (relaxed: main waits for a count) */
};

struct run {
	const struct point *pt;
	struct vqs_gmem *gmem;
	struct vqs_mem *mem;
	struct vqs_sched *sched;
	struct vu_link *vu; /* vhost-user transport: owns gmem, the driver queues and their fds */
	atomic_uint inject_amount; /* --inject-slowdown-pct per request, 1/INJECT_ONE turns (relaxed:
				    * a knob) */
	atomic_int cal_side;      /* calibrating: 1 injection off, 2 on; 0 not calibrating */
	/* --interleave: the side the current slice measures and the injection's amount on side 1;
	 * driver 0 switches sides every interleave_reqs completions (relaxed: knobs), in the order
	 * inject_slice_side draws from slice_seed */
	atomic_int side;
	uint32_t side_amount;
	uint64_t interleave_reqs, slice_seed;
	struct stream *st;
	struct driver *drv;
	unsigned buf_len;
	atomic_int phase;
	atomic_uint_fast64_t calls; /* call eventfd counts, summed by whoever reads the fd */
};

/* ---- handler (worker side) ---- */

/* The busy turns of n requests on side k of stream s (0 the handler, 1 the driver's reap) for
 * the amount read now, counted for the run's report of what was injected. */
static uint32_t inject_take(struct stream *s, int k, uint32_t amount, unsigned n)
{
	if (!amount || !n)
		return 0;
	struct inject_side *x = &s->inj[k];
	uint32_t t = inject_turns(amount, n, &x->carry);
	atomic_store_explicit(&x->reqs, atomic_load_explicit(&x->reqs, memory_order_relaxed) + n,
			      memory_order_relaxed);
	atomic_store_explicit(&x->turns, atomic_load_explicit(&x->turns, memory_order_relaxed) + t,
			      memory_order_relaxed);
	return t;
}

static unsigned handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	struct stream *s = opaque;
	const struct point *pt = s->run->pt;
	uint32_t inject = atomic_load_explicit(&s->run->inject_amount, memory_order_relaxed);
	if (pt->touch == TOUCH_NONE) {
		/* the null handler: what the floors measure, the ring and the scheduler alone; with
		 * nothing to do per request, the batch is completed in one call (the rings alone's
		 * device fills the batch in one call too); one request, with the single call (33
		 * instructions the batch call, 10 the single, callgrind) */
		enum { MOST = 256 }; /* vqs_sched_opts.batch_max at most */
		static const uint32_t none[MOST];
		if (!pt->handler_ns && !inject && n <= MOST) {
			if (n == 1)
				vqs_req_complete(reqs[0], 0);
			else
				vqs_req_complete_batch(reqs, none, n);
			return n;
		}
		for (unsigned i = 0; i < n; i++) {
			cpu_spin_ns(pt->handler_ns);
			vqs_req_complete(reqs[i], 0);
		}
		cpu_busy_iters(inject_take(s, 0, inject, n));
		return n;
	}
	/* The driver wrote every request's lines on the other CPU, so each first touch misses:
	 * ask for all of the batch's response lines before working on the first, so the misses
	 * overlap instead of queueing one behind the other (a prefetch never faults, whatever the
	 * hostile chain says). The scheduler already fetched each request's first, readable
	 * buffer as it popped the batch (vqs_queue_opts.prefetch_lines). */
	for (unsigned i = 0; i < n; i++) {
		const struct vqs_elem *e = &reqs[i]->elem;
		if (e->out_num >= 1 && e->in_num >= 1)
			__builtin_prefetch(e->iov[e->out_num].iov_base, 1);
	}
	for (unsigned i = 0; i < n; i++) {
		struct vqs_elem *e = &reqs[i]->elem;
		uint32_t written = 0;
		/* The driver is ours, but the chain is still read as hostile: check the shapes. */
		if (e->out_num >= 1 && e->in_num >= 1 && e->iov[0].iov_len >= SEQ_BYTES &&
		    e->iov[e->out_num].iov_len >= SEQ_BYTES) {
			const struct iovec *in = &e->iov[e->out_num], *out = &e->iov[0];
			size_t pay = pt->payload < out->iov_len ? pt->payload : out->iov_len;
			if (pt->touch == TOUCH_READ) {
				volatile uint64_t sum = 0;
				const unsigned char *p = out->iov_base;
				for (size_t k = 0; k < pay; k += 8)
					sum += *(const uint64_t *)(p + k);
			} else {
				size_t cp = pay < in->iov_len ? pay : in->iov_len;
				memcpy(in->iov_base, out->iov_base, cp);
				written = (uint32_t)cp;
			}
			cpu_spin_ns(pt->handler_ns);
			memcpy(in->iov_base, out->iov_base, SEQ_BYTES);
			if (written < SEQ_BYTES)
				written = SEQ_BYTES;
		}
		vqs_req_complete(reqs[i], written);
	}
	/* --inject-slowdown-pct: the batch's work in one block, before the completions are
	 * published (after the handler returns) */
	cpu_busy_iters(inject_take(s, 0, inject, n));
	return n;
}

/* ---- driver side ---- */

/* Whether requests carry a sequence number for the handler to echo: only when it touches the
 * payload anyway; the null handler's requests are checked by slot (lost, duplicated) and by
 * the length written (0). */
static bool echoes(const struct point *pt)
{
	return pt->touch != TOUCH_NONE;
}

static void count_calls(struct run *r, int fd)
{
	uint64_t v;
	if (read(fd, &v, sizeof(v)) == sizeof(v))
		atomic_fetch_add_explicit(&r->calls, v, memory_order_relaxed);
}

/*
 * --interleave, on driver 0 as it reaps n requests in the window: after interleave_reqs of them,
 * the next slice, in pairs of one slice each side (a trend over the window lands on both sides
 * alike) in an order drawn per pair (inject_slice_side: a disturbance that recurs every few
 * slices lands on both sides alike too); side 1 runs with the injected work, side 0 without.
 * Slices count requests, not time: when another program takes the CPU for milliseconds, no
 * slice is left empty; neighbouring slices share whatever the machine does (its load, where the
 * host put the vCPUs), so a difference between the sides is the injection's, not drift between
 * runs or processes. The requests in flight at a switch were worked on under the other side: a
 * 1/N dilution.
 */
static void interleave_step(struct driver *d, unsigned n)
{
	struct run *r = d->run;
	if ((d->slice_done += n) < r->interleave_reqs)
		return;
	d->slice_done = 0;
	unsigned k = atomic_load_explicit(&d->slice, memory_order_relaxed) + 1;
	atomic_store_explicit(&d->slice, k, memory_order_relaxed);
	int side = (int)inject_slice_side(r->slice_seed, k);
	atomic_store_explicit(&r->inject_amount, side ? r->side_amount : 0, memory_order_relaxed);
	atomic_store_explicit(&r->side, side, memory_order_relaxed);
	atomic_store_explicit(&r->cal_side, 1 + side, memory_order_relaxed);
}

/* n latency samples of value v, on the side the current slice measures. */
static void lat_add(struct driver *d, struct stream *s, uint64_t v, uint64_t n)
{
	if (n)
		hist_add_n(&d->lat[atomic_load_explicit(&s->run->side, memory_order_relaxed)], v, n);
}

/* What a reap carries from request to request: the free list's top, the counts, the run of
 * requests that share one latency (submitted together, one t_submit, and reaped together, one
 * `now`: one histogram entry for each run, not one per request). */
struct reaped {
	struct slot **top;
	uint64_t bad_len, dup;
	uint64_t run_t, run_n;
};

/* The per-request part of a reap: the driver's cost per request next to the rings alone's
 * (floors_vring.c), which frees the request and nothing else. Inlined with echo_seq and
 * measuring constant, so the loop tests neither. A token is a slot vqs_drv_get_used_batch hands
 * back once for each time it was added (it breaks the queue on a used id not in flight), so a
 * slot not in flight (t_submit 0) is a duplicate. */
static inline __attribute__((always_inline)) void
reap_run(struct driver *d, struct stream *s, struct reaped *a, void *const *toks,
	 const uint32_t *lens, unsigned got, uint64_t now, bool echo_seq, bool measuring)
{
	for (unsigned i = 0; i < got; i++) {
		struct slot *sl = toks[i];
		uint64_t t = sl->t_submit;
		if (!t) {
			a->dup++;
			continue;
		}
		if (!echo_seq) {
			a->bad_len += lens[i] != 0; /* the null handler writes nothing */
		} else {
			uint64_t echo;
			memcpy(&echo, sl->in, SEQ_BYTES);
			a->bad_len += lens[i] < SEQ_BYTES || echo != sl->seq;
		}
		sl->t_submit = 0;
		*a->top++ = sl;
		if (measuring) {
			if (t != a->run_t) {
				lat_add(d, s, now - a->run_t, a->run_n);
				a->run_t = t;
				a->run_n = 0;
			}
			a->run_n++;
		}
	}
}

/* Reap completions of one stream; returns how many. */
static unsigned reap(struct driver *d, struct stream *s, bool measuring)
{
	enum { REAP = 64 }; /* completions a call */
	uint32_t lens[REAP];
	void *toks[REAP];
	unsigned n, got = vqs_drv_get_used_batch(s->drv, toks, lens, REAP);
	if (!got)
		return 0; /* a polling driver's most frequent case: nothing more to set up */
	uint64_t now = 0;
	int cal = d->cal_tpo[0] ? atomic_load_explicit(&s->run->cal_side, memory_order_relaxed) : 0;
	/* the stream's fields in locals: the stores through the slots could alias them */
	struct reaped a = {.top = s->free_list + s->nfree};
	bool echo_seq = echoes(s->run->pt);
	if (measuring || cal)
		now = vqs_now_ns();
	do {
		if (!echo_seq && measuring) /* the null handler's point, measured */
			reap_run(d, s, &a, toks, lens, got, now, false, true);
		else
			reap_run(d, s, &a, toks, lens, got, now, echo_seq, measuring);
	} while ((got = vqs_drv_get_used_batch(s->drv, toks, lens, REAP)) != 0);
	n = (unsigned)(a.top - s->free_list) - s->nfree;
	s->nfree += n;
	s->inflight -= n;
	d->dup += a.dup;
	d->corrupt += a.bad_len;
	if (measuring)
		lat_add(d, s, now - a.run_t, a.run_n);
	/* --inject-slowdown-pct: the driver's share of the work, for the requests reaped, in one
	 * block after the time stamp (its cost lands in the next reap's interval). The handler
	 * does the same amount: in a stream the slower of driver and worker sets the pace and the
	 * other's work is hidden, and which one it is changes with where the host puts the vCPUs,
	 * repeat by repeat; work on both sides slows whichever it is by the same amount. */
	uint32_t inject = n ? atomic_load_explicit(&s->run->inject_amount, memory_order_relaxed) : 0;
	cpu_busy_iters(inject_take(s, 1, inject, n));
	if (cal && n) {
		unsigned i = atomic_load_explicit(&d->cal_n[cal - 1], memory_order_relaxed);
		uint64_t per = (now - d->last_reap_ns) * 16 / n;
		d->cal_tpo[cal - 1][i % CAL_MAX] = (per > UINT32_MAX ? UINT32_MAX : per) << 32 | n;
		/* pairs with the acquire in slice_tpo: the entry is written before it counts */
		atomic_store_explicit(&d->cal_n[cal - 1], i + 1, memory_order_release);
	}
	if (n && d->cal_tpo[0])
		d->last_reap_ns = now ? now : vqs_now_ns();
	if (n) /* outside the window too: the injection's calibration counts them */
		atomic_store_explicit(&d->done, atomic_load_explicit(&d->done, memory_order_relaxed) + n,
				      memory_order_relaxed);
	if (n && measuring && s->run->interleave_reqs && d == s->run->drv)
		interleave_step(d, n);
	return n;
}

/* Add up to n requests to one stream and kick if the device asks; returns how many. */
static unsigned submit(struct driver *d, struct stream *s, unsigned n, bool measuring)
{
	if (n > s->nfree)
		n = s->nfree;
	if (!n)
		return 0;
	uint64_t t = vqs_now_ns();
	t += !t; /* 0 marks a slot not in flight */
	unsigned added = 0;
	enum { ADD = 64 }; /* chains a vqs_drv_add_batch */
	struct vqs_drv_buf b[ADD][2];
	void *toks[ADD];
	/* in locals, as in reap: the stores through the slots could alias the stream's fields */
	struct slot *const *top = s->free_list + s->nfree;
	uint32_t len = s->run->buf_len;
	bool echo_seq = echoes(s->run->pt);
	while (added < n) {
		unsigned m = n - added < ADD ? n - added : ADD;
		for (unsigned i = 0; i < m; i++) {
			struct slot *sl = *--top;
			sl->t_submit = t; /* undone below for those the ring did not take */
			b[i][0] = (struct vqs_drv_buf){sl->out_gpa, len};
			b[i][1] = (struct vqs_drv_buf){sl->in_gpa, len};
			toks[i] = sl;
		}
		/* Only an echoing handler needs the number, so the null handler's loop above does
		 * not test for it. The response buffer is not cleared: what it holds is an older
		 * (smaller) sequence number or 0, never this one (numbers start at 1), so a missing
		 * echo still counts as corrupted, without a store per request into a line the
		 * device owns. */
		for (unsigned i = 0; echo_seq && i < m; i++) {
			struct slot *sl = toks[i];
			sl->seq = s->next_seq++;
			memcpy(sl->out, &sl->seq, SEQ_BYTES);
		}
		int k = vqs_drv_add_batch(s->drv, &b[0][0], 1, 1, toks, m, false);
		for (unsigned i = k > 0 ? (unsigned)k : 0; i < m; i++)
			((struct slot *)toks[i])->t_submit = 0;
		if (k <= 0)
			break;
		s->nfree -= (unsigned)k;
		s->inflight += (unsigned)k;
		added += (unsigned)k;
		if ((unsigned)k < m)
			break;
		top = s->free_list + s->nfree;
	}
	if (added && vqs_drv_kick_prepare(s->drv)) {
		cpu_spin_ns(s->run->pt->exit_ns);
		uint64_t one = 1;
		if (write(s->kick_fd, &one, sizeof(one)) == sizeof(one) && measuring)
			atomic_store_explicit(&d->kicks,
					      atomic_load_explicit(&d->kicks, memory_order_relaxed) + 1,
					      memory_order_relaxed);
	}
	return added;
}

/* Closed-loop stream: keep the ring full, refilling up to a batch of tx requests (or as many as
 * the ring holds) as entries come back, as the rings alone's driver (floors_vring.c) does: the
 * same shape on both sides of the goal's ratio, and the device never finds the ring short of a
 * batch while the driver waits for a whole one to come back. */
static unsigned stream_want(const struct stream *s, unsigned tx)
{
	/* each request is two descriptors (readable + writable buffer) */
	unsigned cap = s->run->pt->ring > 1 ? s->run->pt->ring / 2 : 1, fill = tx < cap ? tx : cap;
	unsigned room = vqs_drv_free_count(s->drv) / 2;
	if (room > s->nfree)
		room = s->nfree;
	return room < fill ? room : fill;
}

/* Block until a call arrives on one of d's streams or deadline_ns passes. */
static void wait_calls(struct driver *d, uint64_t deadline_ns)
{
	struct run *r = d->run;
	struct pollfd pfd[d->count];
	for (unsigned i = 0; i < d->count; i++) {
		struct stream *s = &r->st[d->first + i];
		if (vqs_drv_enable_cb(s->drv))
			goto out; /* completions raced in: process them instead of sleeping */
		pfd[i] = (struct pollfd){.fd = s->call_fd, .events = POLLIN};
	}
	uint64_t now = vqs_now_ns();
	int ms = deadline_ns > now ? (int)((deadline_ns - now + 999999) / 1000000) : 0;
	if (poll(pfd, d->count, ms > 10 ? 10 : ms) > 0)
		for (unsigned i = 0; i < d->count; i++)
			if (pfd[i].revents & POLLIN)
				count_calls(r, pfd[i].fd);
out:
	for (unsigned i = 0; i < d->count; i++)
		vqs_drv_disable_cb(r->st[d->first + i].drv);
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000u),
			      .tv_nsec = (long)(t_ns % 1000000000u)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *driver_main(void *p)
{
	struct driver *d = p;
	struct run *r = d->run;
	const struct point *pt = r->pt;
	cpu_pin_self(d->cpu);
	unsigned tx = pt->tx_batch ? pt->tx_batch : pt->batch_max, rr_k = pt->outstanding;
	uint64_t next_send = vqs_now_ns(), drain_end = 0;
	unsigned rot = 0;
	for (;;) {
		int ph = atomic_load_explicit(&r->phase, memory_order_acquire); /* pairs with main's release */
		bool measuring = ph == PH_MEASURE, draining = ph == PH_DRAIN;
		unsigned progress = 0, inflight = 0;
		for (unsigned i = 0; i < d->count; i++)
			progress += reap(d, &r->st[d->first + i], measuring);
		uint64_t now = 0;
		if (draining) {
			now = vqs_now_ns();
			if (!drain_end)
				drain_end = now + DRAIN_NS;
		} else if (d->period_ns) {
			/* Open loop: send what is due, round robin over the streams. A backlog beyond 1 ms
			 * (past saturation) is dropped from the schedule rather than sent as a burst. */
			now = vqs_now_ns();
			if (now > next_send + 1000000)
				next_send = now - 1000000;
			for (unsigned tries = 0; now >= next_send && tries < d->count; tries++) {
				unsigned due = (unsigned)((now - next_send) / d->period_ns) + 1;
				if (due > tx)
					due = tx;
				struct stream *s = &r->st[d->first + rot];
				rot = (rot + 1) % d->count;
				unsigned sent = submit(d, s, due, measuring);
				next_send += sent * d->period_ns;
				progress += sent;
			}
		} else {
			for (unsigned i = 0; i < d->count; i++) {
				struct stream *s = &r->st[d->first + i];
				unsigned want = pt->workload == WL_RR
					? (s->inflight < rr_k ? rr_k - s->inflight : 0)
					: stream_want(s, tx);
				progress += submit(d, s, want, measuring);
			}
		}
		for (unsigned i = 0; i < d->count; i++)
			inflight += r->st[d->first + i].inflight;
		if (draining && (!inflight || now >= drain_end))
			break;
		if (progress)
			continue;
		if (!pt->driver_block)
			cpu_relax();
		else if (inflight)
			wait_calls(d, d->period_ns && !draining ? next_send : vqs_now_ns() + 10000000);
		else if (d->period_ns)
			sleep_until(next_send); /* an idle guest halts until its next request */
	}
	for (unsigned i = 0; i < d->count; i++)
		d->lost += r->st[d->first + i].inflight;
	return NULL;
}

/* ---- setup ---- */

static size_t ring_bytes(unsigned num)
{
	/* split: desc + avail + used; packed: desc + two event areas; pad for alignment */
	return vqs_vring_desc_size(num) + vqs_vring_avail_size(num) + vqs_vring_used_size(num) + 256;
}

static int stream_init(struct run *r, struct stream *s, uint64_t features)
{
	const struct point *pt = r->pt;
	s->run = r;
	s->slots = aligned_alloc(_Alignof(struct slot), pt->ring * sizeof(*s->slots));
	s->free_list = calloc(pt->ring, sizeof(*s->free_list));
	if (!s->slots || !s->free_list)
		return -ENOMEM;
	memset(s->slots, 0, pt->ring * sizeof(*s->slots));
	for (unsigned i = 0; i < pt->ring; i++) {
		struct slot *sl = &s->slots[i];
		sl->out_gpa = vqs_gmem_alloc(r->gmem, r->buf_len, 64);
		sl->in_gpa = vqs_gmem_alloc(r->gmem, r->buf_len, 64);
		sl->out = vqs_gmem_host(r->gmem, sl->out_gpa, r->buf_len);
		sl->in = vqs_gmem_host(r->gmem, sl->in_gpa, r->buf_len);
		if (!sl->out_gpa || !sl->in_gpa || !sl->out || !sl->in)
			return -ENOMEM;
		s->free_list[s->nfree++] = &s->slots[pt->ring - 1 - i];
	}
	s->next_seq = 1;
	if (r->vu)
		return 0; /* rings and eventfds come from the link once it is up (stream_bind_vu) */
	struct vqs_drv_vq_config dc = {
		.size = sizeof(dc), .num = pt->ring, .features = features, .gmem = r->gmem};
	int rc = vqs_drv_vq_create(&s->drv, &dc);
	if (rc)
		return rc;
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = pt->ring, .features = features,
				   .addr_space = VQS_ADDR_GPA, .mem = r->mem};
	vqs_drv_vq_addrs(s->drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	if ((rc = vqs_vq_create(&s->dev)) || (rc = vqs_vq_configure(s->dev, &vc)))
		return rc;
	if (!pt->driver_block)
		vqs_drv_disable_cb(s->drv); /* a polling guest wants no interrupts */
	s->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->kick_fd < 0 || s->call_fd < 0)
		return -errno;
	return 0;
}

/* Stream i's ends on the vhost-user link: its driver queue, fds and the backend's queue. */
static void stream_bind_vu(struct run *r, unsigned i)
{
	struct stream *s = &r->st[i];
	struct vu_stream_ends e;
	vu_link_ends(r->vu, i, &e);
	s->drv = e.drv;
	s->kick_fd = e.kick_fd;
	s->call_fd = e.call_fd;
	s->q = e.q;
	if (!r->pt->driver_block)
		vqs_drv_disable_cb(s->drv); /* a polling guest wants no interrupts */
}

static void stream_fini(struct stream *s)
{
	bool own = !s->run || s->run->pt->transport == TRANSPORT_DIRECT; /* else the link's */
	if (s->dev)
		vqs_vq_destroy(s->dev);
	if (s->drv && own)
		vqs_drv_vq_destroy(s->drv);
	if (s->kick_fd >= 0 && own)
		close(s->kick_fd);
	if (s->call_fd >= 0 && own)
		close(s->call_fd);
	free(s->slots);
	free(s->free_list);
}

static void sched_opts_for(const struct point *pt, struct vqs_sched_opts *o)
{
	vqs_sched_opts_init(o);
	o->policy = pt->policy;
	o->nworkers = pt->workers;
	o->poll_timeout_us = pt->poll_timeout_us;
	o->spin_pct = pt->spin_pct;
	o->kick_ns = pt->exit_ns;
	o->batch_max = pt->batch_max;
	o->placement = pt->placement;
	CPU_ZERO(&o->cpus);
	CPU_ZERO(&o->busy_cpus);
	for (unsigned i = 0; i < pt->worker_cpus.n; i++)
		CPU_SET(pt->worker_cpus.cpu[i], &o->cpus);
	if (pt->placement == VQS_PLACE_AUTO || pt->placement == VQS_PLACE_FLOAT)
		CPU_ZERO(&o->cpus); /* candidates: everything allowed */
	for (unsigned i = 0; i < pt->driver_cpus.n; i++)
		CPU_SET(pt->driver_cpus.cpu[i], &o->busy_cpus);
}

/* Worker 0's CPU mask as the scheduler reports it, in list form ("1", "0-1"). */
static void worker_mask(struct vqs_sched *s, char *buf, size_t len)
{
	cpu_set_t set;
	size_t off = 0;
	buf[0] = 0;
	if (vqs_sched_worker_cpus(s, 0, &set))
		return;
	for (int c = 0; c < CPU_SETSIZE && off < len; c++) {
		if (!CPU_ISSET(c, &set))
			continue;
		int e = c;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set))
			e++;
		off += (size_t)snprintf(buf + off, len - off, e > c ? "%s%d-%d" : "%s%d", off ? "," : "",
					c, e);
		c = e;
	}
}

/* Sum over the scheduler's worker threads of a per-thread clock: their CPU time
 * (cpu_tid_ns), or the time they waited for a CPU while runnable (cpu_tid_runq_ns). */
static uint64_t workers_sum(struct vqs_sched *s, uint64_t (*of_tid)(pid_t))
{
	uint64_t sum = 0;
	unsigned n = vqs_sched_nworkers(s);
	for (unsigned i = 0; i < n; i++) {
		int tid = vqs_sched_worker_tid(s, i);
		if (tid > 0)
			sum += of_tid(tid);
	}
	return sum;
}

static uint64_t drivers_cpu_ns(struct run *r)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < r->pt->drivers; i++)
		if (r->drv[i].started)
			sum += cpu_pthread_ns(r->drv[i].thread);
	return sum;
}

static uint64_t drivers_sum(struct run *r, size_t field_off)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < r->pt->drivers; i++)
		sum += atomic_load_explicit(
			(atomic_uint_fast64_t *)((char *)&r->drv[i] + field_off), memory_order_relaxed);
	return sum;
}

static uint64_t calls_now(struct run *r)
{
	for (unsigned i = 0; i < r->pt->streams; i++)
		count_calls(r, r->st[i].call_fd);
	return atomic_load_explicit(&r->calls, memory_order_relaxed);
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

struct window {
	uint64_t t, wcpu, wrunq, dcpu, done, kicks, calls, faults;
	/* from vqsched's stats */
	uint64_t handler_calls, handler_reqs, rearms, wakeups, naps, batch_hist[BATCH_BUCKETS];
	struct vqs_worker_stats w0;
	/* --inject-slowdown-pct: requests given work and its turns, by side (struct stream) */
	uint64_t inj_reqs[2], inj_turns[2];
};

static void queue_stats_sum(struct run *r, struct window *w)
{
	for (unsigned i = 0; i < r->pt->streams; i++) {
		struct vqs_queue_stats st = {.size = sizeof(st)};
		if (!r->st[i].q || vqs_queue_stats_get(r->st[i].q, &st))
			continue;
		w->handler_reqs += st.reqs;
		w->rearms += st.rearms;
		for (unsigned b = 0; b < BATCH_BUCKETS; b++) {
			w->batch_hist[b] += st.batch_hist[b];
			w->handler_calls += st.batch_hist[b];
		}
	}
	unsigned nw = vqs_sched_nworkers(r->sched);
	for (unsigned i = 0; i < nw; i++) {
		struct vqs_worker_stats st = {.size = sizeof(st)};
		if (vqs_worker_stats_get(r->sched, i, &st))
			continue;
		w->wakeups += st.wakeups;
		w->naps += st.naps;
		if (!i)
			w->w0 = st;
	}
}

static void window_mark(struct run *r, struct window *w)
{
	w->t = vqs_now_ns();
	w->wcpu = workers_sum(r->sched, cpu_tid_ns);
	w->wrunq = workers_sum(r->sched, cpu_tid_runq_ns);
	w->dcpu = drivers_cpu_ns(r);
	w->done = drivers_sum(r, offsetof(struct driver, done));
	w->kicks = drivers_sum(r, offsetof(struct driver, kicks));
	w->calls = calls_now(r);
	struct rusage ru;
	w->faults = getrusage(RUSAGE_SELF, &ru) ? 0 : (uint64_t)(ru.ru_minflt + ru.ru_majflt);
	queue_stats_sum(r, w);
	for (unsigned i = 0; i < r->pt->streams; i++)
		for (unsigned k = 0; k < 2; k++) {
			w->inj_reqs[k] += atomic_load_explicit(&r->st[i].inj[k].reqs,
							       memory_order_relaxed);
			w->inj_turns[k] += atomic_load_explicit(&r->st[i].inj[k].turns,
								memory_order_relaxed);
		}
}

/* ---- --inject-slowdown-pct: busy work per request, sized and checked against the run ---- */

/* Nanoseconds per turn of cpu_busy_iters on this CPU (measured once, the fastest of a few). */
static double ns_per_busy_iter(void)
{
	static double v;
	for (int i = 0; v <= 0 && i < 20; i++) { /* short tries: some of them run unpreempted */
		double best = 0;
		for (int k = 0; k < 20; k++) {
			uint64_t t0 = vqs_now_ns();
			cpu_busy_iters(100000);
			double x = (double)(vqs_now_ns() - t0) / 1e5;
			if (x > 0 && (!best || x < best))
				best = x;
		}
		v = best;
	}
	return v > 0 ? v : 1;
}

#define CAL_SLICES 12 /* per side of a calibration round */
#define CAL_SLICE_MS 3

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Where each driver's entries of both sides stand now, for tpo_medians. */
static void tpo_mark(struct run *r, unsigned start[][2])
{
	for (unsigned i = 0; i < r->pt->drivers; i++)
		for (unsigned k = 0; k < 2; k++)
			start[i][k] = atomic_load_explicit(&r->drv[i].cal_n[k], memory_order_relaxed);
}

/* The median time per request (ns) over the requests each side's entries since start counted
 * (0 for a side without any): the 1/16 ns per request of an entry, weighted by its requests. */
static void tpo_medians(struct run *r, unsigned start[][2], double tpo[2])
{
	unsigned ndrv = r->pt->drivers;
	/* A driver that read cal_side before it turned 0 may still file one entry past the count
	 * read here: leave some of the ring unread. */
	unsigned keep = CAL_MAX - 64;
	uint64_t *v = malloc((size_t)ndrv * keep * sizeof(*v));
	for (unsigned k = 0; k < 2; k++) {
		tpo[k] = 0;
		if (!v)
			continue;
		size_t n = 0, reqs = 0, half = 0;
		for (unsigned i = 0; i < ndrv; i++) {
			unsigned end = atomic_load_explicit(&r->drv[i].cal_n[k], memory_order_acquire);
			unsigned from = end - start[i][k] > keep ? end - keep : start[i][k];
			for (unsigned x = from; x != end; x++) {
				v[n] = r->drv[i].cal_tpo[k][x % CAL_MAX];
				reqs += v[n++] & UINT32_MAX;
			}
		}
		qsort(v, n, sizeof(*v), cmp_u64); /* by time per request: it is the high half */
		for (size_t x = 0; x < n; x++) /* the median request: weight each entry by its count */
			if ((half += v[x] & UINT32_MAX) * 2 >= reqs) {
				tpo[k] = (double)(v[x] >> 32) / 16;
				break;
			}
	}
	free(v);
}

/*
 * Time per request with and without `amount`, in ns: slices of CAL_SLICE_MS alternate between the
 * two, the drivers file the time between their reaps per request reaped under the side of the
 * slice, and tpo[1] / tpo[0] are the medians over requests with / without (0 when a side
 * completed nothing). In a closed loop that is the time per request, the inverse of throughput
 * (for rr with one request in flight, the round trip). Medians over requests, not one ratio of
 * counts over a window: when another program takes a CPU from a worker or a driver for a few
 * ms, a window's throughput drops with it, but only the one reap after the gap is slow, and the
 * median request still shows what the code costs. Alternating slices put drift on both sides.
 */
static void slice_tpo(struct run *r, uint32_t amount, double tpo[2])
{
	unsigned start[r->pt->drivers][2];
	tpo_mark(r, start);
	for (unsigned k = 0; k < 2 * CAL_SLICES; k++) {
		unsigned on = k % 2 == 0;
		atomic_store_explicit(&r->inject_amount, on ? amount : 0, memory_order_relaxed);
		atomic_store_explicit(&r->cal_side, 1 + on, memory_order_relaxed);
		sleep_ms(CAL_SLICE_MS);
	}
	atomic_store_explicit(&r->cal_side, 0, memory_order_relaxed);
	tpo_medians(r, start, tpo);
}

/*
 * Measure the slowdown that inj->turns of busy work make (slice_tpo) into out, then rescale
 * them (inject_rescale_turns) while the slowdown differs from the target by more than a fifth
 * of it, measuring again, for at most `rounds` measurements; inj->turns is left at the amount
 * for the next window. With inj->turns 0 it starts from the wanted share of the time per
 * request measured without it. The clock alone cannot size the work: a request of 200 ns plus
 * a 20 ns cpu_spin_ns costs more than 220 ns (the spin's clock reads alone are tens of ns), and
 * what a nanosecond of handler time costs the whole path depends on which side is the
 * bottleneck.
 */
static void inject_calibrate(struct run *r, struct inject *inj, unsigned rounds,
			     struct sample *out)
{
	double want = r->pt->inject_pct / 100.0, tpo[2], n = inj->turns;
	if (!n) {
		slice_tpo(r, 0, tpo);
		inj->tpo_min = tpo[0];
		n = want * (tpo[0] > 0 ? tpo[0] : 1000) / ns_per_busy_iter() + 1;
	}
	for (unsigned round = 0; round < rounds; round++) {
		slice_tpo(r, inject_amount(n), tpo);
		if (!round)
			out->inject_achieved_pct =
				tpo[0] > 0 && tpo[1] > 0 ? (tpo[1] / tpo[0] - 1) * 100 : 0;
		double next = inject_rescale_turns(r->pt->inject_pct, n, tpo, 4, &inj->tpo_min,
						   ns_per_busy_iter());
		if (next == n)
			break;
		n = next;
	}
	inj->turns = n;
}

static int start_drivers(struct run *r)
{
	const struct point *pt = r->pt;
	unsigned per = pt->streams / pt->drivers, extra = pt->streams % pt->drivers, first = 0;
	for (unsigned i = 0; i < pt->drivers; i++) {
		struct driver *d = &r->drv[i];
		d->run = r;
		d->first = first;
		d->count = per + (i < extra);
		first += d->count;
		d->cpu = pt->driver_cpus.n ? pt->driver_cpus.cpu[i % pt->driver_cpus.n] : 0;
		/* time per request (FIG_NSPO, and the injection's calibration): closed loops */
		for (unsigned k = 0; !pt->rate && k < 2; k++) {
			if (!(d->cal_tpo[k] = malloc(CAL_MAX * sizeof(uint64_t))))
				return -ENOMEM;
			/* Its pages faulted in now, not by the window's first entries: a fault
			 * stalls the driver with its requests in flight, and malloc may hand one
			 * side's ring back touched by an earlier run and the other's fresh, so the
			 * faults fell on one side's slices (docs/bench.md, "page faults in the
			 * calibration rings"). */
			memset(d->cal_tpo[k], 0, CAL_MAX * sizeof(uint64_t));
		}
		if (pt->rate)
			d->period_ns = (uint64_t)(1e9 * pt->drivers / (double)pt->rate);
		if (pthread_create(&d->thread, NULL, driver_main, d))
			return -EAGAIN;
		d->started = true;
	}
	return 0;
}

static void collect(struct run *r, const struct window *a, const struct window *b, int side,
		    struct sample *out)
{
	double wall = (double)(b->t - a->t);
	uint64_t ops = b->done - a->done;
	struct hist *lat = calloc(1, sizeof(*lat));
	out->ops = ops;
	out->fig[FIG_OPS] = wall > 0 ? (double)ops * 1e9 / wall : 0;
	out->fig[FIG_WUTIL] = wall > 0 ? (double)(b->wcpu - a->wcpu) / wall : 0;
	out->fig[FIG_DUTIL] = wall > 0 ? (double)(b->dcpu - a->dcpu) / wall : 0;
	unsigned nw = vqs_sched_nworkers(r->sched);
	out->fig[FIG_WRUNQ] = wall > 0 && nw ? (double)(b->wrunq - a->wrunq) / (wall * nw) : 0;
	if (ops) {
		out->fig[FIG_WCPU] = (double)(b->wcpu - a->wcpu) / (double)ops;
		out->fig[FIG_DCPU] = (double)(b->dcpu - a->dcpu) / (double)ops;
		out->fig[FIG_KICKS] = (double)(b->kicks - a->kicks) / (double)ops;
		out->fig[FIG_CALLS] = (double)(b->calls - a->calls) / (double)ops;
		out->fig[FIG_REARMS] = (double)(b->rearms - a->rearms) / (double)ops;
		out->fig[FIG_WAKES] = (double)(b->wakeups - a->wakeups) / (double)ops;
		out->info.naps_per_op = (double)(b->naps - a->naps) / (double)ops;
		out->info.cost_reads_per_op =
			(double)(b->w0.cost_reads - a->w0.cost_reads) / (double)ops;
	}
	out->info.w0 = b->w0;
	out->info.mode_changes = b->w0.mode_changes - a->w0.mode_changes;
	out->info.polling_ends = b->w0.polling_ends - a->w0.polling_ends;
	out->info.rent_naps = b->w0.rent_naps - a->w0.rent_naps;
	out->info.late_naps = b->w0.late_naps - a->w0.late_naps;
	out->info.faults = b->faults - a->faults;
	for (unsigned k = 0; k < BATCH_BUCKETS; k++)
		out->batch_hist[k] = b->batch_hist[k] - a->batch_hist[k];
	if (b->handler_calls > a->handler_calls)
		out->fig[FIG_BATCH] = (double)(b->handler_reqs - a->handler_reqs) /
				      (double)(b->handler_calls - a->handler_calls);
	if (lat) {
		for (unsigned i = 0; i < r->pt->drivers; i++)
			hist_merge(lat, &r->drv[i].lat[side]);
		out->fig[FIG_SAMPLES] = (double)lat->count;
		out->fig[FIG_P50] = hist_quantile(lat, 0.5);
		out->fig[FIG_P99] = hist_quantile(lat, 0.99);
		out->fig[FIG_P999] = hist_quantile(lat, 0.999);
		free(lat);
	}
}

int workload_run(const struct point *pt, struct inject *inj, struct sample *out)
{
	memset(out, 0, (pt->interleave ? 2 : 1) * sizeof(*out));
	struct run r = {.pt = pt};
	int rc;
	uint64_t features = VQS_BIT(VQS_F_VERSION_1) | (pt->event_idx ? VQS_BIT(VQS_F_EVENT_IDX) : 0) |
			    (pt->packed ? VQS_BIT(VQS_F_RING_PACKED) : 0);
	r.buf_len = pt->payload > SEQ_BYTES ? pt->payload : SEQ_BYTES;
	size_t per_stream = ring_bytes(pt->ring) + (size_t)pt->ring * 2 * ((r.buf_len + 63) & ~63u);
	size_t arena = ((per_stream * pt->streams + (1u << 20)) + 4095) & ~(size_t)4095;
	/* aligned: the injection's sides have cache lines of their own (struct inject_side) */
	r.st = aligned_alloc(_Alignof(struct stream), pt->streams * sizeof(*r.st));
	if (r.st)
		memset(r.st, 0, pt->streams * sizeof(*r.st));
	r.drv = calloc(pt->drivers, sizeof(*r.drv));
	unsigned (*tpo_start)[2] = calloc(pt->drivers, sizeof(*tpo_start));
	if (!r.st || !r.drv || !tpo_start) {
		rc = -ENOMEM;
		goto out;
	}
	for (unsigned i = 0; i < pt->streams; i++)
		r.st[i].kick_fd = r.st[i].call_fd = -1;
	struct vqs_mem_region reg;
	if (pt->transport != TRANSPORT_DIRECT) {
		/* the backend maps the frontend's memfd itself: no vqs_mem on this side */
		rc = vu_link_create(&r.vu, pt->streams, pt->ring, features, arena);
		r.gmem = rc ? NULL : vu_link_gmem(r.vu);
	} else if (!(rc = vqs_gmem_create(&r.gmem, 1ull << 32, arena))) {
		vqs_gmem_region(r.gmem, &reg);
		if (!(rc = vqs_mem_create(&r.mem)))
			rc = vqs_mem_set(r.mem, &reg, 1);
	}
	if (rc)
		goto out;
	for (unsigned i = 0; i < pt->streams; i++)
		if ((rc = stream_init(&r, &r.st[i], features)))
			goto out;

	/* The affinity shape: the owner creates the scheduler from the vCPU's CPU. */
	struct cpu_list main_cpus;
	cpu_allowed(&main_cpus);
	if (pt->shared_cpu)
		cpu_pin_self_list(&pt->driver_cpus);
	struct vqs_sched_opts so;
	sched_opts_for(pt, &so);
	rc = vqs_sched_create(&r.sched, &so);
	if (pt->shared_cpu)
		cpu_pin_self_list(&main_cpus);
	if (rc)
		goto out;
	for (unsigned i = 0; r.vu && i < pt->streams; i++)
		vu_link_serve(r.vu, i, handler, &r.st[i]);
	if (r.vu && (rc = vu_link_start(r.vu, r.sched, pt->transport == TRANSPORT_VHOST_USER_LOG)))
		goto out;
	for (unsigned i = 0; i < pt->streams; i++) {
		if (r.vu) {
			stream_bind_vu(&r, i);
			continue;
		}
		struct vqs_queue_opts qo;
		vqs_queue_opts_init(&qo);
		qo.vq = r.st[i].dev;
		qo.kick_fd = r.st[i].kick_fd;
		qo.call_fd = r.st[i].call_fd;
		qo.handler = handler;
		qo.opaque = &r.st[i];
		qo.group = -1;
		qo.worker = -1;
		qo.iov_per_req = 4;
		if (!echoes(pt))
			qo.prefetch_lines = 0; /* the null handler reads no buffer */
		qo.handler_nonblocking = true; /* it spins at most, for handler_ns and the injection */
		if ((rc = vqs_sched_attach(r.sched, &qo, &r.st[i].q)))
			goto out;
	}

	worker_mask(r.sched, out->worker_cpus, sizeof(out->worker_cpus));
	struct window a = {0}, b = {0};
	double tpo[2] = {0};
	if (pt->workload != WL_IDLE && (rc = start_drivers(&r)))
		goto stop;
	sleep_ms(pt->warmup_ms);
	/* The injection's amount comes sized from an earlier run of the point (run_plan's
	 * calibration run, the only one that sizes it here), so that the measured window follows
	 * the warm-up as it does without injection; each run checks it after its window (an
	 * interleaved one with its window). */
	if (pt->inject_pct && !inj->turns)
		inject_calibrate(&r, inj, 6, out);
	uint32_t amount = pt->inject_pct ? inject_amount(inj->turns) : 0;
	if (pt->interleave) { /* the window starts on side 0, without the work */
		r.side_amount = amount;
		r.interleave_reqs = (uint64_t)pt->interleave *
				    (pt->workload == WL_RR ? pt->outstanding : pt->ring / 2) * pt->streams;
		r.slice_seed = vqs_now_ns(); /* each window its own order */
		atomic_store_explicit(&r.cal_side, 1, memory_order_relaxed);
		amount = 0;
	}
	atomic_store_explicit(&r.inject_amount, amount, memory_order_relaxed);
	window_mark(&r, &a);
	atomic_store_explicit(&r.phase, PH_MEASURE, memory_order_release); /* pairs with driver_main */
	/* Mark before DRAIN: a driver with nothing in flight exits on DRAIN, and a finished thread's
	 * CPU clock can no longer be read (its time would read as 0 and the difference underflow). */
	tpo_mark(&r, tpo_start);
	atomic_store_explicit(&r.cal_side, 1, memory_order_relaxed);
	sleep_ms(pt->duration_ms);
	/* An interleaved window lasts until each side had two slices (two pairs), when other
	 * programs left the drivers too little of the CPU for that; at most 20 times longer. */
	for (unsigned ms = 0; pt->interleave && pt->workload != WL_IDLE && ms < 20 * pt->duration_ms &&
			      atomic_load_explicit(&r.drv[0].slice, memory_order_relaxed) < 4; ms++)
		sleep_ms(1);
	window_mark(&r, &b);
	/* Stops driver 0's switching (it reads the phase before it reaps), then the filing. */
	atomic_store_explicit(&r.phase, PH_WARMUP, memory_order_release);
	atomic_store_explicit(&r.cal_side, 0, memory_order_relaxed);
	tpo_medians(&r, tpo_start, tpo);
	/* The window measured the amount: correct it, in a measured repeat by at most a quarter,
	 * so that one noisy window does not make the next repeat's regression another one. */
	if (pt->inject_pct && pt->interleave) {
		inj->turns = inject_rescale_turns(pt->inject_pct, inj->turns, tpo, inj->sizing ? 4 : 1.25,
						  &inj->tpo_min, ns_per_busy_iter());
	} else if (pt->inject_pct) { /* out of the window (no latencies recorded): check it */
		inject_calibrate(&r, inj, 2, out);
	}
	atomic_store_explicit(&r.phase, PH_DRAIN, memory_order_release); /* pairs with driver_main */
stop:
	for (unsigned i = 0; i < pt->drivers; i++)
		if (r.drv[i].started) {
			pthread_join(r.drv[i].thread, NULL);
			out->lost += r.drv[i].lost;
			out->duplicated += r.drv[i].dup;
			out->corrupted += r.drv[i].corrupt;
		}
	/* after the joins: the drivers' histograms are theirs until then */
	if (!rc && pt->interleave) {
		/* Per side only what the driver files by side: latencies and the time per request.
		 * The window's counts and CPU clocks cannot be split between sides that switch
		 * thousands of times; a side's ops_per_s is the pace of its median request. */
		for (int k = 0; k < 2; k++) {
			struct sample *x = &out[k];
			collect(&r, &a, &b, k, x);
			double keep[] = {x->fig[FIG_P50], x->fig[FIG_P99], x->fig[FIG_P999],
					 x->fig[FIG_SAMPLES]};
			memset(x->fig, 0, sizeof(x->fig));
			memset(x->batch_hist, 0, sizeof(x->batch_hist));
			x->fig[FIG_P50] = keep[0];
			x->fig[FIG_P99] = keep[1];
			x->fig[FIG_P999] = keep[2];
			x->fig[FIG_SAMPLES] = keep[3];
			x->fig[FIG_NSPO] = tpo[k];
			x->fig[FIG_OPS] = tpo[k] > 0 ? 1e9 / tpo[k] : 0;
		}
		/* what the injection made of the time per request, in this very window */
		out[1].inject_achieved_pct = tpo[0] > 0 && tpo[1] > 0 ? (tpo[1] / tpo[0] - 1) * 100 : 0;
		memcpy(out[1].worker_cpus, out[0].worker_cpus, sizeof(out[1].worker_cpus));
	} else if (!rc) {
		collect(&r, &a, &b, 0, out);
		out->fig[FIG_NSPO] = tpo[0];
	}
	/* What the window's requests got, per side: the turns they were given times a turn's
	 * time (approximate: measured once, in a tight loop). */
	struct sample *inj_out = &out[pt->interleave ? 1 : 0];
	for (unsigned k = 0; !rc && k < 2; k++) {
		uint64_t n = b.inj_reqs[k] - a.inj_reqs[k];
		inj_out->inject_side_ns[k] =
			n ? (double)(b.inj_turns[k] - a.inj_turns[k]) / (double)n * ns_per_busy_iter() : 0;
	}
	inj_out->inject_ns = (inj_out->inject_side_ns[0] + inj_out->inject_side_ns[1]) / 2;
	for (unsigned i = 0; i < pt->streams; i++) {
		if (r.st[i].q && !r.vu) /* the backend detaches its own queues */
			vqs_sched_detach(r.st[i].q);
		if (r.st[i].dev && vqs_vq_is_broken(r.st[i].dev)) {
			fprintf(stderr, "vqs-bench: queue %u broke: %s\n", i,
				vqs_vq_err_name(vqs_vq_error(r.st[i].dev)));
			if (!rc)
				rc = -EIO;
		}
	}
out:
	if (r.vu) { /* stops the backend's queues: before their scheduler goes */
		vu_link_destroy(r.vu);
		r.gmem = NULL;
	}
	if (r.sched)
		vqs_sched_destroy(r.sched);
	if (r.st)
		for (unsigned i = 0; i < pt->streams; i++)
			stream_fini(&r.st[i]);
	if (r.mem)
		vqs_mem_destroy(r.mem);
	if (r.gmem)
		vqs_gmem_destroy(r.gmem);
	free(r.st);
	free(tpo_start);
	for (unsigned i = 0; r.drv && i < pt->drivers; i++)
		for (unsigned k = 0; k < 2; k++)
			free(r.drv[i].cal_tpo[k]);
	free(r.drv);
	out->error = rc;
	if (pt->interleave) { /* losses and errors are the run's: both sides carry them */
		out[1].error = rc;
		out[1].lost = out->lost;
		out[1].duplicated = out->duplicated;
		out[1].corrupted = out->corrupted;
	}
	return rc;
}
