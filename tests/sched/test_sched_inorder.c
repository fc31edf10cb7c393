/* SPDX-License-Identifier: MIT */
/*
 * VIRTIO_F_IN_ORDER with requests that complete out of order. With IN_ORDER a used entry (split)
 * or a used descriptor (packed) tells the driver that every buffer made available before it is
 * used too (2.7.9, 2.8.9), so the scheduler must publish completions in pop order whatever order
 * they arrive in. vqsched's own driver negotiates IN_ORDER here and checks what the device
 * publishes: it must never see an error, nor get a buffer back before its request was completed,
 * and every buffer must come back with the length its request reported. Then the same under
 * traffic: requests completed at random inside the handler or from another thread, or given
 * back, on two queues served by a pool of two workers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"
#include "scale.h"
#include "traffic.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) | VQS_BIT(VQS_F_IN_ORDER))
#define NCHAINS 4u
#define WAIT_NS 10000000000ull

/* What the handler saw, and how it answers: requests whose index is in `sync_mask` are completed
 * inside the handler, the others are kept for the test thread. */
struct seen {
	struct vqs_req *reqs[NCHAINS];
	_Atomic unsigned n;
	unsigned sync_mask;
};

static uint32_t written_for(unsigned i) { return 8u + i; }

static unsigned keep_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			     void *opaque)
{
	struct seen *s = opaque;
	for (unsigned k = 0; k < n; k++) {
		unsigned i = atomic_load(&s->n) + k;
		s->reqs[i] = reqs[k];
		if (s->sync_mask & (1u << i))
			vqs_req_complete(reqs[k], written_for(i));
	}
	atomic_fetch_add(&s->n, n); /* publishes the pointers to the test thread */
	return n;
}

struct inorder {
	struct vqs_served_pair sp;
	struct seen seen;
	int tokens[NCHAINS];
	unsigned next_used; /* tokens come back in order: the next one expected */
};

static void setup(struct inorder *t, uint64_t features, unsigned sync_mask)
{
	memset(t, 0, sizeof(*t));
	t->seen.sync_mask = sync_mask;
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = keep_handler;
	o.opaque = &t->seen;
	assert_int_equal(vqs_served_pair_init(&t->sp, 16, features, 0x100000, 1 << 16,
					      VQS_POLICY_DEDICATED, &o), 0);
	struct vqs_drv_buf b = {vqs_gmem_alloc(t->sp.p.gmem, 64, 8), 64};
	assert_int_equal(vqs_pair_post(&t->sp.p, t->sp.kick, &b, false, NCHAINS, t->tokens), 0);
	for (uint64_t t0 = vqs_now_ns(); atomic_load(&t->seen.n) < NCHAINS;
	     vqs_test_sleep_ms(1))
		assert_true(vqs_now_ns() - t0 < WAIT_NS);
}

/* Consume what the device published; every buffer back must be the next in order, completed
 * (completed[i]) and with its length. */
static void consume(struct inorder *t, const bool *completed)
{
	uint32_t len;
	void *tok;
	while ((tok = vqs_drv_get_used(t->sp.p.drv, &len))) {
		unsigned i = t->next_used++;
		assert_true(i < NCHAINS);
		assert_ptr_equal(tok, &t->tokens[i]);
		assert_true(completed[i]);
		assert_int_equal(len, written_for(i));
	}
	struct vqs_drv_pos pos;
	assert_int_equal(vqs_drv_position(t->sp.p.drv, &pos), 0); /* -EIO: the device broke it */
}

/* Complete the kept requests newest first, 100 ms apart, looking at what the driver sees
 * meanwhile; then everything must come back, in order. */
static void reverse_completion(uint64_t features, unsigned sync_mask)
{
	static struct inorder t;
	setup(&t, features, sync_mask);
	bool completed[NCHAINS];
	for (unsigned i = 0; i < NCHAINS; i++)
		completed[i] = sync_mask & (1u << i);
	for (unsigned i = NCHAINS; i-- > 0;) {
		if (completed[i])
			continue;
		vqs_req_complete(t.seen.reqs[i], written_for(i));
		completed[i] = true;
		vqs_test_sleep_ms(100); /* time for the worker to publish what it may */
		consume(&t, completed);
	}
	for (uint64_t t0 = vqs_now_ns(); t.next_used < NCHAINS; vqs_test_sleep_ms(1)) {
		assert_true(vqs_now_ns() - t0 < WAIT_NS);
		consume(&t, completed);
	}
	assert_int_equal(vqs_served_pair_fini(&t.sp), 0);
}

/* Every request completed from the test thread, the last popped first. */
static void test_inorder_split_async_reverse(void **state) { reverse_completion(FEATURES, 0); }
static void test_inorder_packed_async_reverse(void **state)
{
	reverse_completion(FEATURES | VQS_BIT(VQS_F_RING_PACKED), 0);
}

/* The newer half completed inside the handler, the older half later from the test thread. */
static void test_inorder_split_sync_after_kept(void **state)
{
	reverse_completion(FEATURES, 0xau);
}
static void test_inorder_packed_sync_after_kept(void **state)
{
	reverse_completion(FEATURES | VQS_BIT(VQS_F_RING_PACKED), 0xau);
}

/* ---- traffic: every request back exactly once, in order (the driver checks) ---- */

static void traffic_in_order(uint64_t features, enum traffic_mode mode)
{
	struct traffic_cfg cfg = {.nqueues = 2,
				  .total = vqs_test_scaled(40000),
				  .num = 64,
				  .features = features,
				  .mode = mode,
				  .delays = true,
				  .group = -1};
	struct vqs_queue_stats sum;
	assert_int_equal(traffic_run(VQS_POLICY_POOL, 2, &cfg, &sum), 0);
	assert_int_equal(sum.reqs, cfg.total);
	printf("%llu requests in order, %llu completed from another thread, %llu given back\n",
	       (unsigned long long)sum.reqs, (unsigned long long)sum.async_completions,
	       (unsigned long long)sum.given_back);
}

static void test_inorder_split_traffic_mixed(void **state)
{
	traffic_in_order(FEATURES, TRAFFIC_MIXED);
}
static void test_inorder_packed_traffic_mixed(void **state)
{
	traffic_in_order(FEATURES | VQS_BIT(VQS_F_RING_PACKED), TRAFFIC_MIXED);
}
static void test_inorder_split_traffic_giveback(void **state)
{
	traffic_in_order(FEATURES, TRAFFIC_GIVEBACK);
}
static void test_inorder_packed_traffic_giveback(void **state)
{
	traffic_in_order(FEATURES | VQS_BIT(VQS_F_RING_PACKED), TRAFFIC_GIVEBACK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inorder_split_async_reverse),
		cmocka_unit_test(test_inorder_packed_async_reverse),
		cmocka_unit_test(test_inorder_split_sync_after_kept),
		cmocka_unit_test(test_inorder_packed_sync_after_kept),
		cmocka_unit_test(test_inorder_split_traffic_mixed),
		cmocka_unit_test(test_inorder_packed_traffic_mixed),
		cmocka_unit_test(test_inorder_split_traffic_giveback),
		cmocka_unit_test(test_inorder_packed_traffic_giveback),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
