/* SPDX-License-Identifier: MIT */
/*
 * Live changes while traffic flows (several driver threads, sync and async completions): moving
 * queues between workers, switching the policy, pausing and resuming, detaching and re-attaching
 * (to the same or another scheduler), replacing the eventfds. Every request must still come back
 * exactly once and no driver may stall.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "scale.h"
#include "traffic.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))

static struct vqs_sched *sched_poll_timeout(enum vqs_policy p, unsigned nworkers,
					     uint32_t poll_timeout_us)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = p;
	so.nworkers = nworkers;
	so.poll_timeout_us = poll_timeout_us;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	return s;
}

static struct vqs_sched *sched(enum vqs_policy p, unsigned nworkers)
{
	return sched_poll_timeout(p, nworkers, 20);
}

static struct traffic_cfg cfg_for(unsigned long total)
{
	struct traffic_cfg c = {.nqueues = 3,
				.total = vqs_test_scaled(total),
				.num = 128,
				.features = FEATURES,
				.mode = TRAFFIC_MIXED,
				.delays = true,
				.group = -1};
	return c;
}

static void detach_round(struct traffic *t, unsigned round);

/* Run traffic on s while `change` is applied every `every_us`; returns how many changes ran. */
static unsigned run_with(struct vqs_sched *s, struct traffic_cfg cfg,
			 void (*change)(struct traffic *t, unsigned round), unsigned every_us)
{
	static struct traffic t;
	assert_int_equal(traffic_init(&t, s, &cfg), 0);
	traffic_start(&t);
	unsigned round = 0;
	while (traffic_running(&t)) {
		usleep(every_us);
		change(&t, round++);
	}
	int rc = traffic_join(&t);
	bool counted = true;
	for (unsigned i = 0; i < cfg.nqueues; i++) {
		struct vqs_queue_stats st = {.size = sizeof(st)};
		vqs_queue_stats_get(atomic_load(&t.tq[i].q), &st);
		/* Counters survive moves, pauses and policy changes (a re-attach starts afresh). */
		counted &= st.reqs > 0 || change == detach_round;
	}
	traffic_fini(&t);
	assert_true(counted);
	assert_int_equal(rc, 0);
	return round;
}

static void move_round(struct traffic *t, unsigned round)
{
	unsigned nw = vqs_sched_nworkers(t->s);
	for (unsigned i = 0; i < t->cfg.nqueues; i++)
		assert_int_equal(vqs_queue_move(atomic_load(&t->tq[i].q), (round + i) % nw), 0);
}

static void live_move(enum vqs_policy p)
{
	struct vqs_sched *s = sched(p, 2);
	unsigned n = run_with(s, cfg_for(200000), move_round, 500);
	printf("%s: %u rounds of moves\n", vqs_policy_name(p), n);
	assert_true(n > 0);
	vqs_sched_destroy(s);
}

static void test_live_move_poll(void **state) { live_move(VQS_POLICY_POLL); }
static void test_live_move_adaptive(void **state) { live_move(VQS_POLICY_ADAPTIVE); }
static void test_live_move_dedicated(void **state) { live_move(VQS_POLICY_DEDICATED); }

static void test_live_move_rejects_missing_worker(void **state)
{
	struct vqs_sched *s = sched(VQS_POLICY_POLL, 2);
	static struct traffic t;
	struct traffic_cfg c = cfg_for(10);
	c.nqueues = 1;
	assert_int_equal(traffic_init(&t, s, &c), 0);
	assert_int_equal(vqs_queue_move(atomic_load(&t.tq[0].q), 2), -EINVAL);
	traffic_start(&t);
	assert_int_equal(traffic_join(&t), 0);
	traffic_fini(&t);
	vqs_sched_destroy(s);
}

static void policy_round(struct traffic *t, unsigned round)
{
	assert_int_equal(vqs_sched_set_policy(t->s, (enum vqs_policy)(round % 4)), 0);
}

static void test_live_policy_change_cycles_all_policies(void **state)
{
	struct vqs_sched *s = sched(VQS_POLICY_ADAPTIVE, 2);
	unsigned n = run_with(s, cfg_for(200000), policy_round, 2000);
	printf("%u policy changes\n", n);
	assert_true(n >= 4);
	vqs_sched_destroy(s);
}

static void pause_round(struct traffic *t, unsigned round)
{
	struct vqs_queue *q = atomic_load(&t->tq[round % t->cfg.nqueues].q);
	assert_int_equal(vqs_queue_pause(q), 0);
	usleep(200);
	assert_int_equal(vqs_queue_resume(q), 0);
}

static void test_live_pause_resume(void **state)
{
	struct vqs_sched *s = sched(VQS_POLICY_POOL, 2);
	unsigned n = run_with(s, cfg_for(200000), pause_round, 500);
	printf("%u pauses\n", n);
	assert_true(n > 0);
	vqs_sched_destroy(s);
}

static struct vqs_sched *other; /* detach_round re-attaches here every other round */

static void detach_round(struct traffic *t, unsigned round)
{
	struct traffic_queue *tq = &t->tq[round % t->cfg.nqueues];
	struct vqs_queue *q = atomic_exchange(&tq->q, NULL);
	assert_int_equal(vqs_sched_detach(q), 0);
	usleep(200); /* requests pile up unserved meanwhile */
	struct vqs_queue_opts o;
	traffic_queue_opts(tq, &o);
	assert_int_equal(vqs_sched_attach(round % 2 ? other : t->s, &o, &q), 0);
	atomic_store(&tq->q, q);
}

static void test_live_detach_reattach_mid_stream(void **state)
{
	struct vqs_sched *s = sched(VQS_POLICY_DEDICATED, 1);
	other = sched(VQS_POLICY_ADAPTIVE, 1);
	unsigned n = run_with(s, cfg_for(200000), detach_round, 1000);
	printf("%u detach/attach rounds\n", n);
	assert_true(n > 0);
	vqs_sched_destroy(s);
	vqs_sched_destroy(other);
}

/*
 * Every detach and pause lands in the middle of a turn: busy-poll without a timeout never lets a
 * queue go idle, so the control thread always waits for a running worker to hand the queue over
 * (RUNNING -> PAUSED at the end of its turn, or while it polls the queue without requeueing it)
 * and then frees it. A worker that touched the queue after that hand-over reads freed memory
 * (TSan and ASan builds report it); one that kept polling without looking for the pause request
 * would hang detach (the test times out).
 */
static void test_live_detach_and_pause_while_polled(void **state)
{
	struct vqs_sched *s = sched_poll_timeout(VQS_POLICY_POLL, 2, 0);
	other = sched_poll_timeout(VQS_POLICY_POLL, 1, 0);
	struct traffic_cfg c = cfg_for(100000);
	c.nqueues = 2; /* worker 1 polls one queue alone: the turn that never ends by itself */
	unsigned n = run_with(s, c, detach_round, 300);
	printf("%u detach/attach rounds\n", n);
	assert_true(n > 0);
	n = run_with(s, c, pause_round, 300);
	printf("%u pauses\n", n);
	assert_true(n > 0);
	vqs_sched_destroy(s);
	vqs_sched_destroy(other);
}

static void idle_round(struct traffic *t, unsigned round) {}

static void test_live_set_fds_mid_stream(void **state)
{
	struct vqs_sched *s = sched(VQS_POLICY_POOL, 2);
	struct traffic_cfg c = cfg_for(200000);
	c.swap_fds_every = 2000;
	run_with(s, c, idle_round, 1000);
	vqs_sched_destroy(s);
}

/* ---- the effect of a move and of a policy change ---- */

static _Atomic int handler_tid;

static unsigned tid_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			    void *opaque)
{
	atomic_store(&handler_tid, (int)gettid());
	return vqs_test_complete_all(q, reqs, n, opaque);
}

static void round_trip(struct vqs_served_pair *sp)
{
	struct vqs_drv_buf b = {vqs_gmem_alloc(sp->p.gmem, 64, 8), 64};
	assert_int_equal(vqs_pair_round_trip(&sp->p, sp->kick, sp->call, &b, 0, 1), 0);
}

/* After vqs_queue_move(q, i), q's handler runs on worker i's thread. */
static void move_effect(enum vqs_policy p)
{
	struct vqs_sched *s = sched(p, 2);
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = tid_handler;
	static struct vqs_served_pair a, b;
	assert_int_equal(vqs_served_pair_attach(&a, s, 16, FEATURES, 0x100000, 1 << 16, &o), 0);
	/* dedicated: a second queue brings the second worker */
	assert_int_equal(vqs_served_pair_attach(&b, s, 16, FEATURES, 0x100000, 1 << 16, &o), 0);
	assert_int_equal(vqs_sched_nworkers(s), 2);
	static const unsigned to[] = {1, 0, 1, 1, 0};
	for (unsigned i = 0; i < sizeof(to) / sizeof(to[0]); i++) {
		assert_int_equal(vqs_queue_move(a.q, to[i]), 0);
		atomic_store(&handler_tid, 0);
		round_trip(&a);
		assert_int_equal(atomic_load(&handler_tid), vqs_sched_worker_tid(s, to[i]));
	}
	assert_int_equal(vqs_served_pair_fini(&b), 0);
	assert_int_equal(vqs_served_pair_fini(&a), 0);
	vqs_sched_destroy(s);
}

static void test_move_runs_handler_on_target_worker_adaptive(void **state)
{
	move_effect(VQS_POLICY_ADAPTIVE);
}
static void test_move_runs_handler_on_target_worker_dedicated(void **state)
{
	move_effect(VQS_POLICY_DEDICATED);
}

static uint64_t empty_polls(struct vqs_queue *q)
{
	struct vqs_queue_stats st = {.size = sizeof(st)};
	assert_int_equal(vqs_queue_stats_get(q, &st), 0);
	return st.empty_polls;
}

/* An idle queue is not polled: no empty poll over 50 ms, once its last turn has surely ended. */
static void assert_not_polled(struct vqs_queue *q)
{
	vqs_test_sleep_ms(20);
	uint64_t before = empty_polls(q);
	vqs_test_sleep_ms(50);
	assert_int_equal(empty_polls(q), before);
}

/* dedicated sleeps on an idle queue; poll (poll_timeout_us 0) spins on it; back to dedicated, it
 * sleeps again. The workers are the new policy's, and the counters run on. */
static void test_set_policy_changes_behaviour(void **state)
{
	struct vqs_sched *s = sched_poll_timeout(VQS_POLICY_DEDICATED, 2, 0);
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = tid_handler;
	static struct vqs_served_pair sp;
	assert_int_equal(vqs_served_pair_attach(&sp, s, 16, FEATURES, 0x100000, 1 << 16, &o), 0);
	round_trip(&sp);
	assert_int_equal(vqs_sched_nworkers(s), 1);
	assert_not_polled(sp.q);

	assert_int_equal(vqs_sched_set_policy(s, VQS_POLICY_POLL), 0);
	assert_int_equal(vqs_sched_nworkers(s), 2);
	round_trip(&sp);
	/* Spinning on the empty ring: bounded by time, not by a rate (the machine may be busy). */
	uint64_t before = empty_polls(sp.q), t0 = vqs_now_ns();
	while (empty_polls(sp.q) - before < 1000) {
		assert_true(vqs_now_ns() - t0 < 10000000000ull);
		vqs_test_sleep_ms(1);
	}

	assert_int_equal(vqs_sched_set_policy(s, VQS_POLICY_DEDICATED), 0);
	assert_int_equal(vqs_sched_nworkers(s), 1);
	round_trip(&sp);
	assert_not_polled(sp.q);
	struct vqs_queue_stats st = {.size = sizeof(st)};
	assert_int_equal(vqs_queue_stats_get(sp.q, &st), 0);
	assert_int_equal(st.reqs, 3);
	assert_int_equal(atomic_load(&handler_tid), vqs_sched_worker_tid(s, 0));
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
	vqs_sched_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_live_move_poll),
		cmocka_unit_test(test_live_move_adaptive),
		cmocka_unit_test(test_live_move_dedicated),
		cmocka_unit_test(test_live_move_rejects_missing_worker),
		cmocka_unit_test(test_live_policy_change_cycles_all_policies),
		cmocka_unit_test(test_live_pause_resume),
		cmocka_unit_test(test_live_detach_reattach_mid_stream),
		cmocka_unit_test(test_live_detach_and_pause_while_polled),
		cmocka_unit_test(test_live_set_fds_mid_stream),
		cmocka_unit_test(test_move_runs_handler_on_target_worker_adaptive),
		cmocka_unit_test(test_move_runs_handler_on_target_worker_dedicated),
		cmocka_unit_test(test_set_policy_changes_behaviour),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
