/* SPDX-License-Identifier: MIT */
/*
 * Device reset (issue 20): RESET_DEVICE (protocol feature RESET_DEVICE), SET_STATUS 0 and the
 * older RESET_OWNER stop the queues while requests are in flight, drop every ring, the dirty log
 * and the inflight region (the process's fds and memfd mappings are back where they were before
 * the handshake, but for the guest memory table, which QEMU 7.2 does not send again after
 * SET_STATUS 0 when it added its regions with ADD_MEM_REG), and leave the connection ready for a
 * new negotiation that serves requests again.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc_count.h"
#include "vu_fixture.h"

static struct vu_env env;

static int group_setup(void **state) { return vu_env_start(&env, 2, false); }

static int group_teardown(void **state)
{
	vu_env_stop(&env);
	return 0;
}

/* Wait (bounded) until the backend counted `n` queue stops. */
static bool wait_stops(uint64_t n)
{
	for (int i = 0; i < 400; i++) {
		struct vqs_vu_backend_stats s;
		vqs_vu_backend_stats(env.backend, &s);
		if (s.queue_stops >= n)
			return true;
		usleep(5000);
	}
	return false;
}

#define CAUGHT 16

/* The CAUGHT requests each queue had in flight at the reset all come back (some completed
 * before it, the rest after the new negotiation), each once. */
static void drain_caught(struct vqs_vu_frontend *f)
{
	for (unsigned q = 0; q < 2; q++) {
		struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, q);
		unsigned got = 0;
		for (int i = 0; i < 400 && got < CAUGHT; i++) {
			uint32_t len;
			if (vqs_drv_get_used(dq, &len)) {
				got++;
				assert_int_equal(len, 64);
				i = 0;
				continue;
			}
			usleep(5000);
		}
		assert_int_equal(got, CAUGHT);
		uint32_t len;
		assert_null(vqs_drv_get_used(dq, &len));
	}
}

static void resets_with(uint32_t request, uint64_t value, uint32_t len)
{
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(&env, &o);
	o.num_queues = 2;
	/* The frontend keeps the inflight fd for its life: leave it out so that the counts
	 * compare the backend's holdings alone. */
	o.protocol_features &= ~VQS_BIT(VQS_VU_PROTOCOL_F_INFLIGHT_SHMFD);
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	/* Accepted on the backend side before the baseline. */
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_FEATURES, NULL, 0, NULL, 0, false,
						 &(uint64_t){ 0 }, 8, NULL), 8);
	unsigned fds0 = vqs_test_count_fds(), maps0 = vqs_test_count_maps(true);
	struct vqs_vu_backend_stats s0;
	vqs_vu_backend_stats(env.backend, &s0);

	for (int round = 0; round < 3; round++) {
		assert_int_equal(vqs_vu_frontend_setup(f), 0);
		if (round)
			drain_caught(f);
		assert_int_equal(vu_echo_roundtrip(f, 0, 20, 64), 0);
		assert_int_equal(vqs_vu_frontend_set_log(f, true), 0);
		assert_int_equal(vu_echo_roundtrip(f, 0, 20, 64), 0);
		assert_int_equal(vu_echo_roundtrip(f, 1, 20, 64), 0);
		/* Requests in flight on both queues as the reset arrives. */
		env.echo.delay_us = 200;
		assert_int_equal(vu_echo_submit(f, 0, CAUGHT, 64), 0);
		assert_int_equal(vu_echo_submit(f, 1, CAUGHT, 64), 0);
		int r = vqs_vu_frontend_request(f, request, &value, len, NULL, 0, true, NULL, 0,
						NULL);
		env.echo.delay_us = 0;
		assert_int_equal(r, 0);
		/* Both queues stopped, once each per round. */
		assert_true(wait_stops(s0.queue_stops + 2 * (round + 1)));
		assert_int_equal(vqs_vu_backend_features(env.backend), 0);
		/* QEMU 7.2 stops a device with SET_STATUS 0, then asks each ring's position, which
		 * it migrates: the reset keeps it, where the driver ring shows it. */
		for (unsigned q = 0; q < 2; q++) {
			struct vqs_vu_vring_state st = { q, 0 }, rep;
			struct vqs_drv_pos pos;
			assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_VRING_BASE, &st,
								 sizeof(st), NULL, 0, false, &rep,
								 sizeof(rep), NULL),
					 sizeof(rep));
			assert_int_equal(vqs_drv_position(vqs_vu_frontend_vq(f, q), &pos), 0);
			assert_int_equal(rep.num, pos.used_idx);
			assert_true(rep.num > 0);
		}
		/* Nothing of the session left in the backend but its map of guest memory (one
		 * mapping, its fd closed once mapped): fds and mappings are back. The frontend's own
		 * dirty log (one fd, one mapping) stays with the frontend. */
		assert_int_equal(vu_wait_fds(fds0 + (round ? 0 : 1)), fds0 + (round ? 0 : 1));
		assert_int_equal(vqs_test_count_maps(true), maps0 + 1 + (round ? 0 : 1));
		if (round == 0) {
			fds0++;
			maps0++;
		}
	}
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	drain_caught(f);
	assert_int_equal(vu_echo_roundtrip(f, 0, 20, 64), 0);
	struct vqs_vu_backend_stats s;
	vqs_vu_backend_stats(env.backend, &s);
	assert_int_equal(s.disconnects, s0.disconnects);
	vqs_vu_frontend_destroy(f);
	assert_true(vu_env_wait_disconnects(&env, s0.disconnects + 1));
}

static void test_reset_device_under_traffic(void **state)
{
	resets_with(VQS_VU_RESET_DEVICE, 0, 0);
}

/* virtio 2.1: writing 0 to the status resets the device. */
static void test_set_status_zero_resets_under_traffic(void **state)
{
	resets_with(VQS_VU_SET_STATUS, 0, 8);
}

static void test_reset_owner_resets_under_traffic(void **state)
{
	resets_with(VQS_VU_RESET_OWNER, 0, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reset_device_under_traffic),
		cmocka_unit_test(test_set_status_zero_resets_under_traffic),
		cmocka_unit_test(test_reset_owner_resets_under_traffic),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
