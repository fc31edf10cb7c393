/* SPDX-License-Identifier: MIT */
/*
 * Idle cost: after a burst of traffic stops, dedicated, pool and adaptive workers must sleep
 * (no wakeups, no polls, almost no CPU time), and busy-poll workers must go to sleep once their
 * timeout passed; with timeout 0 they keep polling. Measured with the workers' thread CPU time
 * (vqs_worker_stats, cross-checked against /proc/self/task/TID/stat) and their poll counters.
 * Built twice: test_sched_idle_no_pwait2 runs the same cases with epoll_pwait2 answering ENOSYS
 * (a seccomp filter, as a kernel before 5.11, a sandbox or valgrind would), where a worker that
 * took the error for an event never slept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <cmocka.h>
#ifdef VQS_TEST_NO_PWAIT2
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#endif

#include "scale.h"
#include "traffic.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define SETTLE_MS 50   /* far beyond every poll timeout used here */
#define WINDOW_MS 300
/* "Almost no CPU": a sleeping thread uses none; allow a scheduler tick of accounting noise. */
#define IDLE_CPU_NS 5000000ull

struct snap {
	struct vqs_worker_stats w[8];
	uint64_t proc_cpu[8];
	unsigned n;
};

static void take(struct vqs_sched *s, struct snap *sn)
{
	sn->n = vqs_sched_nworkers(s);
	assert_true(sn->n <= 8);
	for (unsigned i = 0; i < sn->n; i++) {
		sn->w[i].size = sizeof(sn->w[i]);
		assert_int_equal(vqs_worker_stats_get(s, i, &sn->w[i]), 0);
		sn->proc_cpu[i] = thread_cpu_ns(vqs_sched_worker_tid(s, i));
	}
}

/* Run a burst, stop, settle; return whether the workers stayed asleep over the window. */
static void idle_after_burst(enum vqs_policy p, uint32_t poll_timeout_us, bool expect_sleep)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = p;
	so.nworkers = 2;
	so.poll_timeout_us = poll_timeout_us;
	struct vqs_sched *s;
	assert_int_equal(vqs_sched_create(&s, &so), 0);
	struct traffic_cfg cfg = {.nqueues = 2,
				  .total = vqs_test_scaled(50000),
				  .num = 128,
				  .features = FEATURES,
				  .mode = TRAFFIC_MIXED,
				  .delays = true,
				  .group = -1};
	static struct traffic t;
	assert_int_equal(traffic_init(&t, s, &cfg), 0);
	traffic_start(&t);
	assert_int_equal(traffic_join(&t), 0);
	sleep_ms(SETTLE_MS);
	struct snap a, b;
	take(s, &a);
	sleep_ms(WINDOW_MS);
	take(s, &b);
	assert_int_equal(a.n, b.n);
	for (unsigned i = 0; i < a.n; i++) {
		uint64_t cpu = b.w[i].cpu_ns - a.w[i].cpu_ns;
		uint64_t polls = b.w[i].polls - a.w[i].polls;
		uint64_t wakeups = b.w[i].wakeups - a.w[i].wakeups;
		printf("%s timeout %uus: worker %u idle window: cpu %llu ns (/proc: %llu ns), polls %llu, "
		       "wakeups %llu\n",
		       vqs_policy_name(p), poll_timeout_us, i, (unsigned long long)cpu,
		       (unsigned long long)(b.proc_cpu[i] - a.proc_cpu[i]),
		       (unsigned long long)polls, (unsigned long long)wakeups);
		if (expect_sleep) {
			assert_int_equal(polls, 0);
			assert_int_equal(wakeups, 0);
			assert_true(cpu < IDLE_CPU_NS);
			assert_true(b.proc_cpu[i] - a.proc_cpu[i] <= IDLE_CPU_NS * 2);
		}
	}
	if (!expect_sleep) {
		uint64_t polls = 0;
		for (unsigned i = 0; i < a.n; i++)
			polls += b.w[i].polls - a.w[i].polls;
		assert_true(polls > 0); /* still spinning over the idle rings */
	}
	traffic_fini(&t);
	vqs_sched_destroy(s);
}

static void test_idle_dedicated_workers_sleep(void **state)
{
	idle_after_burst(VQS_POLICY_DEDICATED, 0, true);
}

static void test_idle_pool_workers_sleep(void **state) { idle_after_burst(VQS_POLICY_POOL, 0, true); }

static void test_idle_adaptive_workers_sleep(void **state)
{
	idle_after_burst(VQS_POLICY_ADAPTIVE, 0, true);
}

static void test_idle_poll_sleeps_after_timeout(void **state)
{
	idle_after_burst(VQS_POLICY_POLL, 100, true);
}

static void test_idle_poll_timeout_zero_keeps_polling(void **state)
{
	idle_after_burst(VQS_POLICY_POLL, 0, false);
}

#ifdef VQS_TEST_NO_PWAIT2
/* This thread, and the threads it creates (the workers), get ENOSYS from epoll_pwait2. */
static void deny_pwait2(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_epoll_pwait2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		exit(77);
	}
}
#endif

int main(void)
{
#ifdef VQS_TEST_NO_PWAIT2
	deny_pwait2();
#endif
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_idle_dedicated_workers_sleep),
		cmocka_unit_test(test_idle_pool_workers_sleep),
		cmocka_unit_test(test_idle_adaptive_workers_sleep),
		cmocka_unit_test(test_idle_poll_sleeps_after_timeout),
		cmocka_unit_test(test_idle_poll_timeout_zero_keeps_polling),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
