/* SPDX-License-Identifier: MIT */
/*
 * Fairness: one queue is kept full by a driver thread, another sends one request at a time, both
 * served by one worker. The per-turn budget must bound the light queue's wait, counted in requests
 * the worker served between the light request's submission and its turn: the worker finishes the
 * flooded queue's turn (at most budget_pkts), and a kick landing just after the worker looked for
 * kicks waits one more such turn, so the bound is 2 * budget_pkts whatever the speeds. A round
 * in which this test's own thread was descheduled between taking the count and kicking (three
 * busy threads on two CPUs) measures the machine, not the budget: it is not counted, and most
 * rounds must count.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "pair.h"
#include "scale.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define BUDGET 16u
#define WAIT_MS 20000
/* From taking the count to the kick takes a few microseconds; longer, this thread was not
 * running meanwhile. */
#define DISTURBED_NS 20000u

struct side {
	struct vqs_pair p;
	int kick, call;
	struct vqs_queue *q;
	uint64_t buf;
};

struct fair {
	struct side flood, light;
	_Atomic uint64_t served;  /* requests the worker served, both queues */
	_Atomic uint64_t light_wait; /* the last light request's wait, in requests (handler) */
	uint64_t max_wait;        /* over the counted rounds (main thread) */
	unsigned disturbed;       /* rounds not counted (main thread) */
	_Atomic bool stop;
	bool stalled;
};

static unsigned handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	struct fair *f = opaque;
	bool light = q == f->light.q;
	for (unsigned i = 0; i < n; i++) {
		if (light) {
			uint64_t submitted;
			memcpy(&submitted, reqs[i]->elem.iov[0].iov_base, 8);
			atomic_store_explicit(&f->light_wait, atomic_load(&f->served) - submitted,
					      memory_order_relaxed);
		} else {
			/* Make the worker the bottleneck, so the flooded ring stays full. */
			for (volatile int spin = 0; spin < 2000; spin++)
				;
		}
		atomic_fetch_add(&f->served, 1);
		vqs_req_complete(reqs[i], 0);
	}
	return n;
}

static void kick(int fd)
{
	uint64_t one = 1;
	assert_int_equal(write(fd, &one, sizeof(one)), sizeof(one));
}

static bool wait_call(int fd, unsigned ms)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	if (poll(&pfd, 1, (int)ms) <= 0)
		return false;
	uint64_t v;
	return read(fd, &v, sizeof(v)) == sizeof(v);
}

static void *flood_main(void *arg)
{
	struct fair *f = arg;
	struct side *s = &f->flood;
	int token;
	uint32_t len;
	while (!atomic_load(&f->stop)) {
		struct vqs_drv_buf b = {s->buf, 16};
		unsigned added = 0;
		while (vqs_drv_add(s->p.drv, &b, 1, 0, &token, false) == 0)
			added++;
		if (added && vqs_drv_kick_prepare(s->p.drv))
			kick(s->kick);
		unsigned got = 0;
		while (vqs_drv_get_used(s->p.drv, &len))
			got++;
		if (!got && !vqs_drv_enable_cb(s->p.drv))
			wait_call(s->call, 10);
	}
	return NULL;
}

static void side_init(struct side *s, struct vqs_sched *sched, struct fair *f, unsigned num)
{
	assert_int_equal(vqs_pair_init(&s->p, num, FEATURES, 0x100000, 1 << 20), 0);
	s->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->buf = vqs_gmem_alloc(s->p.gmem, 16, 8);
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.vq = s->p.dev;
	o.kick_fd = s->kick;
	o.call_fd = s->call;
	o.handler = handler;
	o.opaque = f;
	o.group = 1;  /* dedicated: both on one thread */
	o.worker = 0; /* poll/adaptive: both on worker 0 */
	assert_int_equal(vqs_sched_attach(sched, &o, &s->q), 0);
}

static void side_fini(struct side *s)
{
	vqs_sched_detach(s->q);
	close(s->kick);
	close(s->call);
	vqs_pair_fini(&s->p);
}

static void fairness(enum vqs_policy p)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = p;
	so.nworkers = 1;
	so.budget_pkts = BUDGET;
	so.batch_max = 8;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	static struct fair f;
	memset(&f, 0, sizeof(f));
	side_init(&f.flood, s, &f, 512);
	side_init(&f.light, s, &f, 16);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, flood_main, &f), 0);

	/* Let the flood build up first (bounded). */
	for (uint64_t t0 = vqs_now_ns(); atomic_load(&f.served) < 4 * BUDGET;) {
		assert_true(vqs_now_ns() - t0 < WAIT_MS * 1000000ull);
		usleep(1000);
	}
	unsigned rounds = (unsigned)vqs_test_scaled(300);
	uint32_t len;
	int token;
	for (unsigned i = 0; i < rounds && !f.stalled; i++) {
		uint64_t t_count = vqs_now_ns();
		uint64_t now = atomic_load(&f.served);
		memcpy(vqs_gmem_host(f.light.p.gmem, f.light.buf, 8), &now, 8);
		struct vqs_drv_buf b = {f.light.buf, 16};
		assert_int_equal(vqs_drv_add(f.light.p.drv, &b, 1, 0, &token, false), 0);
		if (vqs_drv_kick_prepare(f.light.p.drv))
			kick(f.light.kick);
		uint64_t t0 = vqs_now_ns();
		bool disturbed = t0 - t_count > DISTURBED_NS;
		while (!vqs_drv_get_used(f.light.p.drv, &len)) {
			if (vqs_drv_enable_cb(f.light.p.drv))
				continue;
			wait_call(f.light.call, 100);
			if (vqs_now_ns() - t0 > WAIT_MS * 1000000ull) {
				f.stalled = true;
				break;
			}
		}
		/* acquire by get_used above: the handler's store came before its completion */
		uint64_t w = atomic_load_explicit(&f.light_wait, memory_order_relaxed);
		if (disturbed)
			f.disturbed++;
		else if (w > f.max_wait)
			f.max_wait = w;
	}
	atomic_store(&f.stop, true);
	pthread_join(th, NULL);
	struct vqs_queue_stats st = {.size = sizeof(st)};
	vqs_queue_stats_get(f.flood.q, &st);

	side_fini(&f.light);
	side_fini(&f.flood);
	vqs_sched_destroy(s);
	printf("%s: light queue waited at most %llu requests (bound %u) in %u of %u rounds; flood "
	       "turns cut by the budget: %llu\n",
	       vqs_policy_name(p), (unsigned long long)f.max_wait, 2 * BUDGET,
	       rounds - f.disturbed, rounds, (unsigned long long)st.budget_exhausted);
	assert_false(f.stalled);
	assert_true(f.disturbed <= rounds / 2);
	assert_true(st.budget_exhausted > 0); /* the flood really competed */
	assert_true(f.max_wait <= 2 * BUDGET);
}

static void test_fair_dedicated_group_light_queue_wait_bounded(void **state)
{
	fairness(VQS_POLICY_DEDICATED);
}

static void test_fair_pool_light_queue_wait_bounded(void **state) { fairness(VQS_POLICY_POOL); }

static void test_fair_poll_light_queue_wait_bounded(void **state) { fairness(VQS_POLICY_POLL); }

static void test_fair_adaptive_light_queue_wait_bounded(void **state)
{
	fairness(VQS_POLICY_ADAPTIVE);
}

/* ---- the byte budget ---- */

/* One more than four turns' worth: a turn whose pop empties the ring ends drained, so the
 * fourth turn must leave a chain behind to end on the budget. */
#define BYTES_CHAINS 17u
#define BYTES_CHAIN_LEN 1024u

/* BYTES_CHAINS chains of BYTES_CHAIN_LEN readable bytes, published at once and served with a byte
 * budget of budget_bytes and the default packet budget (256), which they cannot reach: *st gets
 * the queue's counters. */
static void serve_bytes(uint64_t budget_bytes, struct vqs_queue_stats *st)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.budget_bytes = budget_bytes;
	so.batch_max = 2; /* several batches per turn: the budget, not the batch, ends it */
	assert_true(so.budget_pkts > BYTES_CHAINS);
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = vqs_test_complete_all;
	struct vqs_served_pair sp;
	assert_int_equal(vqs_served_pair_attach(&sp, s, 32, FEATURES, 0x100000, 1 << 16, &o), 0);
	struct vqs_drv_buf b = {vqs_gmem_alloc(sp.p.gmem, BYTES_CHAIN_LEN, 8), BYTES_CHAIN_LEN};
	int tokens[BYTES_CHAINS];
	assert_int_equal(vqs_pair_post(&sp.p, sp.kick, &b, true, BYTES_CHAINS, tokens), 0);
	unsigned back = 0;
	uint32_t len;
	for (uint64_t t0 = vqs_now_ns(); back < BYTES_CHAINS; usleep(1000)) {
		assert_true(vqs_now_ns() - t0 < WAIT_MS * 1000000ull);
		while (vqs_drv_get_used(sp.p.drv, &len))
			back++;
	}
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	assert_int_equal(vqs_queue_stats_get(sp.q, st), 0);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
	vqs_sched_destroy(s);
	assert_int_equal(st->reqs, BYTES_CHAINS);
	assert_int_equal(st->bytes, BYTES_CHAINS * BYTES_CHAIN_LEN);
}

/* 4 KiB per turn: four chains, then the turn ends and the queue goes back on the list. */
static void test_budget_bytes_ends_turn(void **state)
{
	struct vqs_queue_stats st;
	serve_bytes(4 * BYTES_CHAIN_LEN, &st);
	printf("%llu turns, %llu ended by the byte budget\n", (unsigned long long)st.turns,
	       (unsigned long long)st.budget_exhausted);
	assert_int_equal(st.budget_exhausted, BYTES_CHAINS / 4);
	assert_true(st.turns > BYTES_CHAINS / 4);
	/* The same chains under the default byte budget: one turn takes them all. */
	serve_bytes(0x80000, &st);
	assert_int_equal(st.budget_exhausted, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fair_dedicated_group_light_queue_wait_bounded),
		cmocka_unit_test(test_fair_pool_light_queue_wait_bounded),
		cmocka_unit_test(test_fair_poll_light_queue_wait_bounded),
		cmocka_unit_test(test_fair_adaptive_light_queue_wait_bounded),
		cmocka_unit_test(test_budget_bytes_ends_turn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
