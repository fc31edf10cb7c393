/* SPDX-License-Identifier: MIT */
/*
 * vqs_queue_clock_ns: inside a handler call, the time the worker read last before it. A worker
 * reads the clock only after a handler call returned, so under every policy each call's value
 * is never in the future and never older than the call before's; one request at a time, every
 * call is a turn of its own, read after it. Short batches back to back share a read (a run,
 * turn.c): the value is then the run's, and the run's requests are timed at its end, each
 * counted once; a batch longer than the run's bound is read after on its own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

/* A backlog served one request a handler call (batch_max 1): handler_ns of work a call. */
struct backlog {
	unsigned calls;
	uint64_t handler_ns;
	uint64_t clock[ROUNDS], start[ROUNDS], end[ROUNDS];
};

static unsigned backlog_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
				void *op)
{
	struct backlog *b = op;
	uint64_t start = vqs_now_ns(), end = start;
	while (end - start < b->handler_ns)
		end = vqs_now_ns();
	if (b->calls < ROUNDS) {
		b->clock[b->calls] = vqs_queue_clock_ns(q);
		b->start[b->calls] = start;
		b->end[b->calls] = end;
	}
	b->calls++;
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	return n;
}

/* Post `count` chains at once to a busy-polled queue handled one at a time, wait for them all,
 * and check what holds whether or not the calls share reads: each call's clock is a read made
 * before the call and never older than the previous call's; every request is timed once
 * (latency_hist). */
static void serve_backlog(struct backlog *b, unsigned count)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_POLL;
	so.nworkers = 1;
	so.batch_max = 1;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = backlog_handler;
	o.opaque = b;
	struct vqs_served_pair f;
	assert_int_equal(vqs_served_pair_attach(&f, s, NUM, VQS_BIT(VQS_F_VERSION_1), BASE, ARENA,
						&o),
			 0);
	struct vqs_drv_buf buf = {.gpa = BASE + ARENA / 2, .len = 64};
	int tokens[NUM];
	assert_int_equal(vqs_pair_post(&f.p, f.kick, &buf, false, count, tokens), 0);
	unsigned got = 0;
	uint32_t len;
	for (uint64_t t0 = vqs_now_ns(); got < count && vqs_now_ns() - t0 < 5000000000ull;)
		got += vqs_drv_get_used(f.p.drv, &len) != NULL;
	assert_int_equal(got, count);
	/* Timed at the read that ends their run, after their completions were published: wait for
	 * that read (bounded). */
	struct vqs_queue_stats st = {.size = sizeof(st)};
	uint64_t lat = 0;
	for (uint64_t t0 = vqs_now_ns(); vqs_now_ns() - t0 < 2000000000ull;) {
		assert_int_equal(vqs_queue_stats_get(f.q, &st), 0);
		lat = 0;
		for (unsigned i = 0; i < VQS_STATS_LAT_BUCKETS; i++)
			lat += st.latency_hist[i];
		if (lat >= count)
			break;
	}
	assert_int_equal(vqs_served_pair_fini(&f), 0);
	vqs_sched_destroy(s);
	assert_int_equal(st.reqs, count);
	assert_int_equal(lat, count);
	assert_int_equal(b->calls, count);
	for (unsigned i = 0; i < count; i++) {
		assert_true(b->clock[i] <= b->start[i]);
		if (i)
			assert_true(b->clock[i] >= b->clock[i - 1]);
	}
}

/* Calls of no work share reads; whether they do is the benchmark's to show (a sanitizer's
 * slowdown makes every call long enough for a read of its own): here, what holds either way. */
static void test_clock_short_batches_timed_once_each(void **state)
{
	static struct backlog b;
	memset(&b, 0, sizeof(b));
	serve_backlog(&b, NUM);
}

/* Calls of 20 us each, far over the run's bound: a read after every call, so each call's clock
 * is after the previous call ended. */
static void test_clock_long_batches_read_after_each(void **state)
{
	static struct backlog b;
	memset(&b, 0, sizeof(b));
	b.handler_ns = 20000;
	serve_backlog(&b, 8);
	for (unsigned i = 1; i < 8; i++)
		assert_true(b.clock[i] >= b.end[i - 1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_dedicated),
		cmocka_unit_test(test_clock_pool),
		cmocka_unit_test(test_clock_poll),
		cmocka_unit_test(test_clock_adaptive),
		cmocka_unit_test(test_clock_short_batches_timed_once_each),
		cmocka_unit_test(test_clock_long_batches_read_after_each),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
