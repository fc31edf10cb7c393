/* SPDX-License-Identifier: MIT */
/*
 * The backend dies by SIGKILL at chosen points of its completion path (issue 6, "Faults"): just
 * after popping a batch, after staging half of it as used but before the flush, and after
 * flushing, with the driver's interrupts off so the calls are still owed. The device runs in a
 * child that kills itself there; the test restarts it, reconnects with the same inflight region
 * and keeps going. Every request must complete exactly once, with its own data.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "robust_dev.h"
#include "scale.h"

static pid_t spawn(const char *path, const char *kill_at, uint64_t after)
{
	char n[24];
	snprintf(n, sizeof(n), "%llu", (unsigned long long)after);
	pid_t pid = fork();
	if (pid == 0) {
		execl(ROBUST_CHILD, "robust_child", path, kill_at, n, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void run(const char *kill_at, unsigned kills)
{
	char path[108];
	snprintf(path, sizeof(path), "/tmp/vqs-robust-kill-%d.sock", (int)getpid());
	unlink(path);
	uint64_t total = vqs_test_scaled(3000) < 600 ? 600 : vqs_test_scaled(3000);
	uint64_t step = total / (kills + 1);
	pid_t child = spawn(path, kill_at, step);
	assert_true(child > 0);
	struct vqs_vu_frontend *f;
	assert_int_equal(robust_frontend(&f, path, 1), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	struct robust_traffic t;
	assert_int_equal(robust_traffic_init(&t, f, 0, total), 0);
	bool quiet = !strcmp(kill_at, "flush");
	if (quiet)
		vqs_drv_disable_cb(vqs_vu_frontend_vq(f, 0));
	unsigned died = 0;
	uint64_t deadline = vqs_now_ns() + 120ull * 1000000000u;
	while (t.completed < t.total && vqs_now_ns() < deadline) {
		robust_traffic_submit(&t);
		if (quiet) {
			robust_traffic_reap(&t, 0);
			usleep(200);
		} else {
			robust_traffic_reap(&t, 5);
		}
		int status;
		if (waitpid(child, &status, WNOHANG) != child)
			continue;
		assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
		died++;
		/* The next incarnation dies again a step later, the last one lives. */
		child = spawn(path, died < kills ? kill_at : "never", step);
		assert_true(child > 0);
		vqs_vu_frontend_disconnect(f, false);
		assert_int_equal(vqs_vu_frontend_connect(f), 0);
		assert_int_equal(vqs_vu_frontend_setup(f), 0);
		if (quiet)
			vqs_drv_disable_cb(vqs_vu_frontend_vq(f, 0));
		uint64_t one = 1;
		assert_int_equal(write(vqs_vu_frontend_kick_fd(f, 0), &one, 8), 8);
	}
	usleep(100000); /* a late duplicate would show now */
	robust_traffic_reap(&t, 0);
	print_message("kill after %s: %u deaths, %llu requests, %u duplicates, %u wrong\n", kill_at,
		      died, (unsigned long long)t.completed, t.dups, t.wrong);
	assert_int_equal(died, kills);
	assert_true(robust_traffic_exact(&t));
	robust_traffic_fini(&t);
	vqs_vu_frontend_destroy(f);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unlink(path);
}

static void test_sigkill_after_pop_every_request_once(void **state) { run("pop", 3); }
static void test_sigkill_after_fill_before_flush_every_request_once(void **state) { run("fill", 3); }
static void test_sigkill_after_flush_before_call_every_request_once(void **state) { run("flush", 3); }

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sigkill_after_pop_every_request_once),
		cmocka_unit_test(test_sigkill_after_fill_before_flush_every_request_once),
		cmocka_unit_test(test_sigkill_after_flush_before_call_every_request_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
