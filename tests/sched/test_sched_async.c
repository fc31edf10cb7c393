/* SPDX-License-Identifier: MIT */
/*
 * Completion models: every request completed later from another thread (an asynchronous
 * device; the scheduler pins the memory table until then and publishes on the queue's worker),
 * and backpressure: handlers give back part of each batch, the scheduler parks the queue until
 * vqs_queue_wake (from the handler itself or another thread), and nothing is dropped.
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
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = p;
	so.nworkers = 2;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	struct traffic_cfg cfg = {.nqueues = 2,
				  .total = vqs_test_scaled(100000),
				  .num = 128,
				  .features = FEATURES,
				  .mode = mode,
				  .delays = true,
				  .group = -1};
	static struct traffic t;
	assert_int_equal(traffic_init(&t, s, &cfg), 0);
	traffic_start(&t);
	int rc = traffic_join(&t);
	memset(sum, 0, sizeof(*sum));
	for (unsigned i = 0; i < cfg.nqueues; i++) {
		struct vqs_queue_stats st = {.size = sizeof(st)};
		assert_int_equal(vqs_queue_stats_get(atomic_load(&t.tq[i].q), &st), 0);
		sum->reqs += st.reqs;
		sum->async_completions += st.async_completions;
		sum->given_back += st.given_back;
	}
	traffic_fini(&t);
	vqs_sched_destroy(s);
	assert_int_equal(rc, 0);
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
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
