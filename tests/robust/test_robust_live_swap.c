/* SPDX-License-Identifier: MIT */
/*
 * Control changes under load (issue 6, "Faults"): while a traffic thread keeps requests flowing,
 * the frontend replaces the memory table, adds and removes regions (ADD/REM_MEM_REG and
 * SET_MEM_TABLE with an extra region), and replaces the kick and call eventfds (the backend
 * closes the old ones while a worker may be using them), or drops the call fd for a while.
 * Every change must be acknowledged, nothing may crash, and every request must complete exactly
 * once with its own data.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "robust_dev.h"
#include "scale.h"

#define EXTRA_GPA 0x40000000ull
#define EXTRA_SIZE (64u << 10)

struct load {
	struct robust_traffic t;
	atomic_bool stop;
};

static void *traffic(void *arg)
{
	struct load *l = arg;
	uint64_t deadline = vqs_now_ns() + 120ull * 1000000000u;
	while (l->t.completed < l->t.total && vqs_now_ns() < deadline) {
		if (!atomic_load(&l->stop))
			robust_traffic_submit(&l->t);
		else if (l->t.completed == l->t.submitted)
			break;
		robust_traffic_reap(&l->t, 5);
	}
	return NULL;
}

static void ack(struct vqs_vu_frontend *f, uint32_t req, const void *p, uint32_t len,
		const int *fds, unsigned nfds, const char *what)
{
	int r = vqs_vu_frontend_request(f, req, p, len, fds, nfds, true, NULL, 0, NULL);
	if (r != 0)
		fail_msg("%s: %d", what, r);
}

static struct vqs_vu_mem_region main_region(struct vqs_vu_frontend *f)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	return (struct vqs_vu_mem_region){ vqs_gmem_base(g), vqs_gmem_size(g),
					   (uint64_t)(uintptr_t)vqs_gmem_host(g, vqs_gmem_base(g), 1),
					   0 };
}

static void test_memory_and_eventfds_replaced_under_load_nothing_lost(void **state)
{
	char path[108];
	snprintf(path, sizeof(path), "/tmp/vqs-robust-swap-%d.sock", (int)getpid());
	static struct robust_dev dev;
	robust_dev_init(&dev, 1);
	struct robust_backend rb;
	assert_int_equal(robust_backend_start(&rb, &dev, path, 1000), 0);
	struct vqs_vu_frontend *f;
	assert_int_equal(robust_frontend(&f, path, 1), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);

	/* An extra region the guest does not use for traffic, mapped here for a real uaddr. */
	int xfd = memfd_create("robust-extra", MFD_CLOEXEC);
	assert_true(xfd >= 0);
	assert_int_equal(ftruncate(xfd, EXTRA_SIZE), 0);
	void *xmap = mmap(NULL, EXTRA_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, xfd, 0);
	assert_true(xmap != MAP_FAILED);
	struct vqs_vu_mem_region extra = { EXTRA_GPA, EXTRA_SIZE, (uint64_t)(uintptr_t)xmap, 0 };
	int gfd = vqs_gmem_fd(vqs_vu_frontend_gmem(f));
	int other_call = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(other_call >= 0);

	static struct load l;
	assert_int_equal(robust_traffic_init(&l.t, f, 0, vqs_test_scaled(200000)), 0);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, traffic, &l), 0);
	unsigned rounds = (unsigned)vqs_test_scaled(200);
	for (unsigned i = 0; i < rounds; i++) {
		struct vqs_vu_memory one = { .nregions = 1, .regions = { main_region(f) } };
		struct vqs_vu_memory two = { .nregions = 2, .regions = { main_region(f), extra } };
		struct vqs_vu_mem_reg reg = { .region = extra };
		int both[2] = { gfd, xfd };
		uint64_t q0 = 0, nofd = VQS_VU_VRING_NOFD_MASK;
		int call = vqs_vu_frontend_call_fd(f, 0), kick = vqs_vu_frontend_kick_fd(f, 0);
		switch (i % 5) {
		case 0:
			ack(f, VQS_VU_SET_MEM_TABLE, &one, 8 + 32, &gfd, 1, "SET_MEM_TABLE same");
			break;
		case 1:
			ack(f, VQS_VU_ADD_MEM_REG, &reg, sizeof(reg), &xfd, 1, "ADD_MEM_REG");
			ack(f, VQS_VU_REM_MEM_REG, &reg, sizeof(reg), NULL, 0, "REM_MEM_REG");
			break;
		case 2:
			ack(f, VQS_VU_SET_MEM_TABLE, &two, 8 + 64, both, 2, "SET_MEM_TABLE +extra");
			ack(f, VQS_VU_SET_MEM_TABLE, &one, 8 + 32, &gfd, 1, "SET_MEM_TABLE -extra");
			break;
		case 3:
			ack(f, VQS_VU_SET_VRING_CALL, &q0, 8, &other_call, 1, "CALL other");
			usleep(500);
			ack(f, VQS_VU_SET_VRING_CALL, &nofd, 8, NULL, 0, "CALL none");
			usleep(500);
			ack(f, VQS_VU_SET_VRING_CALL, &q0, 8, &call, 1, "CALL back");
			break;
		case 4:
			/* The same eventfd under a new descriptor: the old one is closed under load. */
			ack(f, VQS_VU_SET_VRING_KICK, &q0, 8, &kick, 1, "KICK replaced");
			break;
		}
		usleep(1000);
	}
	atomic_store(&l.stop, true);
	pthread_join(th, NULL);
	struct vqs_vu_backend_stats st;
	vqs_vu_backend_stats(rb.b, &st);
	print_message("%u control changes under %llu requests; %llu refused messages\n", rounds,
		      (unsigned long long)l.t.completed, (unsigned long long)st.bad_messages);
	assert_int_equal(st.bad_messages, 0);
	/* Traffic stopped early (the deadline is generous): count only what was submitted. */
	l.t.total = l.t.submitted;
	assert_true(robust_traffic_exact(&l.t));
	robust_traffic_fini(&l.t);
	vqs_vu_frontend_destroy(f);
	robust_backend_stop(&rb);
	munmap(xmap, EXTRA_SIZE);
	close(xfd);
	close(other_call);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_and_eventfds_replaced_under_load_nothing_lost),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
