/* SPDX-License-Identifier: MIT */
/*
 * Batched completion (vqs_req_complete_batch): n requests completed together from another thread
 * cost their queue one hand-over (one push, one wake) instead of n, counted by the queue's
 * async_handovers; a batch mixing two queues costs each one; on the worker inside the handler a
 * batch completes like vqs_req_complete (a length over the buffer clamped, a second completion
 * refused). The driver gets every request back once, with its length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define NUM 64
#define BASE 0x100000u
#define ARENA (1u << 20)
#define REQS 16u

/* Keeps every request it gets for the test thread to complete. */
struct held {
	struct vqs_req *reqs[REQS];
	_Atomic unsigned n;
};

static unsigned hold_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			     void *opaque)
{
	struct held *h = opaque;
	unsigned have = atomic_load(&h->n);
	for (unsigned i = 0; i < n; i++)
		h->reqs[have + i] = reqs[i];
	atomic_store(&h->n, have + n); /* publishes the pointers to the test thread */
	return n;
}

/* Completes its whole batch with one vqs_req_complete_batch, 7 bytes each. */
static unsigned batch_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			      void *opaque)
{
	uint32_t written[NUM];
	for (unsigned i = 0; i < n; i++)
		written[i] = 7;
	vqs_req_complete_batch(reqs, written, n);
	return n;
}

/* Completes its whole batch in one call, the last request of each batch of two or more reported
 * longer than its 64-byte buffer (counted in *opaque), the others 7 bytes. */
static unsigned long_last_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
				  void *opaque)
{
	_Atomic unsigned *longs = opaque;
	uint32_t written[NUM];
	for (unsigned i = 0; i < n; i++)
		written[i] = 7;
	if (n > 1) {
		written[n - 1] = 100;
		atomic_fetch_add(longs, 1);
	}
	vqs_req_complete_batch(reqs, written, n);
	return n;
}

/* Completes its whole batch twice in the same call, 7 bytes each, then 9. */
static unsigned twice_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			      void *opaque)
{
	uint32_t first[NUM], again[NUM];
	for (unsigned i = 0; i < n; i++) {
		first[i] = 7;
		again[i] = 9;
	}
	vqs_req_complete_batch(reqs, first, n);
	vqs_req_complete_batch(reqs, again, n);
	return n;
}

static void serve(struct vqs_served_pair *sp, vqs_handler_fn fn, void *opaque)
{
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = fn;
	o.opaque = opaque;
	assert_int_equal(vqs_served_pair_init(sp, NUM, FEATURES, BASE, ARENA, VQS_POLICY_DEDICATED,
					      &o),
			 0);
}

/* Post n writable chains, kick, and (when h) wait until the handler holds them all. */
static void post(struct vqs_served_pair *sp, int *tokens, unsigned n, struct held *h)
{
	struct vqs_drv_buf b = {vqs_gmem_alloc(sp->p.gmem, 64, 8), 64};
	assert_int_equal(vqs_pair_post(&sp->p, sp->kick, &b, false, n, tokens), 0);
	for (uint64_t t0 = vqs_now_ns(); h && atomic_load(&h->n) < n;)
		assert_true(vqs_now_ns() - t0 < 10000000000ull);
}

/* Wait until n requests came back, each with length len. */
static void expect_used(struct vqs_served_pair *sp, unsigned n, uint32_t len)
{
	unsigned back = 0;
	uint32_t l;
	for (uint64_t t0 = vqs_now_ns(); back < n;) {
		assert_true(vqs_now_ns() - t0 < 10000000000ull);
		if (vqs_drv_get_used(sp->p.drv, &l)) {
			assert_int_equal(l, len);
			back++;
		}
	}
	assert_null(vqs_drv_get_used(sp->p.drv, &l));
}

static struct vqs_queue_stats stats(struct vqs_queue *q)
{
	struct vqs_queue_stats st = {.size = sizeof(st)};
	assert_int_equal(vqs_queue_stats_get(q, &st), 0);
	return st;
}

/* Eight requests completed one by one from the test thread: eight hand-overs; eight more in one
 * batch: one. */
static void test_batch_from_another_thread_is_one_handover(void **state)
{
	static struct held h;
	atomic_store(&h.n, 0);
	struct vqs_served_pair sp;
	serve(&sp, hold_handler, &h);
	int tokens[REQS];
	post(&sp, tokens, REQS, &h);
	for (unsigned i = 0; i < REQS / 2; i++)
		vqs_req_complete(h.reqs[i], 5);
	expect_used(&sp, REQS / 2, 5);
	assert_int_equal(stats(sp.q).async_handovers, REQS / 2);
	uint32_t written[REQS / 2];
	for (unsigned i = 0; i < REQS / 2; i++)
		written[i] = 9;
	vqs_req_complete_batch(h.reqs + REQS / 2, written, REQS / 2);
	expect_used(&sp, REQS / 2, 9);
	struct vqs_queue_stats st = stats(sp.q);
	assert_int_equal(st.async_handovers, REQS / 2 + 1);
	assert_int_equal(st.async_completions, REQS);
	assert_int_equal(st.reqs, REQS);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

/* A batch with the requests of two queues, interleaved in two runs each: one hand-over per run,
 * every request back on its own queue. */
static void test_batch_over_two_queues_hands_over_per_run(void **state)
{
	static struct held h[2];
	struct vqs_served_pair sp[2];
	int tokens[2][REQS];
	for (unsigned k = 0; k < 2; k++) {
		atomic_store(&h[k].n, 0);
		serve(&sp[k], hold_handler, &h[k]);
		post(&sp[k], tokens[k], 4, &h[k]);
	}
	struct vqs_req *reqs[8] = {h[0].reqs[0], h[0].reqs[1], h[1].reqs[0], h[1].reqs[1],
				   h[0].reqs[2], h[0].reqs[3], h[1].reqs[2], h[1].reqs[3]};
	uint32_t written[8] = {3, 3, 3, 3, 3, 3, 3, 3};
	vqs_req_complete_batch(reqs, written, 8);
	for (unsigned k = 0; k < 2; k++) {
		expect_used(&sp[k], 4, 3);
		assert_int_equal(stats(sp[k].q).async_handovers, 2);
		assert_int_equal(stats(sp[k].q).async_completions, 4);
		assert_int_equal(vqs_served_pair_fini(&sp[k]), 0);
	}
}

/* Inside the handler, on the queue's worker: completed as by vqs_req_complete, nothing handed
 * over. */
static void test_batch_inside_handler_completes_in_place(void **state)
{
	struct vqs_served_pair sp;
	serve(&sp, batch_handler, NULL);
	int tokens[REQS];
	post(&sp, tokens, REQS, NULL);
	expect_used(&sp, REQS, 7);
	struct vqs_queue_stats st = stats(sp.q);
	assert_int_equal(st.async_handovers, 0);
	assert_int_equal(st.async_completions, 0);
	assert_int_equal(st.reqs, REQS);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

/* A length over the buffer in the middle of a batch completed whole: that request is clamped to
 * its buffer, the ones before and after it keep theirs, each comes back once. */
static void test_batch_inside_handler_clamps_an_over_long_one(void **state)
{
	static _Atomic unsigned longs;
	atomic_store(&longs, 0);
	struct vqs_served_pair sp;
	serve(&sp, long_last_handler, &longs);
	int tokens[REQS];
	post(&sp, tokens, REQS, NULL);
	unsigned back = 0, clamped = 0;
	uint32_t l;
	for (uint64_t t0 = vqs_now_ns(); back < REQS;) {
		assert_true(vqs_now_ns() - t0 < 10000000000ull);
		if (vqs_drv_get_used(sp.p.drv, &l)) {
			assert_true(l == 7 || l == 64);
			clamped += l == 64;
			back++;
		}
	}
	assert_null(vqs_drv_get_used(sp.p.drv, &l));
	assert_int_equal(clamped, atomic_load(&longs));
	assert_int_equal(stats(sp.q).reqs, REQS);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

/* The batch completed whole twice in one handler call: the second completion of each request is
 * refused (completed twice), each comes back once, with the first completion's length. */
static void test_batch_inside_handler_completed_twice_once_back(void **state)
{
	struct vqs_served_pair sp;
	serve(&sp, twice_handler, NULL);
	int tokens[REQS];
	post(&sp, tokens, REQS, NULL);
	expect_used(&sp, REQS, 7);
	assert_int_equal(stats(sp.q).reqs, REQS);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_from_another_thread_is_one_handover),
		cmocka_unit_test(test_batch_over_two_queues_hands_over_per_run),
		cmocka_unit_test(test_batch_inside_handler_completes_in_place),
		cmocka_unit_test(test_batch_inside_handler_clamps_an_over_long_one),
		cmocka_unit_test(test_batch_inside_handler_completed_twice_once_back),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
