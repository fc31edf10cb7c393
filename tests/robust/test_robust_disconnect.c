/* SPDX-License-Identifier: MIT */
/*
 * Frontends that vanish (issue 6, "Faults"): over and over, a frontend goes away mid-message
 * (with and without fds in flight), stalls mid-message, leaves mid-handshake, or drops the
 * connection while requests are in flight. Each time the backend must return to listening and
 * serve the next frontend, with the process's fds, threads and guest-memory mappings back to
 * their baseline (all mappings too, in builds without a sanitizer's own mappings).
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc_count.h"
#include "robust_dev.h"
#include "scale.h"

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define SANITIZED 1
#endif
#endif

#define CYCLES 40
#define MSG_TIMEOUT_MS 100

enum cycle { MID_MESSAGE, MID_MESSAGE_FDS, STALL_MID_MESSAGE, MID_HANDSHAKE, MID_STREAM, NCYCLE };
static const char *const cycle_name[] = { "mid-message", "mid-message with fds",
					  "stalled mid-message", "mid-handshake", "mid-stream" };

struct snap {
	unsigned fds, threads, maps, memfd_maps;
};

static struct snap snap(void)
{
	return (struct snap){ vqs_test_count_fds(), vqs_test_count_threads(), vqs_test_count_maps(false),
			      vqs_test_count_maps(true) };
}

/* Wait (bounded) until the process is back to `base`; the backend cleans up on its own thread. */
static bool back_to(const struct snap *base, struct snap *now)
{
	for (int i = 0; i < 500; i++) {
		*now = snap();
		bool maps_ok = now->memfd_maps == base->memfd_maps;
#ifndef SANITIZED
		maps_ok = maps_ok && now->maps == base->maps;
#endif
		if (now->fds == base->fds && now->threads == base->threads && maps_ok)
			return true;
		usleep(10000);
	}
	return false;
}

static bool wait_disconnects(struct robust_backend *rb, uint64_t n)
{
	struct vqs_vu_backend_stats st;
	for (int i = 0; i < 500; i++) {
		vqs_vu_backend_stats(rb->b, &st);
		if (st.disconnects >= n)
			return true;
		usleep(10000);
	}
	return false;
}

static void one_cycle(const char *path, enum cycle c)
{
	struct vqs_vu_frontend *f;
	assert_int_equal(robust_frontend(&f, path, 1), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	if (c == MID_MESSAGE || c == MID_MESSAGE_FDS || c == STALL_MID_MESSAGE) {
		/* SET_MEM_TABLE declaring one region (40 bytes), cut after 20. */
		uint8_t buf[12 + 20] = { 0 };
		struct vqs_vu_hdr h = { VQS_VU_SET_MEM_TABLE, VQS_VU_VERSION, 40 };
		memcpy(buf, &h, sizeof(h));
		buf[12] = 1;
		int fd = memfd_create("robust-region", MFD_CLOEXEC);
		assert_true(fd >= 0);
		assert_int_equal(vqs_vu_frontend_send_raw(f, buf, sizeof(buf), &fd,
							  c == MID_MESSAGE_FDS ? 1 : 0), 0);
		close(fd);
		if (c == STALL_MID_MESSAGE)
			usleep(2 * MSG_TIMEOUT_MS * 1000); /* the backend gives up on its own */
	} else {
		assert_int_equal(c == MID_HANDSHAKE ? vqs_vu_frontend_negotiate(f)
						    : vqs_vu_frontend_setup(f), 0);
	}
	if (c == MID_STREAM) {
		struct robust_traffic t;
		assert_int_equal(robust_traffic_init(&t, f, 0, 1000), 0);
		robust_traffic_submit(&t);
		robust_traffic_reap(&t, 0);
		robust_traffic_submit(&t); /* and leave with these in flight */
		robust_traffic_fini(&t);
	}
	vqs_vu_frontend_destroy(f);
}

static void test_frontend_vanishes_repeatedly_backend_listens_no_growth(void **state)
{
	char path[108];
	snprintf(path, sizeof(path), "/tmp/vqs-robust-disc-%d.sock", (int)getpid());
	static struct robust_dev dev;
	robust_dev_init(&dev, 1);
	struct robust_backend rb;
	assert_int_equal(robust_backend_start(&rb, &dev, path, MSG_TIMEOUT_MS), 0);

	/* Warm-up: one whole session, so lazily created helpers (liburcu's threads) exist. */
	one_cycle(path, MID_STREAM);
	assert_true(wait_disconnects(&rb, 1));
	usleep(50000);
	struct snap base = snap(), now;
	unsigned cycles = (unsigned)vqs_test_scaled(CYCLES);
	if (cycles < 20)
		cycles = 20; /* the minimum, in every build */
	for (unsigned i = 0; i < cycles; i++) {
		enum cycle c = (enum cycle)(i % NCYCLE);
		one_cycle(path, c);
		if (!wait_disconnects(&rb, 2 + i))
			fail_msg("cycle %u (%s): the backend did not drop the connection", i,
				 cycle_name[c]);
		if (!back_to(&base, &now))
			fail_msg("cycle %u (%s): fds %u->%u threads %u->%u maps %u->%u memfd maps "
				 "%u->%u", i, cycle_name[c], base.fds, now.fds, base.threads,
				 now.threads, base.maps, now.maps, base.memfd_maps, now.memfd_maps);
	}
	/* Still serving: a well-behaved frontend gets every request done. */
	struct vqs_vu_frontend *f;
	struct robust_traffic t;
	assert_int_equal(robust_frontend(&f, path, 1), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(robust_traffic_init(&t, f, 0, 500), 0);
	uint64_t deadline = vqs_now_ns() + 20ull * 1000000000u;
	while (t.completed < t.total && vqs_now_ns() < deadline) {
		robust_traffic_submit(&t);
		robust_traffic_reap(&t, 10);
	}
	assert_true(robust_traffic_exact(&t));
	robust_traffic_fini(&t);
	vqs_vu_frontend_destroy(f);
	robust_backend_stop(&rb);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frontend_vanishes_repeatedly_backend_listens_no_growth),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
