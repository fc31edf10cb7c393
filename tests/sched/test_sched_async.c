/* SPDX-License-Identifier: MIT */
/*
 * Completion models: every request completed later from another thread (an asynchronous
 * device; the scheduler pins the memory table until then and publishes on the queue's worker),
 * and backpressure: handlers give back part of each batch, the scheduler parks the queue until
 * vqs_queue_wake (from the handler itself or another thread), and nothing is dropped. A handler
 * that completes a request twice, in one call or in a later one, gets it used once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "scale.h"
#include "traffic.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))

static void run(enum vqs_policy p, enum traffic_mode mode, struct vqs_queue_stats *sum)
{
	struct traffic_cfg cfg = {.nqueues = 2,
				  .total = vqs_test_scaled(100000),
				  .num = 128,
				  .features = FEATURES,
				  .mode = mode,
				  .delays = true,
				  .group = -1};
	assert_int_equal(traffic_run(p, 2, &cfg, sum), 0);
	assert_int_equal(sum->reqs, cfg.total);
	printf("%s: %llu requests, %llu completed from another thread, %llu given back\n",
	       vqs_policy_name(p), (unsigned long long)sum->reqs,
	       (unsigned long long)sum->async_completions, (unsigned long long)sum->given_back);
}

static void async_all(enum vqs_policy p)
{
	struct vqs_queue_stats sum;
	run(p, TRAFFIC_ASYNC, &sum);
	assert_int_equal(sum.async_completions, sum.reqs);
}

static void giveback(enum vqs_policy p)
{
	struct vqs_queue_stats sum;
	run(p, TRAFFIC_GIVEBACK, &sum);
	assert_true(sum.given_back > 0);
}

static void test_async_completion_dedicated(void **state) { async_all(VQS_POLICY_DEDICATED); }
static void test_async_completion_pool(void **state) { async_all(VQS_POLICY_POOL); }
static void test_async_completion_poll(void **state) { async_all(VQS_POLICY_POLL); }
static void test_async_completion_adaptive(void **state) { async_all(VQS_POLICY_ADAPTIVE); }
static void test_giveback_wake_dedicated(void **state) { giveback(VQS_POLICY_DEDICATED); }
static void test_giveback_wake_pool(void **state) { giveback(VQS_POLICY_POOL); }
static void test_giveback_wake_poll(void **state) { giveback(VQS_POLICY_POLL); }
static void test_giveback_wake_adaptive(void **state) { giveback(VQS_POLICY_ADAPTIVE); }

/* ---- the memory table stays pinned while requests are out ---- */

static _Atomic bool region_released;

static void on_release(void *opaque, const struct vqs_mem_region *r)
{
	atomic_store(&region_released, true);
}

struct held {
	struct vqs_req *reqs[16];
	_Atomic unsigned n;
};

static unsigned hold_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			     void *opaque)
{
	struct held *h = opaque;
	for (unsigned i = 0; i < n; i++)
		h->reqs[atomic_load(&h->n) + i] = reqs[i];
	atomic_fetch_add(&h->n, n); /* publishes the pointers to the test thread */
	return n;
}

static bool wait_until(_Atomic bool *flag, struct held *h, unsigned want)
{
	for (uint64_t t0 = vqs_now_ns(); vqs_now_ns() - t0 < 10000000000ull; sleep_ms(1))
		if (flag ? atomic_load(flag) : atomic_load(&h->n) >= want)
			return true;
	return false;
}

static void test_async_pin_keeps_replaced_memory_until_completion(void **state)
{
	struct vqs_pair p;
	assert_int_equal(vqs_pair_init(&p, 16, FEATURES, 0x100000, 1 << 16), 0);
	struct vqs_mem_region r;
	vqs_gmem_region(p.gmem, &r);
	r.release = on_release;
	assert_int_equal(vqs_mem_set(p.mem, &r, 1), 0);
	atomic_store(&region_released, false);

	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	static struct held h;
	atomic_store(&h.n, 0);
	struct vqs_queue_opts qo;
	vqs_queue_opts_init(&qo);
	qo.vq = p.dev;
	qo.handler = hold_handler;
	qo.opaque = &h;
	struct vqs_queue *q;
	assert_int_equal(vqs_sched_attach(s, &qo, &q), 0);
	uint64_t buf = vqs_gmem_alloc(p.gmem, 64, 8);
	int token;
	for (unsigned i = 0; i < 8; i++) {
		struct vqs_drv_buf b = {buf, 8};
		assert_int_equal(vqs_drv_add(p.drv, &b, 0, 1, &token, false), 0);
	}
	vqs_drv_kick_prepare(p.drv);
	vqs_queue_wake(q); /* no kick fd: poke it */
	assert_true(wait_until(NULL, &h, 8));

	/* The region the requests' buffers were translated through leaves the map. */
	struct vqs_mem_region plain;
	vqs_gmem_region(p.gmem, &plain);
	assert_int_equal(vqs_mem_set(p.mem, &plain, 1), 0);
	sleep_ms(200); /* grace periods pass; only the pins keep it */
	assert_false(atomic_load(&region_released));
	for (unsigned i = 0; i < 8; i++) {
		memset(h.reqs[i]->elem.iov[0].iov_base, 0xab, 8); /* still mapped */
		vqs_req_complete(h.reqs[i], 8);
	}
	assert_true(wait_until(&region_released, NULL, 0));
	unsigned used = 0;
	uint32_t len;
	for (uint64_t t0 = vqs_now_ns(); used < 8 && vqs_now_ns() - t0 < 10000000000ull;)
		used += vqs_drv_get_used(p.drv, &len) != NULL;
	assert_int_equal(used, 8);
	assert_int_equal(vqs_sched_detach(q), 0);
	vqs_sched_destroy(s);
	vqs_pair_fini(&p);
}

static unsigned complete_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
				 void *opaque)
{
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	return n;
}

/* A queue without a kick eventfd (vhost-user's NOFD) is polled whatever the policy. */
static void test_no_kick_fd_queue_is_polled(void **state)
{
	struct vqs_pair p;
	assert_int_equal(vqs_pair_init(&p, 16, FEATURES, 0x100000, 1 << 16), 0);
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so); /* dedicated */
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	struct vqs_queue_opts qo;
	vqs_queue_opts_init(&qo);
	qo.vq = p.dev;
	qo.handler = complete_handler;
	struct vqs_queue *q;
	assert_int_equal(vqs_sched_attach(s, &qo, &q), 0);
	sleep_ms(10); /* the first turn found the ring empty */
	uint64_t buf = vqs_gmem_alloc(p.gmem, 64, 8);
	int token;
	uint32_t len;
	for (unsigned round = 0; round < 100; round++) {
		struct vqs_drv_buf b = {buf, 8};
		assert_int_equal(vqs_drv_add(p.drv, &b, 0, 1, &token, false), 0);
		vqs_drv_kick_prepare(p.drv); /* published, never kicked */
		uint64_t t0 = vqs_now_ns();
		while (!vqs_drv_get_used(p.drv, &len))
			assert_true(vqs_now_ns() - t0 < 10000000000ull);
	}
	assert_int_equal(vqs_sched_detach(q), 0);
	vqs_sched_destroy(s);
	vqs_pair_fini(&p);
}

/* ---- handlers with bugs ---- */

/* A 16-entry queue served by a dedicated worker with handler h (opaque), and a 64-byte buffer of
 * its guest memory for the driver's chains. */
static struct vqs_drv_buf serve_by(struct vqs_served_pair *sp, vqs_handler_fn h, void *opaque)
{
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = h;
	o.opaque = opaque;
	assert_int_equal(vqs_served_pair_init(sp, 16, FEATURES, 0x100000, 1 << 16,
					      VQS_POLICY_DEDICATED, &o), 0);
	return (struct vqs_drv_buf){vqs_gmem_alloc(sp->p.gmem, 64, 8), 64};
}

/* Reap used chains for up to 2 s until n came back, each of length len; how many did. */
static unsigned reap_back(struct vqs_served_pair *sp, unsigned n, uint32_t len, int *tokens)
{
	unsigned back = 0;
	uint32_t got;
	void *tok;
	for (uint64_t t0 = vqs_now_ns(); back < n && vqs_now_ns() - t0 < 2000000000ull; sleep_ms(1))
		while ((tok = vqs_drv_get_used(sp->p.drv, &got))) {
			if (tokens)
				assert_ptr_equal(tok, &tokens[back]);
			assert_int_equal(got, len);
			back++;
		}
	return back;
}

/* a request completed twice in one call */

static unsigned twice_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			      void *opaque)
{
	for (unsigned i = 0; i < n; i++) {
		vqs_req_complete(reqs[i], 3);
		vqs_req_complete(reqs[i], 5); /* the handler's bug: ignored, with a warning */
	}
	return n;
}

/* The driver gets each request back once, with the first completion's length, and the queue
 * keeps serving. */
static void test_completed_twice_in_handler_is_used_once(void **state)
{
	struct vqs_served_pair sp;
	struct vqs_drv_buf b = serve_by(&sp, twice_handler, NULL);
	for (int i = 0; i < 3; i++)
		assert_int_equal(vqs_pair_round_trip(&sp.p, sp.kick, sp.call, &b, 0, 1), 3);
	uint32_t len;
	assert_null(vqs_drv_get_used(sp.p.drv, &len));
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

/* a request of an earlier batch completed again */

struct stale {
	struct vqs_req *seen[16]; /* per chain id: the request the handler last got */
	unsigned again;           /* completions of an earlier batch's request */
};

/* Completes its batch, then once more a request an earlier call got and completed whose chain
 * is not in this batch (nothing else is in flight): its bug. */
static unsigned stale_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			      void *opaque)
{
	struct stale *st = opaque;
	bool here[16] = {false};
	for (unsigned i = 0; i < n; i++) {
		vqs_req_complete(reqs[i], 3);
		here[reqs[i]->elem.id] = true;
	}
	for (unsigned id = 0; id < 16; id++)
		if (st->seen[id] && !here[id]) {
			vqs_req_complete(st->seen[id], 7);
			st->again++;
			break;
		}
	for (unsigned i = 0; i < n; i++)
		st->seen[reqs[i]->elem.id] = reqs[i];
	return n;
}

/* Ignored, with a warning, as a second completion inside one call is: the driver gets each
 * request back once with its length, nothing more is used, and only the requests count. */
static void test_completed_again_after_its_batch_is_ignored(void **state)
{
	static struct stale st;
	memset(&st, 0, sizeof(st));
	struct vqs_served_pair sp;
	struct vqs_drv_buf b = serve_by(&sp, stale_handler, &st);
	/* two chain ids in use, so that each later batch leaves one of them stale */
	int tokens[2];
	assert_int_equal(vqs_pair_post(&sp.p, sp.kick, &b, false, 2, tokens), 0);
	assert_int_equal(reap_back(&sp, 2, 3, NULL), 2);
	uint32_t len;
	for (int i = 0; i < 3; i++)
		assert_int_equal(vqs_pair_round_trip(&sp.p, sp.kick, sp.call, &b, 0, 1), 3);
	sleep_ms(20);
	assert_null(vqs_drv_get_used(sp.p.drv, &len));
	assert_true(st.again >= 3);
	struct vqs_queue_stats qs = {.size = sizeof(qs)};
	assert_int_equal(vqs_queue_stats_get(sp.q, &qs), 0);
	assert_int_equal(qs.reqs, 5);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

/* requests completed, then given back */

#define MISCOUNT_CHAINS 4u

struct miscount {
	_Atomic unsigned seen[16]; /* per chain id: handler calls that got it */
	_Atomic unsigned calls;
};

/* Completes every request, then returns one less than it took: its bug. */
static unsigned miscount_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
				 void *opaque)
{
	struct miscount *m = opaque;
	for (unsigned i = 0; i < n; i++) {
		atomic_fetch_add(&m->seen[reqs[i]->elem.id], 1);
		vqs_req_complete(reqs[i], 4);
	}
	atomic_fetch_add(&m->calls, 1);
	return n - 1;
}

/* The completion is kept: every chain comes back once without a wake, the handler never sees a
 * chain twice (a wake afterwards finds nothing), and the counter tells what happened. */
static void test_completed_then_given_back_is_kept(void **state)
{
	static struct miscount m;
	memset(&m, 0, sizeof(m));
	struct vqs_served_pair sp;
	struct vqs_drv_buf b = serve_by(&sp, miscount_handler, &m);
	int tokens[MISCOUNT_CHAINS];
	assert_int_equal(vqs_pair_post(&sp.p, sp.kick, &b, false, MISCOUNT_CHAINS, tokens), 0);
	assert_int_equal(reap_back(&sp, MISCOUNT_CHAINS, 4, tokens), MISCOUNT_CHAINS);
	uint32_t len;
	vqs_queue_wake(sp.q); /* what a handler that gave back arranges: nothing is left to serve */
	sleep_ms(50);
	assert_null(vqs_drv_get_used(sp.p.drv, &len));
	for (unsigned i = 0; i < 16; i++)
		assert_true(atomic_load(&m.seen[i]) <= 1);
	struct vqs_queue_stats st = {.size = sizeof(st)};
	assert_int_equal(vqs_queue_stats_get(sp.q, &st), 0);
	assert_int_equal(st.reqs, MISCOUNT_CHAINS);
	assert_int_equal(st.given_back, 0);
	assert_int_equal(st.completed_given_back, atomic_load(&m.calls));
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_async_completion_dedicated),
		cmocka_unit_test(test_async_completion_pool),
		cmocka_unit_test(test_async_completion_poll),
		cmocka_unit_test(test_async_completion_adaptive),
		cmocka_unit_test(test_giveback_wake_dedicated),
		cmocka_unit_test(test_giveback_wake_pool),
		cmocka_unit_test(test_giveback_wake_poll),
		cmocka_unit_test(test_giveback_wake_adaptive),
		cmocka_unit_test(test_async_pin_keeps_replaced_memory_until_completion),
		cmocka_unit_test(test_no_kick_fd_queue_is_polled),
		cmocka_unit_test(test_completed_twice_in_handler_is_used_once),
		cmocka_unit_test(test_completed_then_given_back_is_kept),
		cmocka_unit_test(test_completed_again_after_its_batch_is_ignored),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
