/* SPDX-License-Identifier: MIT */
/*
 * The machine's floors, measured with two threads pinned to two CPUs, both polling unless said
 * otherwise. They bound what any ring on this machine can do, so every result is shown as a ratio
 * to one of them:
 *  - cache-line round trip: one line bounced between the two CPUs (the cost of any handshake);
 *  - eventfd round trip: each side sleeps in read() until the other writes (the wake-up a
 *    sleeping worker or guest pays per notification);
 *  - timed wake-up: how long a thread asking to sleep TIMED_SLEEP_NS really sleeps, with a
 *    normal thread's timer slack (50 us) and with it lowered to 1 ns (PR_SET_TIMERSLACK): what
 *    a worker that re-polls after a short precise sleep, notifications still off, would pay;
 *  - a minimal SPSC ring in the shape of a split ring, doing what any request ring must: a
 *    descriptor-sized entry (address, length, id) out, the consumer reading all of it, and a
 *    completion entry (id, bytes written) back that the producer reads, published by one index
 *    each way; at several batch sizes, and request/response with one outstanding.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cpu.h"

/* ---- cache-line ping-pong ---- */

struct line {
	_Alignas(64) atomic_uint_fast64_t v;
	uint64_t iters;
	uint64_t ns;
};

static void line_ping(void *p)
{
	struct line *l = p;
	uint64_t t0 = vqs_now_ns();
	for (uint64_t i = 0; i < l->iters; i++) {
		atomic_store_explicit(&l->v, 2 * i + 1, memory_order_release); /* pairs with pong's acquire */
		while (atomic_load_explicit(&l->v, memory_order_acquire) != 2 * i + 2)
			cpu_relax();
	}
	l->ns = vqs_now_ns() - t0;
}

static void line_pong(void *p)
{
	struct line *l = p;
	for (uint64_t i = 0; i < l->iters; i++) {
		while (atomic_load_explicit(&l->v, memory_order_acquire) != 2 * i + 1) /* pairs with ping */
			cpu_relax();
		atomic_store_explicit(&l->v, 2 * i + 2, memory_order_release);
	}
}

/* ---- eventfd ping-pong ---- */

struct efd_pair {
	int to_b, to_a;
	uint64_t iters;
	struct hist h;
};

static void efd_ping(void *p)
{
	struct efd_pair *e = p;
	uint64_t one = 1, v;
	for (uint64_t i = 0; i < e->iters; i++) {
		uint64_t t0 = vqs_now_ns();
		if (write(e->to_b, &one, 8) != 8 || read(e->to_a, &v, 8) != 8)
			return;
		hist_add(&e->h, vqs_now_ns() - t0);
	}
}

static void efd_pong(void *p)
{
	struct efd_pair *e = p;
	uint64_t one = 1, v;
	for (uint64_t i = 0; i < e->iters; i++)
		if (read(e->to_b, &v, 8) != 8 || write(e->to_a, &one, 8) != 8)
			return;
}

/* ---- minimal SPSC ring ---- */

struct ment {
	uint64_t addr;
	uint32_t len;
	uint32_t id;
};

/* A completion: which request, and how many bytes the consumer wrote (a used element). */
struct mdone {
	uint32_t id;
	uint32_t len;
};

struct mring {
	_Alignas(64) atomic_uint prod;  /* entries published by the producer */
	_Alignas(64) atomic_uint done;  /* entries completed by the consumer */
	_Alignas(64) atomic_bool stop;
	_Alignas(64) struct ment ent[VQS_VQ_MAX_SIZE];
	_Alignas(64) struct mdone used[VQS_VQ_MAX_SIZE];
	unsigned num, batch;
	uint64_t duration_ns, ops, ns, check;
	bool rr;
	struct hist h;
};

static void mring_producer(void *p)
{
	struct mring *r = p;
	unsigned prod = 0, done = 0, mask = r->num - 1;
	uint64_t t0 = vqs_now_ns(), end = t0 + r->duration_ns, checked = 0;
	uint64_t sum = 0;
	for (;;) {
		if (prod - checked >= 256 || r->rr) {
			checked = prod;
			if (vqs_now_ns() >= end)
				break;
		}
		unsigned room = r->num - (prod - done), n = r->rr ? (prod == done) : r->batch;
		if (n > room)
			n = room;
		uint64_t t_sub = r->rr ? vqs_now_ns() : 0;
		for (unsigned i = 0; i < n; i++) {
			struct ment *e = &r->ent[(prod + i) & mask];
			e->addr = prod + i;
			e->len = 64;
			e->id = (prod + i) & mask;
		}
		if (n) {
			prod += n;
			atomic_store_explicit(&r->prod, prod, memory_order_release); /* pairs with consumer acquire */
		}
		unsigned d;
		/* acquire pairs with the consumer's release of done: its used[] writes are visible */
		while ((d = atomic_load_explicit(&r->done, memory_order_acquire)) == done &&
		       (r->rr || prod - done == r->num))
			cpu_relax();
		for (; done != d; done++)
			sum += r->used[done & mask].id + r->used[done & mask].len;
		if (r->rr)
			hist_add(&r->h, vqs_now_ns() - t_sub);
	}
	while (done != prod) /* let the consumer finish what is published */
		done = atomic_load_explicit(&r->done, memory_order_acquire);
	r->ns = vqs_now_ns() - t0;
	r->ops = done;
	r->check = sum; /* keeps the reads of the completions */
	atomic_store_explicit(&r->stop, true, memory_order_release);
}

static void mring_consumer(void *p)
{
	struct mring *r = p;
	unsigned cons = 0, mask = r->num - 1;
	for (;;) {
		/* acquire pairs with the producer's release of prod: its entries are visible */
		unsigned avail = atomic_load_explicit(&r->prod, memory_order_acquire) - cons;
		if (!avail) {
			if (atomic_load_explicit(&r->stop, memory_order_acquire))
				return;
			cpu_relax();
			continue;
		}
		unsigned n = avail < r->batch ? avail : r->batch;
		for (unsigned i = 0; i < n; i++) {
			struct ment e = r->ent[(cons + i) & mask];
			r->used[(cons + i) & mask] =
				(struct mdone){.id = e.id, .len = e.addr ? e.len : 0};
		}
		cons += n;
		atomic_store_explicit(&r->done, cons, memory_order_release); /* pairs with producer acquire */
	}
}

static int mring_run(struct mring *r, int a, int b, unsigned batch, bool rr, uint64_t dur_ns)
{
	atomic_store(&r->prod, 0);
	atomic_store(&r->done, 0);
	atomic_store(&r->stop, false);
	r->batch = batch;
	r->rr = rr;
	r->duration_ns = dur_ns;
	hist_reset(&r->h);
	return cpu_run_pair(a, mring_producer, b, mring_consumer, r);
}

/* ---- timed wake-up ---- */

#define TIMED_SLEEP_NS 10000u

/* Median time a TIMED_SLEEP_NS relative sleep takes on this thread with timer slack `slack`
 * (restored after). */
static double timed_sleep_ns(unsigned long slack, unsigned iters)
{
	int old = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	if (old < 0 || prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0))
		return 0;
	struct hist *h = calloc(1, sizeof(*h));
	double p50 = 0;
	if (h) {
		struct timespec ts = {.tv_sec = 0, .tv_nsec = TIMED_SLEEP_NS};
		for (unsigned i = 0; i < iters; i++) {
			uint64_t t0 = vqs_now_ns();
			clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
			hist_add(h, vqs_now_ns() - t0);
		}
		p50 = hist_quantile(h, 0.5);
		free(h);
	}
	prctl(PR_SET_TIMERSLACK, (unsigned long)old, 0, 0, 0);
	return p50;
}

/* The median of a share over the trials whose run streamed (ops > 0; a share of 0 counts). */
static double share_median(const double share[FLOOR_TRIALS], const double ops[FLOOR_TRIALS])
{
	double v[FLOOR_TRIALS];
	unsigned k = 0;
	for (unsigned t = 0; t < FLOOR_TRIALS; t++)
		if (ops[t] > 0)
			v[k++] = share[t];
	return k ? median_sorted(v, k) : 0;
}

/* The minimal ring indexes with a mask (and split rings need a power of two): the largest power
 * of two not above the queue size. */
static unsigned ring_pow2(unsigned ring)
{
	if (ring < 2 || ring > VQS_VQ_MAX_SIZE)
		ring = 256;
	while (ring & (ring - 1))
		ring &= ring - 1;
	return ring;
}

void floors_measure(struct floors *f, unsigned ring, int a, int b, bool quick)
{
	memset(f, 0, sizeof(*f));
	f->cpu_a = a;
	f->cpu_b = b;
	uint64_t ms = 1000000;

	double rtt[3];
	for (int t = 0; t < 3; t++) {
		struct line l = {.iters = quick ? 20000 : 100000};
		atomic_init(&l.v, 0);
		cpu_run_pair(a, line_ping, b, line_pong, &l);
		rtt[t] = (double)l.ns / (double)l.iters;
	}
	f->cacheline_rtt_ns = median_sorted(rtt, 3);

	struct efd_pair *e = calloc(1, sizeof(*e));
	if (e) {
		e->to_b = eventfd(0, EFD_CLOEXEC);
		e->to_a = eventfd(0, EFD_CLOEXEC);
		e->iters = quick ? 300 : 2000;
		if (e->to_b >= 0 && e->to_a >= 0)
			cpu_run_pair(a, efd_ping, b, efd_pong, e);
		f->eventfd_rtt_ns = hist_quantile(&e->h, 0.5);
		if (e->to_b >= 0)
			close(e->to_b);
		if (e->to_a >= 0)
			close(e->to_a);
		free(e);
	}

	f->timed_sleep_req_ns = TIMED_SLEEP_NS;
	f->timed_sleep_ns[0] = timed_sleep_ns(50000, quick ? 100 : 500);
	f->timed_sleep_ns[1] = timed_sleep_ns(1, quick ? 100 : 500);

	struct mring *mr = aligned_alloc(64, sizeof(*mr));
	if (!mr)
		return;
	mr->num = ring = ring_pow2(ring);
	/* Each trial runs the minimal ring, then vqsched's split and packed rings alone, in turn,
	 * and a ratio divides figures of one trial: this VM's cache-line round trip moves between
	 * ~450 and ~70 ns for minutes at a time, the minimal ring's rate with it by 2.6-3x and
	 * the rings alone's by less (docs/bench.md, "Two machines in one"), so figures measured
	 * apart may be of two machines. */
	static const unsigned batches[] = {1, 4, 16, 64};
	for (unsigned i = 0; i < sizeof(batches) / sizeof(batches[0]) && batches[i] <= ring; i++) {
		double ops[FLOOR_TRIALS], vops[2][FLOOR_TRIALS], empty[2][FLOOR_TRIALS],
			full[2][FLOOR_TRIALS];
		for (int t = 0; t < FLOOR_TRIALS; t++) {
			mring_run(mr, a, b, batches[i], false, (quick ? 20 : 60) * ms);
			ops[t] = mr->ns ? (double)mr->ops * 1e9 / (double)mr->ns : 0;
			for (unsigned l = 0; l < 2; l++) {
				struct vref_out r;
				floors_vring_run(l == 1, ring, a, b, (quick ? 20 : 60) * ms, batches[i],
						 &r);
				vops[l][t] = r.ops_per_s;
				empty[l][t] = r.dev_empty;
				full[l][t] = r.drv_full;
			}
		}
		unsigned k = f->nbatch++;
		f->batch[k] = batches[i];
		f->ring_ops_per_s[k] = trials_spread(ops, FLOOR_TRIALS).med;
		for (unsigned l = 0; l < 2; l++) {
			f->vring_stream_ops_per_s[l][k] = trials_spread(vops[l], FLOOR_TRIALS).med;
			f->vring_stream_dev_empty[l][k] = share_median(empty[l], vops[l]);
			f->vring_stream_drv_full[l][k] = share_median(full[l], vops[l]);
			f->vring_stream_x[l][k] = trials_ratio(vops[l], ops, FLOOR_TRIALS);
		}
	}
	/* rr: the same trials, each a third of the time one run had */
	double p50[FLOOR_TRIALS], p99[FLOOR_TRIALS], v50[2][FLOOR_TRIALS], v99[2][FLOOR_TRIALS];
	for (int t = 0; t < FLOOR_TRIALS; t++) {
		mring_run(mr, a, b, 1, true, (quick ? 20 : 67) * ms);
		p50[t] = hist_quantile(&mr->h, 0.5);
		p99[t] = hist_quantile(&mr->h, 0.99);
		for (unsigned l = 0; l < 2; l++) {
			struct vref_out r;
			floors_vring_run(l == 1, ring, a, b, (quick ? 20 : 67) * ms, 0, &r);
			v50[l][t] = r.p50_ns;
			v99[l][t] = r.p99_ns;
		}
	}
	f->ring_rr_p50_ns = trials_spread(p50, FLOOR_TRIALS).med;
	f->ring_rr_p99_ns = trials_spread(p99, FLOOR_TRIALS).med;
	for (unsigned l = 0; l < 2; l++) {
		f->vring_rr_p50_ns[l] = trials_spread(v50[l], FLOOR_TRIALS).med;
		f->vring_rr_p99_ns[l] = trials_spread(v99[l], FLOOR_TRIALS).med;
		f->vring_rr_x[l] = trials_ratio(v50[l], p50, FLOOR_TRIALS);
	}
	free(mr);
	f->measured = true;
}

/* Shorter than a trial of the floors: it runs before every repeat of the points it serves. */
#define BESIDE_MS 30u

double floors_beside(const struct floors *f, const struct point *pt, bool quick)
{
	enum beside what = point_beside(pt);
	if (!f->measured || what == BESIDE_NONE)
		return 0;
	unsigned ring = ring_pow2(pt->ring);
	uint64_t ns = (quick ? BESIDE_MS / 2 : BESIDE_MS) * 1000000ull;
	if (what == BESIDE_RINGS_ALONE) {
		struct vref_out r;
		floors_vring_run(pt->packed, ring, f->cpu_a, f->cpu_b, ns, pt->batch_max, &r);
		return r.ops_per_s;
	}
	struct mring *mr = aligned_alloc(64, sizeof(*mr));
	if (!mr)
		return 0;
	mr->num = ring;
	double p50 = mring_run(mr, f->cpu_a, f->cpu_b, 1, true, ns) ? 0 : hist_quantile(&mr->h, 0.5);
	free(mr);
	return p50;
}

void floors_attach(const struct floors *f, struct result *r)
{
	r->floor_name = NULL;
	r->floor_value = r->floor_ratio = 0;
	if (!f->measured || r->pt.workload == WL_IDLE)
		return;
	bool saturating = r->pt.workload != WL_RR && r->pt.rate == 0;
	if (saturating && f->nbatch) {
		unsigned i = floors_batch_index(f, r->pt.batch_max);
		static char names[8][32];
		snprintf(names[i], sizeof(names[i]), "ring_ops_per_s[%u]", f->batch[i]);
		r->floor_name = names[i];
		r->floor_value = f->ring_ops_per_s[i];
		r->floor_ratio = r->med[FIG_OPS] / r->floor_value;
	} else if (!saturating && f->ring_rr_p50_ns > 0) {
		/* latency of a request that finds the ring idle: the minimal ring's round trip */
		r->floor_name = "ring_rr_p50_ns";
		r->floor_value = f->ring_rr_p50_ns;
		r->floor_ratio = r->med[FIG_P50] / r->floor_value;
	}
}
