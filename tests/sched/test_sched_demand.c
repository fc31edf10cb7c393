/* SPDX-License-Identifier: MIT */
/*
 * vqs_queue_opts.demand: the batch a queue pops is capped by what its handler says it can take,
 * so nothing is popped only to be given back; 0 parks the queue until vqs_queue_wake, and a wake
 * that races with the 0 is not lost; callers built before the field existed get no cap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "pair.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define NUM 64
#define BASE 0x100000u
#define ARENA (1u << 20)
#define REQS 40u
#define WAIT_NS 5000000000ull

struct fx {
	struct vqs_served_pair s;
	atomic_uint allow;       /* what demand answers */
	atomic_uint most;        /* largest batch the handler saw */
	atomic_uint handled;     /* requests the handler completed */
	atomic_uint demands;     /* demand calls */
	atomic_bool race_once;   /* demand answers 0 once, waking the queue as it does */
	int slots[REQS];
};

static unsigned handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *op)
{
	struct fx *f = op;
	unsigned most = atomic_load(&f->most);
	while (n > most && !atomic_compare_exchange_weak(&f->most, &most, n))
		;
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	atomic_fetch_add(&f->handled, n);
	return n;
}

static unsigned demand(struct vqs_queue *q, void *op)
{
	struct fx *f = op;
	atomic_fetch_add(&f->demands, 1);
	if (atomic_exchange(&f->race_once, false)) {
		/* a producer arrives between the device's "nothing to do" and the park */
		atomic_store(&f->allow, NUM);
		vqs_queue_wake(q);
		return 0;
	}
	return atomic_load(&f->allow);
}

/* race: demand's first answer is the racing 0 (set before attach: the queue's first turn may
 * come at once, before a flag set afterwards). */
static void fx_init(struct fx *f, enum vqs_policy pol, uint32_t opts_size, unsigned allow,
		    bool race)
{
	memset(f, 0, sizeof(*f));
	atomic_init(&f->allow, allow);
	atomic_init(&f->race_once, race);
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = handler;
	o.opaque = f;
	o.demand = demand; /* beyond a shorter opts_size: must not be read */
	o.size = opts_size;
	assert_int_equal(vqs_served_pair_init(&f->s, NUM, FEATURES, BASE, ARENA, pol, &o), 0);
}

static void fx_fini(struct fx *f)
{
	assert_int_equal(vqs_served_pair_fini(&f->s), 0);
}

/* Make REQS one-buffer chains available in one go and kick once. */
static void send_all(struct fx *f)
{
	uint64_t gpa = vqs_gmem_alloc(f->s.p.gmem, 64 * REQS, 64);
	assert_true(gpa != 0);
	for (unsigned i = 0; i < REQS; i++) {
		struct vqs_drv_buf b = {.gpa = gpa + 64 * i, .len = 64};
		assert_int_equal(vqs_drv_add(f->s.p.drv, &b, 0, 1, &f->slots[i], false), 0);
	}
	vqs_drv_kick_prepare(f->s.p.drv);
	uint64_t one = 1;
	assert_int_equal(write(f->s.kick, &one, sizeof(one)), sizeof(one));
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Reap completions until `want` have come back or `wait_ns` passed; each slot once. */
static unsigned reap(struct fx *f, unsigned want, uint64_t wait_ns, unsigned char *seen)
{
	unsigned got = 0;
	uint64_t end = now_ns() + wait_ns;
	while (got < want && now_ns() < end) {
		uint32_t len;
		int *tok = vqs_drv_get_used(f->s.p.drv, &len);
		if (!tok) {
			usleep(200);
			continue;
		}
		unsigned i = (unsigned)(tok - f->slots);
		assert_true(i < REQS);
		assert_int_equal(seen[i], 0);
		seen[i] = 1;
		got++;
	}
	return got;
}

static uint64_t given_back(struct fx *f)
{
	struct vqs_queue_stats st = {.size = sizeof(st)};
	assert_int_equal(vqs_queue_stats_get(f->s.q, &st), 0);
	return st.given_back;
}

static void caps_batches(enum vqs_policy pol)
{
	struct fx f;
	fx_init(&f, pol, sizeof(struct vqs_queue_opts), 5, false);
	unsigned char seen[REQS] = {0};
	send_all(&f);
	assert_int_equal(reap(&f, REQS, WAIT_NS, seen), REQS);
	assert_true(atomic_load(&f.most) <= 5);
	assert_true(atomic_load(&f.demands) >= REQS / 5);
	assert_int_equal(given_back(&f), 0);
	fx_fini(&f);
}

static void test_demand_caps_batches_dedicated(void **state) { caps_batches(VQS_POLICY_DEDICATED); }
static void test_demand_caps_batches_pool(void **state) { caps_batches(VQS_POLICY_POOL); }

static void test_demand_zero_parks_until_wake(void **state)
{
	struct fx f;
	fx_init(&f, VQS_POLICY_DEDICATED, sizeof(struct vqs_queue_opts), 0, false);
	unsigned char seen[REQS] = {0};
	send_all(&f);
	assert_int_equal(reap(&f, REQS, 100000000ull, seen), 0);
	assert_int_equal(atomic_load(&f.handled), 0);
	assert_true(atomic_load(&f.demands) >= 1);
	/* parked: more kicks do not bring it back, only a wake does */
	uint64_t one = 1;
	assert_int_equal(write(f.s.kick, &one, sizeof(one)), sizeof(one));
	assert_int_equal(reap(&f, REQS, 50000000ull, seen), 0);
	atomic_store(&f.allow, NUM);
	vqs_queue_wake(f.s.q);
	assert_int_equal(reap(&f, REQS, WAIT_NS, seen), REQS);
	assert_int_equal(given_back(&f), 0);
	fx_fini(&f);
}

static void test_wake_racing_a_zero_demand_is_not_lost(void **state)
{
	struct fx f;
	fx_init(&f, VQS_POLICY_DEDICATED, sizeof(struct vqs_queue_opts), 0, true);
	unsigned char seen[REQS] = {0};
	send_all(&f);
	assert_int_equal(reap(&f, REQS, WAIT_NS, seen), REQS);
	assert_false(atomic_load(&f.race_once));
	fx_fini(&f);
}

static void test_opts_from_before_demand_are_not_capped(void **state)
{
	struct fx f;
	fx_init(&f, VQS_POLICY_DEDICATED, (uint32_t)offsetof(struct vqs_queue_opts, demand), 0,
		false);
	unsigned char seen[REQS] = {0};
	send_all(&f);
	assert_int_equal(reap(&f, REQS, WAIT_NS, seen), REQS);
	assert_int_equal(atomic_load(&f.demands), 0);
	fx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demand_caps_batches_dedicated),
		cmocka_unit_test(test_demand_caps_batches_pool),
		cmocka_unit_test(test_demand_zero_parks_until_wake),
		cmocka_unit_test(test_wake_racing_a_zero_demand_is_not_lost),
		cmocka_unit_test(test_opts_from_before_demand_are_not_capped),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
