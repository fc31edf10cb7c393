/* SPDX-License-Identifier: MIT */
/*
 * Notification suppression on the device side: the enable/disable re-check, the need_call
 * decision over a flushed batch, and a two-thread run in which a lost wakeup would stall.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "pair.h"
#include "ring_fixture.h"
#include "scale.h"

#define NUM 8
#define F_EVT VQS_BIT(VQS_F_EVENT_IDX)

static void pop_fill(struct fx_ring *r, unsigned head)
{
	fx_simple_chain(r, head, 8, true);
	struct iovec iov[1];
	struct vqs_elem e;
	assert_int_equal(fx_pop(r->vq, &e, iov, 1), 0);
	assert_int_equal(vqs_vq_fill(r->vq, &e, 8), 0);
}

/* A chain published while kicks were disabled (so the driver did not kick) is reported by
 * enable_notify, so the device drains instead of sleeping. */
static void enable_rechecks(void **state, uint64_t features)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, features);
	vqs_vq_disable_notify(c->r.vq);
	fx_simple_chain(&c->r, 0, 8, false);
	assert_true(vqs_vq_enable_notify(c->r.vq));
	struct iovec iov[1];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->r.vq, &e, iov, 1), 0);
	assert_false(vqs_vq_enable_notify(c->r.vq));
}

static void test_notify_enable_rechecks_avail_with_event_idx(void **state)
{
	enable_rechecks(state, F_EVT);
}

static void test_notify_enable_rechecks_avail_with_flags(void **state)
{
	enable_rechecks(state, 0);
}

/* avail_event names the next entry the device will look at: the driver kicks when it publishes
 * exactly that one. */
static void test_notify_enable_sets_avail_event_to_next_entry(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, F_EVT);
	pop_fill(&c->r, 0);
	pop_fill(&c->r, 1);
	assert_false(vqs_vq_enable_notify(c->r.vq));
	assert_int_equal(fx_avail_event(&c->r), 2);
	assert_true(vqs_vring_need_event(fx_avail_event(&c->r), 3, 2));
}

static void test_need_call_false_when_nothing_was_published(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	assert_false(vqs_vq_need_call(c->r.vq));
	pop_fill(&c->r, 0);
	assert_false(vqs_vq_need_call(c->r.vq)); /* filled, not flushed */
	assert_int_equal(vqs_vq_flush(c->r.vq), 1);
	assert_true(vqs_vq_need_call(c->r.vq));
	assert_false(vqs_vq_need_call(c->r.vq));
}

/* One flush of several entries is one decision over [old, new): a used_event anywhere inside
 * the batch asks for the interrupt. */
static void test_need_call_batch_covers_used_event_inside_it(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, F_EVT);
	pop_fill(&c->r, 0);
	assert_int_equal(vqs_vq_flush(c->r.vq), 1);
	assert_true(vqs_vq_need_call(c->r.vq)); /* first decision is never suppressed */
	fx_set_used_event(&c->r, 2);
	for (unsigned i = 1; i < 4; i++)
		pop_fill(&c->r, i);
	assert_int_equal(vqs_vq_flush(c->r.vq), 3); /* [1, 4) contains 2 */
	assert_true(vqs_vq_need_call(c->r.vq));
	for (unsigned i = 4; i < 6; i++)
		pop_fill(&c->r, i);
	assert_int_equal(vqs_vq_flush(c->r.vq), 2); /* [4, 6) does not */
	assert_false(vqs_vq_need_call(c->r.vq));
}

static void test_need_call_event_idx_across_16bit_wrap(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, F_EVT);
	struct vqs_vq_state st = {.last_avail_idx = 65534, .used_idx = 65534};
	assert_int_equal(vqs_vq_set_state(c->r.vq, &st), 0);
	fx_set_avail_idx(&c->r, 65534);
	pop_fill(&c->r, 0);
	vqs_vq_flush(c->r.vq);
	assert_true(vqs_vq_need_call(c->r.vq)); /* after set_state: never suppressed */
	fx_set_used_event(&c->r, 0);            /* entry 0 is written after the wrap */
	pop_fill(&c->r, 1);
	vqs_vq_flush(c->r.vq); /* [65535, 0) */
	assert_false(vqs_vq_need_call(c->r.vq));
	pop_fill(&c->r, 2);
	vqs_vq_flush(c->r.vq); /* [0, 1) */
	assert_true(vqs_vq_need_call(c->r.vq));
}

/* NOTIFY_ON_EMPTY: interrupt when the device ran out of buffers even though NO_INTERRUPT. */
static void test_need_call_notify_on_empty_overrides_no_interrupt(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, VQS_BIT(VQS_F_NOTIFY_ON_EMPTY));
	c->r.avail->flags = VQS_VRING_AVAIL_F_NO_INTERRUPT;
	pop_fill(&c->r, 0);
	fx_simple_chain(&c->r, 1, 8, true); /* still work queued: not empty */
	vqs_vq_flush(c->r.vq);
	assert_false(vqs_vq_need_call(c->r.vq));
	struct iovec iov[1];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->r.vq, &e, iov, 1), 0);
	assert_int_equal(vqs_vq_fill(c->r.vq, &e, 0), 0);
	vqs_vq_flush(c->r.vq);
	assert_true(vqs_vq_need_call(c->r.vq));
}

/* ---- two threads: driver and device each sleep on an eventfd with notifications enabled ---- */

#define WAIT_MS 10000 /* a lost wakeup stalls this long and fails the test */

struct race {
	struct vqs_pair p;
	int kick, call;
	unsigned total;
	_Atomic bool stalled;
	_Atomic bool done;
};

static bool wait_fd(struct race *r, int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int n = poll(&pfd, 1, WAIT_MS);
	if (n <= 0) {
		atomic_store(&r->stalled, true);
		return false;
	}
	uint64_t v;
	if (read(fd, &v, sizeof(v)) != sizeof(v))
		atomic_store(&r->stalled, true);
	return true;
}

static void signal_fd(int fd)
{
	uint64_t one = 1;
	if (write(fd, &one, sizeof(one)) != sizeof(one))
		abort();
}

static void *device_thread(void *arg)
{
	struct race *r = arg;
	struct iovec iov[4];
	while (!atomic_load(&r->done) && !atomic_load(&r->stalled)) {
		vqs_vq_disable_notify(r->p.dev);
		for (;;) {
			struct vqs_elem e = {.iov = iov, .iov_cap = 4};
			vqs_mem_read_lock();
			int rc = vqs_vq_pop(r->p.dev, &e);
			vqs_mem_read_unlock();
			if (rc == -EAGAIN) {
				if (vqs_vq_flush(r->p.dev) && vqs_vq_need_call(r->p.dev))
					signal_fd(r->call);
				if (!vqs_vq_enable_notify(r->p.dev))
					break;
				vqs_vq_disable_notify(r->p.dev);
				continue;
			}
			if (rc)
				return NULL;
			vqs_vq_fill(r->p.dev, &e, e.in_len);
		}
		/* Sleep until kicked; the end of the run is a kick too. */
		wait_fd(r, r->kick);
	}
	return NULL;
}

static void test_notify_no_lost_wakeup_between_threads(void **state)
{
	*state = NULL;
	static struct race r;
	memset(&r, 0, sizeof(r));
	r.total = (unsigned)vqs_test_scaled(20000);
	assert_int_equal(vqs_pair_init(&r.p, 64, F_EVT, 0x200000, 1 << 20), 0);
	r.kick = eventfd(0, EFD_NONBLOCK);
	r.call = eventfd(0, EFD_NONBLOCK);
	assert_true(r.kick >= 0 && r.call >= 0);
	uint64_t buf = vqs_gmem_alloc(r.p.gmem, 64, 8);
	pthread_t dev;
	assert_int_equal(pthread_create(&dev, NULL, device_thread, &r), 0);

	unsigned added = 0, used = 0;
	int token;
	while (used < r.total && !atomic_load(&r.stalled)) {
		while (added < r.total) {
			struct vqs_drv_buf b = {buf, 64};
			if (vqs_drv_add(r.p.drv, &b, 0, 1, &token, false) == -ENOSPC)
				break;
			added++;
		}
		if (vqs_drv_kick_prepare(r.p.drv))
			signal_fd(r.kick);
		uint32_t len;
		while (vqs_drv_get_used(r.p.drv, &len))
			used++;
		if (used < added && !vqs_drv_enable_cb(r.p.drv))
			wait_fd(&r, r.call);
		vqs_drv_disable_cb(r.p.drv);
	}
	atomic_store(&r.done, true);
	signal_fd(r.kick);
	pthread_join(dev, NULL);
	assert_false(atomic_load(&r.stalled));
	assert_int_equal(used, r.total);
	assert_false(vqs_vq_is_broken(r.p.dev));
	close(r.kick);
	close(r.call);
	vqs_pair_fini(&r.p);
}

#define T(f) cmocka_unit_test_teardown(f, fx_ctx_teardown)
int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_notify_enable_rechecks_avail_with_event_idx),
		T(test_notify_enable_rechecks_avail_with_flags),
		T(test_notify_enable_sets_avail_event_to_next_entry),
		T(test_need_call_false_when_nothing_was_published),
		T(test_need_call_batch_covers_used_event_inside_it),
		T(test_need_call_event_idx_across_16bit_wrap),
		T(test_need_call_notify_on_empty_overrides_no_interrupt),
		T(test_notify_no_lost_wakeup_between_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
