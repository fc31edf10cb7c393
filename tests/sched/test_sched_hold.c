/* SPDX-License-Identifier: MIT */
/*
 * The adaptive policy's hold: a worker that has been kept awake by a steady stream rides out a
 * pause of the stream far longer than its gap-based poll window (it does not sleep), a worker
 * woken by a short burst sleeps through the same pause, and once the stream ends for good the
 * worker sleeps within the hold's cap. Pauses are counted by the worker's wakeups.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pair.h"

#define NUM 256
#define BASE 0x100000u
#define ARENA (1u << 20)
#define SPACING_NS 10000ull /* between requests: a gap-based window of ~40 us */
#define STREAM_MS 300       /* steady stream before a pause: a hold of ~19 ms, capped at 10 */
#define BURST_REQS 10       /* the short burst: awake ~100 us, a hold of ~6 us */
#define PAUSE_MS 1          /* 25 gap-based windows, a tenth of the steady stream's hold */
#define TRIALS 5            /* short bursts */
#define TRIALS_MAX 20       /* steady streams, until RIDDEN_NEEDED pauses were ridden out */
#define RIDDEN_NEEDED 3
#define SETTLE_MS 30        /* beyond the hold's cap (10 ms) */

static uint64_t worker_stat(struct vqs_sched *s, bool polls)
{
	struct vqs_worker_stats st = {.size = sizeof(st)};
	assert_int_equal(vqs_worker_stats_get(s, 0, &st), 0);
	return polls ? st.polls : st.wakeups;
}

/* Wait until every request sent has come back. */
static void drain(struct vqs_served_pair *sv)
{
	uint64_t deadline = vqs_now_ns() + 5000000000ull;
	while (vqs_drv_free_count(sv->p.drv) < NUM) {
		uint32_t len;
		vqs_drv_get_used(sv->p.drv, &len);
		assert_true(vqs_now_ns() < deadline);
	}
}

/* Send one request, kicking when the device asks for it, and take back what came back. */
static void send_one(struct vqs_served_pair *sv)
{
	static int token;
	struct vqs_drv_buf buf = {.gpa = BASE + ARENA / 2, .len = 64};
	uint32_t len;
	int rc = vqs_drv_add(sv->p.drv, &buf, 1, 0, &token, false);
	if (rc == -ENOSPC) { /* the worker fell behind: let it catch up */
		drain(sv);
		rc = vqs_drv_add(sv->p.drv, &buf, 1, 0, &token, false);
	}
	assert_int_equal(rc, 0);
	if (vqs_drv_kick_prepare(sv->p.drv)) {
		uint64_t one = 1;
		assert_int_equal(write(sv->kick, &one, sizeof(one)), sizeof(one));
	}
	while (vqs_drv_get_used(sv->p.drv, &len))
		;
}

/* n requests SPACING_NS apart (or for ms milliseconds when n is 0). */
static void stream(struct vqs_served_pair *sv, unsigned n, unsigned ms)
{
	uint64_t end = vqs_now_ns() + ms * 1000000ull, next = vqs_now_ns();
	for (unsigned i = 0; n ? i < n : vqs_now_ns() < end; i++) {
		while (vqs_now_ns() < next)
			;
		send_one(sv);
		next += SPACING_NS;
	}
}

/* Did the worker sleep during a PAUSE_MS pause in the traffic? A worker that slept returns from
 * its sleep for the request after the pause (its kick), one that kept polling finds it. */
static bool slept_through_pause(struct vqs_served_pair *sv)
{
	drain(sv);
	uint64_t before = worker_stat(sv->sched, false);
	vqs_test_sleep_ms(PAUSE_MS);
	send_one(sv);
	drain(sv);
	return worker_stat(sv->sched, false) != before;
}

static void serve(struct vqs_served_pair *sv)
{
	struct vqs_queue_opts qo;
	vqs_queue_opts_init(&qo);
	qo.handler = vqs_test_complete_all;
	assert_int_equal(vqs_served_pair_init(sv, NUM, VQS_BIT(VQS_F_VERSION_1) |
						       VQS_BIT(VQS_F_EVENT_IDX),
					      BASE, ARENA, VQS_POLICY_ADAPTIVE, &qo),
			 0);
}

static void test_steady_stream_rides_out_pause(void **state)
{
	struct vqs_served_pair sv;
	serve(&sv);
	/* A worker or driver descheduled for long (a busy or stolen machine) shortens the worker's
	 * awake span, and the next pause may then be slept through: try until RIDDEN_NEEDED pauses
	 * were ridden out. Without the hold none is: the worker sleeps ~40 us into each. */
	unsigned ridden = 0, trials = 0;
	for (; trials < TRIALS_MAX && ridden < RIDDEN_NEEDED; trials++) {
		stream(&sv, 0, STREAM_MS);
		ridden += !slept_through_pause(&sv);
	}
	printf("steady stream: rode out %u of %u pauses\n", ridden, trials);
	assert_true(ridden >= RIDDEN_NEEDED);
	/* The stream over for good: asleep within the cap, and no polling after it. */
	vqs_test_sleep_ms(SETTLE_MS);
	uint64_t polls = worker_stat(sv.sched, true);
	vqs_test_sleep_ms(100);
	assert_int_equal(worker_stat(sv.sched, true), polls);
	assert_int_equal(vqs_served_pair_fini(&sv), 0);
}

static void test_short_burst_sleeps_in_pause(void **state)
{
	struct vqs_served_pair sv;
	serve(&sv);
	unsigned slept = 0;
	for (unsigned i = 0; i < TRIALS; i++) {
		vqs_test_sleep_ms(SETTLE_MS); /* asleep: the burst wakes it */
		stream(&sv, BURST_REQS, 0);
		slept += slept_through_pause(&sv);
	}
	printf("short bursts: slept in %u of %u pauses\n", slept, TRIALS);
	assert_true(slept > TRIALS / 2);
	assert_int_equal(vqs_served_pair_fini(&sv), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_steady_stream_rides_out_pause),
		cmocka_unit_test(test_short_burst_sleeps_in_pause),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
