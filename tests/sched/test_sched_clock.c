/* SPDX-License-Identifier: MIT */
/*
 * vqs_queue_clock_ns: inside a handler call, the time the worker read last before it. A worker
 * reads the clock only after the previous handler call returned, so under every policy each
 * call's value lies between the previous call's present and its own: never in the future, never
 * older than the call before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"

#define NUM 16
#define BASE 0x100000u
#define ARENA (1u << 20)
#define ROUNDS 32

struct seen {
	unsigned calls;
	uint64_t clock[ROUNDS], now[ROUNDS];
};

static unsigned handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *op)
{
	struct seen *s = op;
	if (s->calls < ROUNDS) {
		s->clock[s->calls] = vqs_queue_clock_ns(q);
		s->now[s->calls] = vqs_now_ns();
	}
	s->calls++;
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	return n;
}

static void clock_between_calls(enum vqs_policy policy)
{
	static struct seen s;
	memset(&s, 0, sizeof(s));
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = handler;
	o.opaque = &s;
	struct vqs_served_pair f;
	assert_int_equal(vqs_served_pair_init(&f, NUM, VQS_BIT(VQS_F_VERSION_1), BASE, ARENA,
					      policy, &o),
			 0);
	struct vqs_drv_buf b = {.gpa = BASE + ARENA / 2, .len = 64};
	/* one chain in flight at a time: one handler call each */
	for (unsigned i = 0; i < ROUNDS; i++)
		assert_int_equal(vqs_pair_round_trip(&f.p, f.kick, f.call, &b, 1, 0), 0);
	assert_int_equal(vqs_served_pair_fini(&f), 0);
	assert_int_equal(s.calls, ROUNDS);
	for (unsigned i = 0; i < ROUNDS; i++) {
		assert_true(s.clock[i] <= s.now[i]);
		if (i)
			assert_true(s.clock[i] >= s.now[i - 1]);
		else
			assert_true(s.clock[0] > 0); /* a polling worker read it before the test began */
	}
}

static void test_clock_dedicated(void **state) { clock_between_calls(VQS_POLICY_DEDICATED); }
static void test_clock_pool(void **state) { clock_between_calls(VQS_POLICY_POOL); }
static void test_clock_poll(void **state) { clock_between_calls(VQS_POLICY_POLL); }
static void test_clock_adaptive(void **state) { clock_between_calls(VQS_POLICY_ADAPTIVE); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_dedicated),
		cmocka_unit_test(test_clock_pool),
		cmocka_unit_test(test_clock_poll),
		cmocka_unit_test(test_clock_adaptive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
