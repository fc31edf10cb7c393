/* SPDX-License-Identifier: MIT */
/*
 * Live migration through the library's own frontend (issue 20): dirty page logging switched on
 * and off while the queues run, marking exactly the pages the backend wrote and signalling
 * SET_LOG_FD's eventfd after; GET_VRING_BASE
 * stopping a ring with every completion published and logged; a second backend resuming from
 * SET_VRING_BASE with nothing lost or done twice.
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "vu_fixture.h"

#define PAGE VQS_MEM_LOG_PAGE
#define LOG_MAX 4096

/* A frontend set up on env's backend (already started). */
static struct vqs_vu_frontend *connect_to(struct vu_env *env, bool packed)
{
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(env, &o);
	o.queue_size = 1024; /* room for INFLIGHT chains of two descriptors */
	o.mem_size = 4u << 20;
	if (packed)
		o.features |= VQS_BIT(VQS_F_RING_PACKED);
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	return f;
}

static struct vqs_vu_frontend *start(struct vu_env *env, bool packed)
{
	assert_int_equal(vu_env_start(env, 1, false), 0);
	return connect_to(env, packed);
}

static void stop(struct vu_env *env, struct vqs_vu_frontend *f)
{
	vqs_vu_frontend_destroy(f);
	vu_env_stop(env);
}

static void set_pages(uint8_t *want, uint64_t gpa, uint64_t len)
{
	for (uint64_t p = gpa / PAGE; p <= (gpa + len - 1) / PAGE; p++)
		want[p / 8] |= (uint8_t)(1u << (p % 8));
}

static bool page_marked(const uint8_t *log, uint64_t gpa)
{
	uint64_t p = gpa / PAGE;
	return log[p / 8] & (1u << (p % 8));
}

/* gpa of the area the backend writes for queue 0: split used ring, packed descriptor ring. */
static uint64_t device_written_area(struct vqs_vu_frontend *f)
{
	uint64_t desc, drv, dev;
	vqs_drv_vq_addrs(vqs_vu_frontend_vq(f, 0), &desc, &drv, &dev);
	return (vqs_vu_frontend_features(f) & VQS_BIT(VQS_F_RING_PACKED)) ? desc : dev;
}

/* gpa and size of the notification field the backend writes for queue 0 (queue size 1024):
 * split avail_event (EVENT_IDX), packed device event area. */
static uint64_t notify_field(struct vqs_vu_frontend *f, uint64_t *len)
{
	uint64_t desc, drv, dev;
	vqs_drv_vq_addrs(vqs_vu_frontend_vq(f, 0), &desc, &drv, &dev);
	bool packed = vqs_vu_frontend_features(f) & VQS_BIT(VQS_F_RING_PACKED);
	*len = packed ? sizeof(struct vqs_vring_packed_event) : 2;
	return packed ? dev : dev + 4 + 1024 * sizeof(struct vqs_vring_used_elem);
}

/* Wait (bounded) until the backend's last write to queue 0 is its re-enabling of notifications
 * at the position the driver published: its turn is over. */
static void settle(struct vqs_vu_frontend *f)
{
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, 0);
	bool packed = vqs_vu_frontend_features(f) & VQS_BIT(VQS_F_RING_PACKED);
	uint64_t len, gpa = notify_field(f, &len);
	const volatile uint16_t *p = vqs_gmem_host(vqs_vu_frontend_gmem(f), gpa, len);
	for (unsigned i = 0; i < 4000; i++) {
		struct vqs_drv_pos pos;
		assert_int_equal(vqs_drv_position(dq, &pos), 0);
		uint16_t want = (uint16_t)(pos.avail_idx | (packed && pos.avail_wrap ? 0x8000 : 0));
		if (le16toh(p[0]) == want && (!packed || le16toh(p[1]) == VQS_RING_EVENT_FLAGS_DESC))
			return;
		usleep(1000);
	}
	fail_msg("the backend never re-enabled notifications");
}

static void kick(struct vqs_vu_frontend *f)
{
	uint64_t one = 1;
	if (vqs_drv_kick_prepare(vqs_vu_frontend_vq(f, 0)))
		assert_int_equal(write(vqs_vu_frontend_kick_fd(f, 0), &one, 8), 8);
}

/* One echo request whose writable buffer straddles a page boundary: exactly its two pages, the
 * used ring's and the notification field's are marked. */
static void logs_exactly(bool packed)
{
	struct vu_env env;
	struct vqs_vu_frontend *f = start(&env, packed);
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	uint8_t log[LOG_MAX], want[LOG_MAX] = { 0 };
	assert_int_equal(vu_echo_roundtrip(f, 0, 4, 64), 0); /* before logging: not marked */
	assert_int_equal(vqs_vu_frontend_set_log(f, true), 0);
	/* The ring restarted logging (SET_VRING_ADDR) and switched notifications: cleared here. */
	settle(f);
	size_t n = vqs_vu_frontend_log_sync(f, log, sizeof(log));
	assert_true(n > 0 && n <= LOG_MAX);

	uint64_t out = vqs_gmem_alloc(g, 64, 64), in = vqs_gmem_alloc(g, 2 * PAGE, PAGE) + PAGE - 32;
	memset(vqs_gmem_host(g, out, 64), 0x5a, 64);
	struct vqs_drv_buf bufs[2] = { { out, 64 }, { in, 64 } };
	int token;
	assert_int_equal(vqs_drv_add(vqs_vu_frontend_vq(f, 0), bufs, 1, 1, &token, false), 0);
	kick(f);
	uint32_t len;
	assert_ptr_equal(vu_wait_used(f, 0, &len), &token);
	assert_int_equal(len, 64);
	settle(f);
	assert_int_equal(vqs_vu_frontend_log_sync(f, log, sizeof(log)), n);
	set_pages(want, in, 64);
	set_pages(want, device_written_area(f), 1);
	uint64_t field_len, field = notify_field(f, &field_len);
	set_pages(want, field, field_len);
	assert_memory_equal(log, want, n);

	/* Off, live: nothing marked any more, once the worker served a batch after the switch (a
	 * notification switch of the logging period may come after the sync above). */
	assert_int_equal(vqs_vu_frontend_set_log(f, false), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 8, 64), 0);
	vqs_vu_frontend_log_sync(f, log, sizeof(log));
	assert_int_equal(vu_echo_roundtrip(f, 0, 8, 64), 0);
	vqs_vu_frontend_log_sync(f, log, sizeof(log));
	memset(want, 0, sizeof(want));
	assert_memory_equal(log, want, n);
	stop(&env, f);
}

static void test_log_marks_written_pages_split(void **state) { logs_exactly(false); }
static void test_log_marks_written_pages_packed(void **state) { logs_exactly(true); }

/* test_log_unmarked, for migration tests that must show what logging protects: LOG_ALL and the
 * log are accepted as usual, and no page is ever marked. */
static void test_log_unmarked_accepts_and_marks_nothing(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start_log_unmarked(&env), 0);
	struct vqs_vu_frontend *f = connect_to(&env, false);
	uint8_t log[LOG_MAX];
	assert_int_equal(vqs_vu_frontend_set_log(f, true), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 20, 2 * PAGE), 0);
	size_t n = vqs_vu_frontend_log_sync(f, log, sizeof(log));
	assert_true(n > 0 && n <= LOG_MAX);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(log[i], 0);
	stop(&env, f);
}

/* Pending signals of eventfd fd (non-blocking): read and cleared, 0 when none. */
static uint64_t take_signals(int fd)
{
	uint64_t v = 0;
	if (read(fd, &v, sizeof(v)) < 0)
		assert_int_equal(errno, EAGAIN);
	return v;
}

/* SET_LOG_FD's eventfd (the kernel's VHOST_SET_LOG_FD) is signalled after marks, only while
 * logging; a replaced one is let go of (closed by the backend, so its reads see no writer). */
static void test_log_fd_signalled_after_marks(void **state)
{
	struct vu_env env;
	struct vqs_vu_frontend *f = start(&env, false);
	int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(efd >= 0);
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_LOG_FD, NULL, 0, &efd, 1, true, NULL,
						 0, NULL),
			 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 8, 64), 0); /* not logging: no signal */
	assert_int_equal(take_signals(efd), 0);
	/* Switching logging on restarts the rings with VRING_F_LOG, and a restarted ring's
	 * notification switch marks (and signals) its field, at a moment of the worker's choosing:
	 * only the signals after traffic are counted. */
	assert_int_equal(vqs_vu_frontend_set_log(f, true), 0);
	take_signals(efd);
	assert_int_equal(vu_echo_roundtrip(f, 0, 8, 64), 0);
	assert_true(take_signals(efd) > 0);
	/* The worker's last switch while logging may come after that count; once it served a
	 * batch after logging went off, it made every switch of the logging period. */
	assert_int_equal(vqs_vu_frontend_set_log(f, false), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 8, 64), 0);
	take_signals(efd);
	assert_int_equal(vu_echo_roundtrip(f, 0, 8, 64), 0);
	assert_int_equal(take_signals(efd), 0);
	close(efd);
	stop(&env, f);
}

/* ---- switching logging on and off while traffic runs (run under TSan too) ---- */

static void test_log_switched_under_traffic(void **state)
{
	struct vu_env env;
	struct vqs_vu_frontend *f = start(&env, false);
	struct vu_traffic t = { .f = f, .count = 20, .len = 256, .max_calls = 400 };
	uint8_t log[LOG_MAX];
	assert_int_equal(vu_traffic_start(&t), 0);
	unsigned marked = 0;
	for (int i = 0; i < 20; i++) {
		assert_int_equal(vqs_vu_frontend_set_log(f, true), 0);
		usleep(2000);
		size_t n = vqs_vu_frontend_log_sync(f, log, sizeof(log));
		for (size_t k = 0; k < n; k++)
			marked += log[k] != 0;
		assert_int_equal(vqs_vu_frontend_set_log(f, false), 0);
		usleep(1000);
	}
	assert_int_equal(vu_traffic_stop(&t), 0);
	assert_true(t.rounds > 0);
	assert_true(marked > 0);
	stop(&env, f);
}

/* ---- moving the ring state to a second backend ---- */

/* More than a scheduler turn takes (budget_pkts 256): the source stops with some never popped. */
#define INFLIGHT 400
/* How long the source's device takes per request: INFLIGHT of them must outlast whatever holds
 * the test thread up between its kick and the stop, or the stop finds none in flight (at 300 us,
 * 120 ms in all, one run in 16 at load average 9-13 had them all done). */
#define SLOW_US 1000

/* The asynchronous sources' echo devices (split, packed): their completer threads outlive the
 * tests, so each keeps its own. */
static struct vu_env async_env[2];

/* INFLIGHT echo requests on queue 0, each copying one 64-byte buffer filled with `pattern` into
 * in[i], kicked, and 3 ms for the backend to take them: returns the source buffer. */
static uint8_t *post_inflight(struct vqs_vu_frontend *f, uint8_t pattern, uint64_t *in,
			      int *tokens)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	uint64_t out = vqs_gmem_alloc(g, 64, 64);
	uint8_t *src = vqs_gmem_host(g, out, 64);
	memset(src, pattern, 64);
	for (unsigned i = 0; i < INFLIGHT; i++) {
		in[i] = vqs_gmem_alloc(g, 64, 64);
		struct vqs_drv_buf bufs[2] = { { out, 64 }, { in[i], 64 } };
		assert_int_equal(vqs_drv_add(vqs_vu_frontend_vq(f, 0), bufs, 1, 1, &tokens[i], false),
				 0);
	}
	kick(f);
	usleep(3000);
	return src;
}

/* Every request post_inflight made comes back once, with its token and the echoed data. */
static void reap_inflight(struct vqs_vu_frontend *f, const uint64_t *in, int *tokens,
			  const uint8_t *src)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	int seen[INFLIGHT] = { 0 };
	for (unsigned k = 0; k < INFLIGHT; k++) {
		uint32_t len;
		int *tok = vu_wait_used(f, 0, &len);
		assert_non_null(tok);
		assert_true(tok >= tokens && tok < tokens + INFLIGHT);
		assert_int_equal(len, 64);
		assert_int_equal(seen[tok - tokens]++, 0);
	}
	for (unsigned i = 0; i < INFLIGHT; i++)
		assert_memory_equal(vqs_gmem_host(g, in[i], 64), src, 64);
}

/*
 * async: the source completes from another thread, newest first, so at the stop requests were
 * popped and wait for a completion that is no ring position's; GET_VRING_BASE must answer only
 * after each of them is in the used ring, or the destination's driver would wait for them
 * forever (their avail entries are behind the base it resumes from).
 */
static void migrates(bool packed, bool async)
{
	struct vu_env local, *env = async ? &async_env[packed] : &local;
	assert_int_equal(vu_env_start(env, 1, false), 0);
	if (async) /* before a ring runs */
		assert_int_equal(vu_echo_start_async(&env->echo), 0);
	struct vqs_vu_frontend *f = connect_to(env, packed);
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 100, 64), 0);
	assert_int_equal(vqs_vu_frontend_set_log(f, true), 0);
	uint8_t log[LOG_MAX];
	vqs_vu_frontend_log_sync(f, log, sizeof(log));

	/* Requests in flight as the source stops, slow to complete. */
	env->echo.delay_us = SLOW_US;
	uint64_t in[INFLIGHT];
	int tokens[INFLIGHT];
	uint8_t *src = post_inflight(f, 0xa5, in, tokens);
	assert_int_equal(vqs_vu_frontend_disconnect(f, true), 0);

	/* Stopped: every completion the source made is published and logged. */
	vqs_vu_frontend_log_sync(f, log, sizeof(log));
	unsigned done_by_source = 0;
	for (unsigned i = 0; i < INFLIGHT; i++) {
		if (memcmp(vqs_gmem_host(g, in[i], 64), src, 64) != 0)
			continue;
		done_by_source++;
		assert_true(page_marked(log, in[i]));
	}
	/* The used ring as the driver sees it: one entry for each request the source took (100
	 * before these), none missing, none yet to come. */
	struct vqs_drv_pos pos;
	assert_int_equal(vqs_drv_position(dq, &pos), 0);
	if (!packed)
		assert_int_equal(pos.used_idx, 100 + done_by_source);
	usleep(2000);
	struct vqs_drv_pos later;
	assert_int_equal(vqs_drv_position(dq, &later), 0);
	assert_int_equal(later.used_idx, pos.used_idx);
	assert_int_equal(later.used_wrap, pos.used_wrap);
	if (done_by_source)
		assert_true(page_marked(log, device_written_area(f)));

	/* The destination: another backend and device on the same socket path. The source's
	 * completer counts a request just after completing it: wait (bounded) for the count. */
	uint64_t source_done = 100 + done_by_source;
	for (unsigned i = 0; i < 1000 && atomic_load(&env->echo.completed) != source_done; i++)
		usleep(1000);
	assert_int_equal(atomic_load(&env->echo.completed), source_done);
	vqs_vu_backend_destroy(env->backend);
	struct vu_echo dest;
	vu_echo_init(&dest, 1, env->echo.ops.features);
	struct vqs_vu_backend_opts bo;
	vqs_vu_backend_opts_init(&bo);
	bo.path = env->path;
	bo.sched = env->sched;
	bo.ops = &dest.ops;
	bo.opaque = &dest;
	assert_int_equal(vqs_vu_backend_create(&env->backend, &bo), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);

	reap_inflight(f, in, tokens, src);
	assert_int_equal(vu_echo_roundtrip(f, 0, 100, 64), 0);
	/* Each request served once: by the source before it stopped, or by the destination. */
	assert_int_equal(source_done + atomic_load(&dest.completed), 100 + INFLIGHT + 100);
	assert_int_equal(atomic_load(&dest.completed), INFLIGHT - done_by_source + 100);
	assert_true(async || done_by_source < INFLIGHT); /* async: popped at once, all in flight */
	print_message("%s%s: %u of %u in flight done by the source\n", packed ? "packed" : "split",
		      async ? " async" : "", done_by_source, INFLIGHT);
	stop(env, f);
}

static void test_migrate_ring_state_split(void **state) { migrates(false, false); }
static void test_migrate_ring_state_packed(void **state) { migrates(true, false); }
static void test_migrate_async_inflight_split(void **state) { migrates(false, true); }
static void test_migrate_async_inflight_packed(void **state) { migrates(true, true); }

/* The same backend stopped by GET_VRING_BASE with requests in flight and the inflight region
 * negotiated, then resumed by a setup on the same connection (SET_INFLIGHT_FD with the same
 * region, SET_VRING_BASE with the answer): every request is served exactly once, with its
 * data, whether before the stop or after the resume. */
static void stops_and_resumes(bool packed)
{
	struct vu_env env;
	struct vqs_vu_frontend *f = start(&env, packed);
	assert_true(vqs_vu_frontend_protocol_features(f) & VQS_BIT(VQS_VU_PROTOCOL_F_INFLIGHT_SHMFD));
	env.echo.delay_us = SLOW_US;
	uint64_t in[INFLIGHT];
	int tokens[INFLIGHT];
	uint8_t *src = post_inflight(f, 0x3c, in, tokens);
	assert_int_equal(vqs_vu_frontend_stop(f), 0);
	uint64_t before_resume = atomic_load(&env.echo.completed);
	assert_true(before_resume < INFLIGHT);
	env.echo.delay_us = 0;
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	kick(f);
	reap_inflight(f, in, tokens, src);
	assert_int_equal(atomic_load(&env.echo.completed), INFLIGHT);
	assert_int_equal(vu_echo_roundtrip(f, 0, 50, 64), 0);
	assert_int_equal(atomic_load(&env.echo.completed), INFLIGHT + 50);
	print_message("%s: %llu of %u done before the stop\n", packed ? "packed" : "split",
		      (unsigned long long)before_resume, INFLIGHT);
	stop(&env, f);
}

static void test_stop_resume_with_inflight_split(void **state) { stops_and_resumes(false); }
static void test_stop_resume_with_inflight_packed(void **state) { stops_and_resumes(true); }

/* A destination's frontend announces the migrated guest (SEND_RARP): the device gets the
 * address, once per message, while its queues keep serving. */
static void test_send_rarp_reaches_device_while_running(void **state)
{
	struct vu_env env;
	struct vqs_vu_frontend *f = start(&env, false);
	assert_true(vqs_vu_frontend_protocol_features(f) & VQS_BIT(VQS_VU_PROTOCOL_F_RARP));
	const uint8_t mac[8] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
	for (unsigned i = 1; i <= 3; i++) {
		assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SEND_RARP, mac, sizeof(mac), NULL,
							 0, true, NULL, 0, NULL),
				 0);
		assert_int_equal(atomic_load_explicit(&env.echo.rarps, memory_order_acquire), i);
		assert_memory_equal(env.echo.rarp_mac, mac, VQS_VU_MAC_LEN);
		assert_int_equal(vu_echo_roundtrip(f, 0, 16, 64), 0);
	}
	stop(&env, f);
}

static void without_rarp_hook(struct vqs_vu_device_ops *ops) { ops->send_rarp = NULL; }

/* A device that cannot announce is not offered as one that can: RARP stays unoffered and the
 * message is refused. */
static void test_rarp_offered_only_with_the_hook(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start_with(&env, 1, false, without_rarp_hook), 0);
	struct vqs_vu_frontend *f = connect_to(&env, false);
	assert_false(vqs_vu_frontend_protocol_features(f) & VQS_BIT(VQS_VU_PROTOCOL_F_RARP));
	const uint8_t mac[8] = { 0x52, 0x54, 0x00, 0xab, 0xcd, 0xef };
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SEND_RARP, mac, sizeof(mac), NULL, 0,
						 true, NULL, 0, NULL),
			 -EPROTO);
	assert_int_equal(atomic_load(&env.echo.rarps), 0);
	stop(&env, f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_marks_written_pages_split),
		cmocka_unit_test(test_log_marks_written_pages_packed),
		cmocka_unit_test(test_log_unmarked_accepts_and_marks_nothing),
		cmocka_unit_test(test_log_fd_signalled_after_marks),
		cmocka_unit_test(test_log_switched_under_traffic),
		cmocka_unit_test(test_migrate_ring_state_split),
		cmocka_unit_test(test_migrate_ring_state_packed),
		cmocka_unit_test(test_migrate_async_inflight_split),
		cmocka_unit_test(test_migrate_async_inflight_packed),
		cmocka_unit_test(test_stop_resume_with_inflight_split),
		cmocka_unit_test(test_stop_resume_with_inflight_packed),
		cmocka_unit_test(test_send_rarp_reaches_device_while_running),
		cmocka_unit_test(test_rarp_offered_only_with_the_hook),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
