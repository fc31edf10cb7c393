/* SPDX-License-Identifier: MIT */
/*
 * The pin a queue's worker keeps on the memory table of its latest batch (so that the batches of
 * a polled queue take no atomic pin each) never outlives what it is for: a table replaced while
 * the queue is polled and idle is let go of at the queue's next poll, without traffic, and a
 * queue that leaves its worker (a pause) lets go of it before.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
/* The release hook of a region nothing uses runs after a grace period: milliseconds. A polled
 * queue looks at its ring every few microseconds; 2 s covers a loaded machine. */
#define RELEASE_BOUND_NS 2000000000ull

static _Atomic bool released;

static void on_release(void *opaque, const struct vqs_mem_region *r)
{
	(void)opaque;
	(void)r;
	atomic_store(&released, true);
}

static bool released_within(uint64_t ns)
{
	for (uint64_t t0 = vqs_now_ns(); vqs_now_ns() - t0 < ns; vqs_test_sleep_ms(1))
		if (atomic_load(&released))
			return true;
	return false;
}

/* A queue busy-polled for ever (poll_timeout_us 0: it stays held by its worker) that served
 * requests through a region with a release hook; *s: its scheduler. */
static void served_through_hooked_region(struct vqs_sched **s, struct vqs_served_pair *sp,
					 struct vqs_drv_buf *b)
{
	atomic_store(&released, false);
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_POLL;
	so.poll_timeout_us = 0;
	assert_int_equal(vqs_sched_create(s, &so), 0);
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = vqs_test_complete_all;
	assert_int_equal(vqs_served_pair_attach(sp, *s, 16, FEATURES, 0x100000, 1 << 16, &o), 0);
	struct vqs_mem_region r;
	vqs_gmem_region(sp->p.gmem, &r);
	r.release = on_release;
	assert_int_equal(vqs_mem_set(sp->p.mem, &r, 1), 0);
	vqs_mem_synchronize(sp->p.mem);
	*b = (struct vqs_drv_buf){vqs_gmem_alloc(sp->p.gmem, 64, 8), 64};
	for (int i = 0; i < 8; i++)
		assert_int_equal(vqs_pair_round_trip(&sp->p, sp->kick, sp->call, b, 0, 1), 0);
}

static void replace_region(struct vqs_served_pair *sp)
{
	struct vqs_mem_region plain;
	vqs_gmem_region(sp->p.gmem, &plain);
	assert_int_equal(vqs_mem_set(sp->p.mem, &plain, 1), 0);
	vqs_mem_synchronize(sp->p.mem);
}

static void test_polled_idle_queue_lets_go_of_a_replaced_table(void **state)
{
	(void)state;
	struct vqs_sched *s;
	struct vqs_served_pair sp;
	struct vqs_drv_buf b;
	served_through_hooked_region(&s, &sp, &b);
	replace_region(&sp);
	/* No request since: only the queue's polls can drop what it kept. */
	assert_true(released_within(RELEASE_BOUND_NS));
	/* and it serves through the new table */
	assert_int_equal(vqs_pair_round_trip(&sp.p, sp.kick, sp.call, &b, 0, 1), 0);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
	vqs_sched_destroy(s);
}

static void test_paused_queue_keeps_no_pin(void **state)
{
	(void)state;
	struct vqs_sched *s;
	struct vqs_served_pair sp;
	struct vqs_drv_buf b;
	served_through_hooked_region(&s, &sp, &b);
	assert_int_equal(vqs_queue_pause(sp.q), 0);
	/* Paused: no turn runs, so the queue let go of its pin when it left its worker. */
	replace_region(&sp);
	assert_true(released_within(RELEASE_BOUND_NS));
	assert_int_equal(vqs_queue_resume(sp.q), 0);
	assert_int_equal(vqs_pair_round_trip(&sp.p, sp.kick, sp.call, &b, 0, 1), 0);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
	vqs_sched_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_polled_idle_queue_lets_go_of_a_replaced_table),
		cmocka_unit_test(test_paused_queue_keeps_no_pin),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
