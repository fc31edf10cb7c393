/* SPDX-License-Identifier: MIT */
/*
 * Reference lines next to the floors: vqsched's own rings, its driver side and its device side,
 * between two pinned polling threads with nothing in between (no scheduler, no handler, no
 * eventfd): answering one request at a time, and streaming at the floors' batch sizes (as
 * vqs-bench's points: requests of a readable and a writable buffer of their own, the driver
 * reusing the last freed first and refilling as entries come back, the device running one ring
 * session per batch: begin, pop, fill, end); each for split and for packed rings. Not floors of
 * the machine: they show what the ring format itself costs over the minimal ring, so a point's
 * gap to the floor splits into the format's share and the scheduler's.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cpu.h"

struct vref {
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	/* nslot pairs of buffers, 64 bytes each, a readable one at out_gpa + 64 i and a writable
	 * one at in_gpa + 64 i: as vqs-bench's points, each request in flight has its own, and a
	 * driver that reuses the last freed first (free, LIFO) answers one request at a time
	 * from the same pair */
	uint64_t out_gpa, in_gpa;
	unsigned nslot, *free;
	uint64_t duration_ns;
	unsigned batch; /* 0: request/response, one at a time; else the streaming batch */
	atomic_bool stop;
	bool failed;
	struct hist h;
	uint64_t ops, ns; /* streaming: requests completed in ns */
	/* streaming: the device's sessions and those that found no chain; the driver's steps
	 * until the time was up and those that found no room */
	uint64_t sessions, empty, steps, full;
};

/* Giving up on an answer: the device side is ours and answers in microseconds, so this only
 * fires when a ring broke. */
#define VREF_STALL_NS 1000000000ull

static void vref_driver(void *p)
{
	struct vref *v = p;
	static int token;
	uint64_t end = vqs_now_ns() + v->duration_ns;
	for (;;) {
		struct vqs_drv_buf b[2] = {{v->out_gpa, 64}, {v->in_gpa, 64}}; /* slot 0 */
		uint64_t t0 = vqs_now_ns();
		if (t0 >= end)
			break;
		if (vqs_drv_add(v->drv, b, 1, 1, &token, false)) {
			v->failed = true;
			break;
		}
		vqs_drv_kick_prepare(v->drv); /* the device polls: its answer is not needed */
		uint32_t len;
		unsigned spins = 0;
		while (!vqs_drv_get_used(v->drv, &len)) {
			cpu_relax();
			if (++spins % 4096 == 0 && vqs_now_ns() - t0 > VREF_STALL_NS) {
				v->failed = true;
				goto out;
			}
		}
		hist_add(&v->h, vqs_now_ns() - t0);
	}
out:
	/* release pairs with the device loop's acquire: it stops after our last request */
	atomic_store_explicit(&v->stop, true, memory_order_release);
}

/* Streaming: keep the ring full, refilling as entries come back, until the time is up; then
 * wait for what is in flight. A step reaps up to REAP completions with one
 * vqs_drv_get_used_batch and refills the room there is, up to a batch, with one vqs_drv_add_batch
 * and one kick_prepare. The ring holds two batches of 64 two-descriptor chains, so the refill of
 * a batch the device flushed is what the device waits for once it finished the other: reaping
 * until none was left before refilling (the reap then ran into the next batch), or a whole
 * batch, held that refill back and the two sides took turns; a quarter of a batch lets the
 * device go on after a quarter (docs/bench.md, "Packed: the misses taken one after another").
 * A request's token is its slot + 1. */
static void vref_driver_stream(void *p)
{
	struct vref *v = p;
	enum { MOST = 256, REAP = 16 };
	static _Thread_local struct vqs_drv_buf bufs[MOST][2];
	static _Thread_local void *tokens[MOST], *got[MOST];
	static _Thread_local uint32_t lens[MOST];
	unsigned cap = vqs_vq_num(v->dev) / 2, fill = v->batch < cap ? v->batch : cap, nfree = 0;
	if (fill > MOST)
		fill = MOST;
	for (unsigned i = v->nslot; i-- > 0;)
		v->free[nfree++] = i;
	uint64_t t0 = vqs_now_ns(), end = t0 + v->duration_ns, now = t0, sent = 0, done = 0;
	uint64_t steps = 0, full = 0;
	for (unsigned step = 1;; step++) {
		unsigned k = vqs_drv_get_used_batch(v->drv, got, lens, REAP);
		for (unsigned i = 0; i < k; i++)
			v->free[nfree++] = (unsigned)((uintptr_t)got[i] - 1);
		done += k;
		if (step % 256 == 0 || now >= end) /* a clock read per 256 steps while sending */
			now = vqs_now_ns();
		if (now >= end) {
			if (done == sent)
				break;
			if (now - end > VREF_STALL_NS) {
				v->failed = true;
				break;
			}
			continue;
		}
		unsigned n = vqs_drv_free_count(v->drv) / 2; /* two descriptors a request */
		if (n > fill)
			n = fill;
		if (n > nfree)
			n = nfree;
		steps++;
		if (!n) {
			full++;
			cpu_relax();
			continue;
		}
		for (unsigned i = 0; i < n; i++) {
			unsigned sl = v->free[--nfree];
			bufs[i][0] = (struct vqs_drv_buf){v->out_gpa + 64ull * sl, 64};
			bufs[i][1] = (struct vqs_drv_buf){v->in_gpa + 64ull * sl, 64};
			tokens[i] = (void *)(uintptr_t)(sl + 1);
		}
		if (vqs_drv_add_batch(v->drv, &bufs[0][0], 1, 1, tokens, n, false) != (int)n) {
			v->failed = true;
			break;
		}
		sent += n;
		vqs_drv_kick_prepare(v->drv); /* the device polls: its answer is not needed */
	}
	v->ops = done;
	v->ns = vqs_now_ns() - t0;
	v->steps = steps;
	v->full = full;
	/* release pairs with the device loop's acquire: it stops after our last request */
	atomic_store_explicit(&v->stop, true, memory_order_release);
}

/* The device's side: one ring session per batch (begin, pop, fill, end), as a scheduler's turn
 * without the scheduler; the sessions are short read-side sections of their own. */
static void vref_device(void *p)
{
	struct vref *v = p;
	enum { MOST = 256 };
	static _Thread_local struct iovec iov[MOST][4];
	static _Thread_local struct vqs_elem e[MOST];
	static _Thread_local struct vqs_elem *pe[MOST];
	static _Thread_local uint32_t written[MOST];
	unsigned most = v->batch ? v->batch : 1;
	if (most > MOST)
		most = MOST;
	for (unsigned i = 0; i < most; i++)
		pe[i] = &e[i];
	vqs_vq_disable_notify(v->dev);
	uint64_t sessions = 0, empty = 0;
	while (!atomic_load_explicit(&v->stop, memory_order_acquire)) {
		/* the pop's inputs again before each pop, as the scheduler sets them (a long
		 * chain's pop points e.iov at the queue's area); the pop writes the rest */
		for (unsigned i = 0; i < most; i++) {
			e[i].iov = iov[i];
			e[i].iov_cap = 4;
		}
		struct vqs_vq_session ss;
		bool call;
		int n = vqs_vq_session_begin(v->dev, &ss);
		if (n > 0)
			n = vqs_vq_session_pop(
				&ss, &(struct vqs_pop_to){.base = e, .stride = sizeof(e[0])}, most);
		if (n > 0)
			vqs_vq_session_fill(&ss, (const struct vqs_elem *const *)pe, written,
					    (unsigned)n);
		vqs_vq_session_end(&ss, &call);
		sessions++;
		empty += n <= 0;
	}
	v->sessions = sessions;
	v->empty = empty;
}

void floors_vring_run(bool packed, unsigned ring, int a, int b, uint64_t dur_ns, unsigned batch,
		      struct vref_out *out)
{
	*out = (struct vref_out){0};
	struct vqs_gmem *gmem = NULL;
	struct vqs_mem *mem = NULL;
	struct vqs_mem_region reg;
	struct vref *v = calloc(1, sizeof(*v));
	if (!v || vqs_gmem_create(&gmem, 1ull << 32, (1u << 20) + (size_t)ring * 128))
		goto out;
	vqs_gmem_region(gmem, &reg);
	if (vqs_mem_create(&mem) || vqs_mem_set(mem, &reg, 1))
		goto out;
	uint64_t features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
			    (packed ? VQS_BIT(VQS_F_RING_PACKED) : 0);
	struct vqs_drv_vq_config dc = {.size = sizeof(dc), .num = ring, .features = features,
				       .gmem = gmem};
	if (vqs_drv_vq_create(&v->drv, &dc))
		goto out;
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = ring, .features = features,
				   .addr_space = VQS_ADDR_GPA, .mem = mem};
	vqs_drv_vq_addrs(v->drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	if (vqs_vq_create(&v->dev) || vqs_vq_configure(v->dev, &vc))
		goto out;
	vqs_drv_disable_cb(v->drv); /* a polling guest wants no interrupts */
	v->nslot = ring / 2;
	v->free = malloc(v->nslot * sizeof(*v->free));
	v->out_gpa = vqs_gmem_alloc(gmem, 64ull * v->nslot, 64);
	v->in_gpa = vqs_gmem_alloc(gmem, 64ull * v->nslot, 64);
	if (!v->free || !v->out_gpa || !v->in_gpa)
		goto out;
	v->duration_ns = dur_ns;
	v->batch = batch;
	atomic_init(&v->stop, false);
	hist_reset(&v->h);
	if (cpu_run_pair(b, batch ? vref_driver_stream : vref_driver, a, vref_device, v) || v->failed)
		goto out;
	if (batch) {
		out->ops_per_s = v->ns ? (double)v->ops * 1e9 / (double)v->ns : 0;
		out->dev_empty = v->sessions ? (double)v->empty / (double)v->sessions : 0;
		out->drv_full = v->steps ? (double)v->full / (double)v->steps : 0;
	} else {
		out->p50_ns = hist_quantile(&v->h, 0.5);
		out->p99_ns = hist_quantile(&v->h, 0.99);
	}
out:
	if (v && v->dev)
		vqs_vq_destroy(v->dev);
	if (v && v->drv)
		vqs_drv_vq_destroy(v->drv);
	if (v)
		free(v->free);
	if (mem)
		vqs_mem_destroy(mem);
	if (gmem)
		vqs_gmem_destroy(gmem);
	free(v);
}
