/* SPDX-License-Identifier: MIT */
/*
 * One stress run per policy: several driver threads with random bursts and delays (so workers go
 * to sleep and are woken again and again), completions both inside the handler and from another
 * thread, out of order. Every request must come back exactly once with the right reply, and no
 * driver may stall (a lost kick or call would: the class of Linux's "vhost: Fix worker hangs due
 * to missed wake up calls").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>

#include "scale.h"
#include "traffic.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))

static void print_stats(struct vqs_sched *s)
{
	char buf[16384];
	int n = vqs_sched_stats_json(s, buf, sizeof(buf));
	assert_true(n > 0 && (size_t)n < sizeof(buf));
	printf("%s\n", buf);
}

static void stress(enum vqs_policy p, unsigned nworkers, int group, uint64_t features)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = p;
	so.nworkers = nworkers;
	so.poll_timeout_us = 20;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	struct traffic_cfg cfg = {.nqueues = 4,
				  .total = vqs_test_scaled(1000000),
				  .num = 256,
				  .features = features,
				  .mode = TRAFFIC_MIXED,
				  .delays = true,
				  .group = group};
	static struct traffic t;
	assert_int_equal(traffic_init(&t, s, &cfg), 0);
	traffic_start(&t);
	int rc = traffic_join(&t);
	print_stats(s);
	for (unsigned i = 0; i < cfg.nqueues; i++) {
		struct vqs_queue_stats st = {.size = sizeof(st)};
		assert_int_equal(vqs_queue_stats_get(atomic_load(&t.tq[i].q), &st), 0);
		assert_int_equal(st.reqs, t.tq[i].total);
		assert_true(st.async_completions > 0);
		if (features & VQS_BIT(VQS_F_EVENT_IDX)) {
			/* Calls are coalesced per batch and suppressed while the driver is busy. */
			assert_true(st.calls_suppressed > 0);
			assert_true(st.calls < st.reqs);
		}
	}
	traffic_fini(&t);
	vqs_sched_destroy(s);
	assert_int_equal(rc, 0);
}

static void test_stress_dedicated_every_request_once(void **state)
{
	stress(VQS_POLICY_DEDICATED, 1, -1, FEATURES);
}

static void test_stress_dedicated_shared_group_every_request_once(void **state)
{
	stress(VQS_POLICY_DEDICATED, 1, 7, FEATURES);
}

static void test_stress_pool_every_request_once(void **state)
{
	stress(VQS_POLICY_POOL, 2, -1, FEATURES);
}

static void test_stress_poll_every_request_once(void **state)
{
	stress(VQS_POLICY_POLL, 2, -1, FEATURES);
}

static void test_stress_adaptive_every_request_once(void **state)
{
	stress(VQS_POLICY_ADAPTIVE, 2, -1, FEATURES);
}

static void test_stress_adaptive_packed_no_event_idx(void **state)
{
	stress(VQS_POLICY_ADAPTIVE, 1, -1, VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_RING_PACKED));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stress_dedicated_every_request_once),
		cmocka_unit_test(test_stress_dedicated_shared_group_every_request_once),
		cmocka_unit_test(test_stress_pool_every_request_once),
		cmocka_unit_test(test_stress_poll_every_request_once),
		cmocka_unit_test(test_stress_adaptive_every_request_once),
		cmocka_unit_test(test_stress_adaptive_packed_no_event_idx),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
