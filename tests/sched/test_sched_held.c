/* SPDX-License-Identifier: MIT */
/*
 * A worker with several polled queues keeps them (held) instead of requeueing each one after
 * every empty poll: its empty polls are light looks, counted as polls but not as turns, while
 * chains that arrive on a held queue are served, and a held queue still pauses and detaches.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"

#define NQ 3
#define MANY 80 /* more queues than a worker holds */
#define FIFTY 50 /* the sweep's largest queue count: one worker holds them all */
#define NUM 16
#define BASE 0x100000u
#define ARENA (1u << 20)
#define MIN_LOOKS 64u     /* polls a window needs before it says anything */
#define WAIT_MAX_MS 10000 /* a worker that gets no CPU for this long fails the test */

/* One worker, poll policy without timeout, n queues attached: polled for as long as attached. */
static struct vqs_sched *polled(struct vqs_served_pair *sv, unsigned n)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_POLL;
	so.nworkers = 1;
	so.poll_timeout_us = 0;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	struct vqs_queue_opts qo;
	vqs_queue_opts_init(&qo);
	qo.handler = vqs_test_complete_all;
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(vqs_served_pair_attach(&sv[i], s, NUM, VQS_BIT(VQS_F_VERSION_1), BASE,
							ARENA, &qo),
				 0);
	return s;
}

/* A few round trips on every queue (each must come back within vqs_pair_round_trip's 5 s), then
 * detach them all: held queues pause like the others. */
static void serve_and_detach(struct vqs_sched *s, struct vqs_served_pair *sv, unsigned n)
{
	struct vqs_drv_buf buf = {.gpa = BASE + ARENA / 2, .len = 64};
	for (unsigned round = 0; round < 4; round++)
		for (unsigned i = 0; i < n; i++)
			assert_int_equal(vqs_pair_round_trip(&sv[i].p, sv[i].kick, sv[i].call, &buf, 1, 0),
					 0);
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(vqs_served_pair_fini(&sv[i]), 0);
	vqs_sched_destroy(s);
}

static void test_polled_queues_are_held_served_and_detached(void **state)
{
	struct vqs_served_pair sv[NQ];
	struct vqs_sched *s = polled(sv, NQ);
	/* Idle but polled: the one worker looks at its three queues over and over. Judged once it
	 * has looked MIN_LOOKS times, however long a loaded machine keeps it off its CPU. */
	vqs_test_sleep_ms(50);
	struct vqs_worker_stats a = {.size = sizeof(a)}, b = {.size = sizeof(b)};
	assert_int_equal(vqs_worker_stats_get(s, 0, &a), 0);
	unsigned waited = 0;
	uint64_t polls, turns;
	do {
		vqs_test_sleep_ms(50);
		waited += 50;
		assert_int_equal(vqs_worker_stats_get(s, 0, &b), 0);
		polls = b.polls - a.polls;
		turns = b.turns - a.turns;
	} while ((polls < MIN_LOOKS || turns == 0) && waited < WAIT_MAX_MS);
	printf("%u ms of idle polling: %llu polls, %llu turns\n", waited,
	       (unsigned long long)polls, (unsigned long long)turns);
	assert_true(turns > 0);         /* full turns still come, for the policy's clock */
	assert_true(polls > 8 * turns); /* requeued after each empty poll, it was one each */
	serve_and_detach(s, sv, NQ);
}

/*
 * Fifty polled queues on one worker, idle (the sweep at 100k requests/s over 50 queues gives each
 * a request every 500 us): every one of them is held and looked at lightly, none requeued after
 * each empty poll. Before, the worker held 16; the other 34 went through the ready list, a full
 * turn each (a lock, two state CASes, a clock read), so a request on one of them waited for a
 * round of 34 full turns where a held queue waits for a round of light looks.
 */
static void test_fifty_polled_queues_all_held(void **state)
{
	static struct vqs_served_pair sv[FIFTY];
	struct vqs_sched *s = polled(sv, FIFTY);
	vqs_test_sleep_ms(50);
	struct vqs_queue_stats a[FIFTY], b[FIFTY];
	for (unsigned i = 0; i < FIFTY; i++) {
		a[i].size = b[i].size = sizeof(a[i]);
		assert_int_equal(vqs_queue_stats_get(sv[i].q, &a[i]), 0);
	}
	unsigned requeued, unseen, waited = 0;
	do { /* judged once every queue was looked at MIN_LOOKS times, as above */
		vqs_test_sleep_ms(50);
		waited += 50;
		requeued = unseen = 0;
		for (unsigned i = 0; i < FIFTY; i++) {
			assert_int_equal(vqs_queue_stats_get(sv[i].q, &b[i]), 0);
			uint64_t polls = b[i].polls - a[i].polls, turns = b[i].turns - a[i].turns;
			unseen += polls < MIN_LOOKS;
			requeued += polls <= 4 * turns; /* a requeued queue polls once per turn */
		}
	} while (unseen && waited < WAIT_MAX_MS);
	printf("%u ms of idle polling of 50 queues: %u of them requeued, %u looked at fewer than "
	       "%u times\n", waited, requeued, unseen, MIN_LOOKS);
	assert_int_equal(unseen, 0);
	assert_int_equal(requeued, 0);
	serve_and_detach(s, sv, FIFTY);
}

/* The queues the hold list has no room for keep the ready list busy: the held ones must still
 * get their looks. */
static void test_more_polled_queues_than_held_all_served(void **state)
{
	static struct vqs_served_pair sv[MANY];
	serve_and_detach(polled(sv, MANY), sv, MANY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_polled_queues_are_held_served_and_detached),
		cmocka_unit_test(test_fifty_polled_queues_all_held),
		cmocka_unit_test(test_more_polled_queues_than_held_all_served),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
