/* SPDX-License-Identifier: MIT */
/*
 * A ring that breaks stops its own queue only: the scheduler reports it once through the queue's
 * on_broken hook (vhost-user signals the ring's error eventfd from there) and another queue on
 * the same scheduler keeps being served.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "pair.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define NUM 16

struct side {
	struct vqs_pair p;
	int kick, call;
	struct vqs_queue *q;
	atomic_int broken_calls;
	atomic_int why;
	uint64_t buf_gpa;
};

static unsigned echo(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	return n;
}

static void on_broken(struct vqs_queue *q, enum vqs_vq_err why, void *opaque)
{
	struct side *s = opaque;
	atomic_store(&s->why, (int)why);
	atomic_fetch_add(&s->broken_calls, 1);
}

static void side_init(struct side *s, struct vqs_sched *sched)
{
	memset(s, 0, sizeof(*s));
	assert_int_equal(vqs_pair_init(&s->p, NUM, FEATURES, 0x100000, 1 << 20), 0);
	s->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(s->kick >= 0 && s->call >= 0);
	s->buf_gpa = vqs_gmem_alloc(s->p.gmem, 64, 64);
	assert_true(s->buf_gpa != 0);
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.vq = s->p.dev;
	o.kick_fd = s->kick;
	o.call_fd = s->call;
	o.handler = echo;
	o.opaque = s;
	o.on_broken = on_broken;
	o.on_broken_opaque = s;
	assert_int_equal(vqs_sched_attach(sched, &o, &s->q), 0);
}

static void side_fini(struct side *s)
{
	assert_int_equal(vqs_sched_detach(s->q), 0);
	vqs_pair_fini(&s->p);
	close(s->kick);
	close(s->call);
}

static void kick(struct side *s)
{
	uint64_t one = 1;
	assert_int_equal(write(s->kick, &one, sizeof(one)), sizeof(one));
}

/* One request through the queue; true when it came back within a few seconds. */
static bool round_trip(struct side *s)
{
	struct vqs_drv_buf b = {.gpa = s->buf_gpa, .len = 64};
	return vqs_pair_round_trip(&s->p, s->kick, s->call, &b, 0, 1) >= 0;
}

/* Bounded wait for the hook. */
static bool wait_broken(struct side *s)
{
	for (int i = 0; i < 500 && !atomic_load(&s->broken_calls); i++)
		usleep(10000);
	return atomic_load(&s->broken_calls) > 0;
}

static void broken_ring_reported_once_other_queue_served(enum vqs_policy policy)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = policy;
	struct vqs_sched *sched;
	assert_int_equal(vqs_sched_create(&sched, &so), 0);
	struct side bad, good;
	side_init(&bad, sched);
	side_init(&good, sched);
	assert_true(round_trip(&bad));

	/* The driver publishes a head outside the ring: the device must break this queue only. */
	uint64_t desc, avail, used;
	vqs_drv_vq_addrs(bad.p.drv, &desc, &avail, &used);
	struct vqs_vring_avail *a = vqs_gmem_host(bad.p.gmem, avail, vqs_vring_avail_size(NUM));
	/* Atomic stores, as the device side reads these fields (a fence alone is invisible to
	 * TSan, which then reports the worker's atomic read against a plain write). */
	uint16_t idx = __atomic_load_n(&a->idx, __ATOMIC_RELAXED);
	__atomic_store_n(&a->ring[idx % NUM], (uint16_t)(NUM + 3), __ATOMIC_RELAXED);
	/* release: the ring entry before the index that publishes it (pairs with the device's
	 * acquire load of avail->idx). */
	__atomic_store_n(&a->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
	kick(&bad);
	assert_true(wait_broken(&bad));
	kick(&bad); /* a second kick must not report again */
	assert_true(round_trip(&good));
	assert_int_equal(atomic_load(&bad.broken_calls), 1);
	assert_int_equal(atomic_load(&bad.why), VQS_VQ_ERR_HEAD_RANGE);
	assert_int_equal(vqs_vq_error(bad.p.dev), VQS_VQ_ERR_HEAD_RANGE);
	assert_int_equal(atomic_load(&good.broken_calls), 0);

	side_fini(&bad);
	side_fini(&good);
	vqs_sched_destroy(sched);
}

static void test_broken_ring_reported_once_dedicated(void **state)
{
	broken_ring_reported_once_other_queue_served(VQS_POLICY_DEDICATED);
}
static void test_broken_ring_reported_once_pool(void **state)
{
	broken_ring_reported_once_other_queue_served(VQS_POLICY_POOL);
}
static void test_broken_ring_reported_once_adaptive(void **state)
{
	broken_ring_reported_once_other_queue_served(VQS_POLICY_ADAPTIVE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_broken_ring_reported_once_dedicated),
		cmocka_unit_test(test_broken_ring_reported_once_pool),
		cmocka_unit_test(test_broken_ring_reported_once_adaptive),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
