/* SPDX-License-Identifier: MIT */
/*
 * Handlers run outside the memory read-side section: the batch's requests pin the memory table
 * they were translated through instead. So a handler that blocks (a disk write, say) does not
 * hold up a table replacement waiting for its grace period (vhost-user acknowledges
 * SET_MEM_TABLE and REM_MEM_REG only after one), its buffers stay mapped until its requests are
 * completed, and a handler may detach a queue another worker serves (detach waits for a grace
 * period, which a reader waiting for itself would never see end).
 *
 * A queue whose handler is declared nonblocking (vqs_queue_opts.handler_nonblocking) runs it
 * inside the section instead: a replacement then waits for the handler call in progress.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define WAIT_NS 10000000000ull
/* The handler blocks until the test releases it, for at most this long (a replacement that waits
 * for the handler then returns only after it). */
#define HANDLER_BLOCK_MS 2000
/* A replacement waits for a grace period (readers' sections are microseconds long) and for the
 * call_rcu thread to retire the old table: milliseconds, far below the handler's block even on a
 * loaded machine. */
#define REPLACE_BOUND_NS 500000000ull

static bool wait_flag(_Atomic bool *flag)
{
	for (uint64_t t0 = vqs_now_ns(); vqs_now_ns() - t0 < WAIT_NS; vqs_test_sleep_ms(1))
		if (atomic_load(flag))
			return true;
	return false;
}

/* ---- a handler that blocks while the table is replaced ---- */

struct sleeper {
	_Atomic bool entered, go, released, done;
	bool mapped_after_sleep; /* the region was not released while the handler used it */
};

static struct sleeper sl;

static void on_release(void *opaque, const struct vqs_mem_region *r)
{
	atomic_store(&sl.released, true);
}

static unsigned sleep_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			      void *opaque)
{
	atomic_store(&sl.entered, true);
	for (unsigned ms = 0; ms < HANDLER_BLOCK_MS && !atomic_load(&sl.go); ms++)
		vqs_test_sleep_ms(1);
	sl.mapped_after_sleep = !atomic_load(&sl.released);
	for (unsigned i = 0; i < n; i++) {
		memset(reqs[i]->elem.iov[0].iov_base, 0x5a, reqs[i]->elem.iov[0].iov_len);
		vqs_req_complete(reqs[i], reqs[i]->elem.in_len);
	}
	atomic_store(&sl.done, true);
	return n;
}

/* A demand callback that blocks the same way, then asks for everything. */
static unsigned sleep_demand(struct vqs_queue *q, void *opaque)
{
	atomic_store(&sl.entered, true);
	for (unsigned ms = 0; ms < HANDLER_BLOCK_MS && !atomic_load(&sl.go); ms++)
		vqs_test_sleep_ms(1);
	return 64;
}

/* The handler (or, with `demand`, the queue's demand callback) blocks while the table is
 * replaced. Under poll the queue is first made a held one (a request served with nothing
 * blocking), whose next turn starts from the light looks' read-side section. `nonblocking`:
 * the handler is declared nonblocking (and blocks all the same, to show where it runs). */
static void sleep_during_replacement(enum vqs_policy policy, bool demand, bool nonblocking)
{
	memset(&sl, 0, sizeof(sl));
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = sleep_handler;
	o.handler_nonblocking = nonblocking;
	if (demand)
		o.demand = sleep_demand;
	/* poll_timeout_us 0: a polled queue stays held, its turns start from the light looks */
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = policy;
	so.poll_timeout_us = 0;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	struct vqs_served_pair sp;
	assert_int_equal(vqs_served_pair_attach(&sp, s, 16, FEATURES, 0x100000, 1 << 16, &o), 0);
	if (policy == VQS_POLICY_POLL) {
		struct vqs_drv_buf w = {vqs_gmem_alloc(sp.p.gmem, 64, 8), 64};
		atomic_store(&sl.go, true);
		assert_int_equal(vqs_pair_round_trip(&sp.p, sp.kick, sp.call, &w, 0, 1), 64);
		memset(&sl, 0, sizeof(sl));
	}
	/* The buffers are translated through a region that leaves the map while the handler
	 * sleeps; its release hook tells when nothing uses it any more. */
	struct vqs_mem_region r;
	vqs_gmem_region(sp.p.gmem, &r);
	r.release = on_release;
	assert_int_equal(vqs_mem_set(sp.p.mem, &r, 1), 0);
	vqs_mem_synchronize(sp.p.mem);

	struct vqs_drv_buf b = {vqs_gmem_alloc(sp.p.gmem, 64, 8), 64};
	int token;
	assert_int_equal(vqs_pair_post(&sp.p, sp.kick, &b, false, 1, &token), 0);
	assert_true(wait_flag(&sl.entered));

	struct vqs_mem_region plain;
	vqs_gmem_region(sp.p.gmem, &plain);
	uint64_t t0 = vqs_now_ns();
	assert_int_equal(vqs_mem_set(sp.p.mem, &plain, 1), 0);
	vqs_mem_synchronize(sp.p.mem); /* what a REPLY_ACK of SET_MEM_TABLE waits for */
	uint64_t took = vqs_now_ns() - t0;
	bool handler_done = atomic_load(&sl.done);
	atomic_store(&sl.go, true);
	printf("table replaced in %llu us, the handler %s\n", (unsigned long long)(took / 1000),
	       handler_done ? "done" : "still blocked");
	if (nonblocking) {
		/* inside the section: the replacement waited for the whole call */
		assert_true(handler_done);
	} else {
		assert_false(handler_done);
		assert_true(took < REPLACE_BOUND_NS);
	}

	/* The pin kept the old region until the request was completed (a demand callback blocks
	 * before the pop: that request goes through the new table). */
	assert_true(wait_flag(&sl.done));
	assert_true(wait_flag(&sl.released));
	if (!demand)
		assert_true(sl.mapped_after_sleep);
	uint32_t len = 0;
	void *tok = NULL;
	for (uint64_t t1 = vqs_now_ns(); !tok && vqs_now_ns() - t1 < WAIT_NS; vqs_test_sleep_ms(1))
		tok = vqs_drv_get_used(sp.p.drv, &len);
	assert_ptr_equal(tok, &token);
	assert_int_equal(len, 64);
	assert_int_equal(((uint8_t *)vqs_gmem_host(sp.p.gmem, b.gpa, 64))[63], 0x5a);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
	vqs_sched_destroy(s);
}

static void test_handler_sleep_does_not_delay_table_replacement(void **state)
{
	sleep_during_replacement(VQS_POLICY_DEDICATED, false, false);
}

/* A held queue's turn begins in the light looks' section and must leave it before the handler
 * and before the demand callback. */
static void test_polled_handler_sleep_does_not_delay_table_replacement(void **state)
{
	sleep_during_replacement(VQS_POLICY_POLL, false, false);
}

static void test_polled_demand_sleep_does_not_delay_table_replacement(void **state)
{
	sleep_during_replacement(VQS_POLICY_POLL, true, false);
}

static void test_nonblocking_handler_runs_inside_the_section(void **state)
{
	sleep_during_replacement(VQS_POLICY_DEDICATED, false, true);
}

/* A held queue's turns begin in the light looks' section, and a nonblocking handler's stay in it. */
static void test_polled_nonblocking_handler_runs_inside_the_looks_section(void **state)
{
	sleep_during_replacement(VQS_POLICY_POLL, false, true);
}

/* ---- a busy queue with a nonblocking handler ---- */

/* How long the traffic goes on at most: a replacement that waits for it to end takes this long. */
#define STREAM_MAX_NS 3000000000ull
#define STREAM_DEPTH 32

/* The queue's own driver is its handler: each call reaps what was used and makes as many
 * requests available again, so the ring is never empty, however the threads are scheduled (a
 * driver thread of its own, descheduled on a small machine, lets the worker find it empty and
 * leave its section). It stops refilling when told, or after STREAM_MAX_NS. */
struct refiller {
	struct vqs_drv_vq *drv;
	struct vqs_drv_buf b;
	uint64_t t0;
	unsigned out;
	/* the test thread posted the first request and no longer touches the driver */
	_Atomic bool ready;
	_Atomic bool stop;
	_Atomic uint64_t done;
};

static unsigned refill_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			       void *opaque)
{
	static int token;
	struct refiller *r = opaque;
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	/* acquire pairs with the test's release after its post: the driver is the handler's now */
	for (uint64_t t0 = vqs_now_ns();
	     !atomic_load_explicit(&r->ready, memory_order_acquire) && vqs_now_ns() - t0 < WAIT_NS;)
		;
	uint32_t len;
	for (; vqs_drv_get_used(r->drv, &len); r->out--)
		atomic_fetch_add(&r->done, 1);
	if (!atomic_load(&r->stop) && vqs_now_ns() - r->t0 < STREAM_MAX_NS) {
		for (; r->out < STREAM_DEPTH; r->out++)
			vqs_drv_add(r->drv, &r->b, 0, 1, &token, false);
		vqs_drv_kick_prepare(r->drv);
	}
	return n;
}

/* A busy-polled queue whose nonblocking handler keeps finding requests stays in one read-side
 * section batch after batch; the worker leaves it every SCHED_SECTION_NS, so a table replacement
 * still completes in milliseconds (without that it waited for the traffic to stop). */
static void test_busy_nonblocking_queue_lets_a_replacement_through(void **state)
{
	static struct refiller r;
	memset(&r, 0, sizeof(r));
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = refill_handler;
	o.opaque = &r;
	o.handler_nonblocking = true;
	/* busy-poll: the traffic never pauses, so the queue stays held whatever its timeout */
	struct vqs_served_pair sp;
	assert_int_equal(vqs_served_pair_init(&sp, 64, FEATURES, 0x100000, 1 << 16,
					      VQS_POLICY_POLL, &o),
			 0);
	r.drv = sp.p.drv;
	r.b = (struct vqs_drv_buf){vqs_gmem_alloc(sp.p.gmem, 64, 8), 64};
	r.t0 = vqs_now_ns();
	r.out = 1; /* the first request; the handler keeps STREAM_DEPTH from then on */
	int token;
	assert_int_equal(vqs_pair_post(&sp.p, sp.kick, &r.b, false, 1, &token), 0);
	atomic_store_explicit(&r.ready, true, memory_order_release);
	for (uint64_t t0 = vqs_now_ns(); atomic_load(&r.done) < 1000 && vqs_now_ns() - t0 < WAIT_NS;)
		vqs_test_sleep_ms(1);
	uint64_t before = atomic_load(&r.done);
	struct vqs_mem_region plain;
	vqs_gmem_region(sp.p.gmem, &plain);
	uint64_t t0 = vqs_now_ns();
	assert_int_equal(vqs_mem_set(sp.p.mem, &plain, 1), 0);
	vqs_mem_synchronize(sp.p.mem);
	uint64_t took = vqs_now_ns() - t0, during = atomic_load(&r.done) - before;
	atomic_store(&r.stop, true);
	printf("table replaced in %llu us, %llu requests served meanwhile\n",
	       (unsigned long long)(took / 1000), (unsigned long long)during);
	assert_true(before >= 1000);
	assert_true(took < REPLACE_BOUND_NS);
	/* the handler stops refilling; what is in flight drains */
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

/* ---- a handler that detaches another queue ---- */

struct detacher {
	struct vqs_queue *_Atomic victim;
	_Atomic bool done;
	int rc;
};

static unsigned detach_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			       void *opaque)
{
	struct detacher *d = opaque;
	struct vqs_queue *v = atomic_exchange(&d->victim, NULL);
	if (v) {
		d->rc = vqs_sched_detach(v);
		atomic_store(&d->done, true);
	}
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	return n;
}

static void test_handler_detaches_another_queue(void **state)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so); /* dedicated: each queue has a worker of its own */
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	static struct detacher d;
	memset(&d, 0, sizeof(d));
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = detach_handler;
	o.opaque = &d;
	struct vqs_served_pair a, b;
	assert_int_equal(vqs_served_pair_attach(&a, s, 16, FEATURES, 0x100000, 1 << 16, &o), 0);
	o.handler = vqs_test_complete_all;
	o.opaque = NULL;
	assert_int_equal(vqs_served_pair_attach(&b, s, 16, FEATURES, 0x100000, 1 << 16, &o), 0);
	struct vqs_drv_buf buf = {vqs_gmem_alloc(b.p.gmem, 64, 8), 64};
	assert_int_equal(vqs_pair_round_trip(&b.p, b.kick, b.call, &buf, 0, 1), 0);

	atomic_store(&d.victim, b.q);
	buf.gpa = vqs_gmem_alloc(a.p.gmem, 64, 8);
	assert_int_equal(vqs_pair_round_trip(&a.p, a.kick, a.call, &buf, 0, 1), 0);
	assert_true(atomic_load(&d.done));
	assert_int_equal(d.rc, 0);
	b.q = NULL; /* detached by the handler */
	/* a is still served */
	assert_int_equal(vqs_pair_round_trip(&a.p, a.kick, a.call, &buf, 0, 1), 0);
	assert_int_equal(vqs_served_pair_fini(&b), 0);
	assert_int_equal(vqs_served_pair_fini(&a), 0);
	vqs_sched_destroy(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handler_sleep_does_not_delay_table_replacement),
		cmocka_unit_test(test_polled_handler_sleep_does_not_delay_table_replacement),
		cmocka_unit_test(test_polled_demand_sleep_does_not_delay_table_replacement),
		cmocka_unit_test(test_nonblocking_handler_runs_inside_the_section),
		cmocka_unit_test(test_polled_nonblocking_handler_runs_inside_the_looks_section),
		cmocka_unit_test(test_busy_nonblocking_queue_lets_a_replacement_through),
		cmocka_unit_test(test_handler_detaches_another_queue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
