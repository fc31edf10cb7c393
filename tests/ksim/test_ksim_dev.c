/* SPDX-License-Identifier: MIT */
/* The modelled vhost device: work list semantics, kicks, worker operations, fork modes. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>
#include "scale.h"
#include "skip.h"

#define WAIT_LIMIT_NS 5000000000ull

struct counter {
	struct vqs_ksim_work work;
	atomic_uint runs;
	atomic_int tid;
	struct vqs_ksim_dev *dev;
	unsigned requeue; /* requeue itself this many times from inside fn */
};

static void count_fn(struct vqs_ksim_work *w)
{
	struct counter *c = w->opaque;
	atomic_store(&c->tid, (int)syscall(SYS_gettid));
	atomic_fetch_add(&c->runs, 1);
	if (c->requeue) {
		c->requeue--;
		vqs_ksim_vq_work_queue(c->dev, 0, w);
	}
}

static void counter_init(struct counter *c, struct vqs_ksim_dev *d)
{
	memset(c, 0, sizeof(*c));
	c->dev = d;
	vqs_ksim_work_init(&c->work, count_fn, c);
}

/* Bounded wait for runs >= n. */
static bool wait_runs(struct counter *c, unsigned n)
{
	uint64_t end = vqs_now_ns() + WAIT_LIMIT_NS;
	while (atomic_load(&c->runs) < n) {
		if (vqs_now_ns() > end)
			return false;
		sched_yield();
	}
	return true;
}

struct gate {
	struct vqs_ksim_work work;
	atomic_int entered;
	atomic_int open;
};

static void gate_fn(struct vqs_ksim_work *w)
{
	struct gate *g = w->opaque;
	atomic_store(&g->entered, 1);
	uint64_t end = vqs_now_ns() + WAIT_LIMIT_NS;
	while (!atomic_load(&g->open) && vqs_now_ns() < end)
		sched_yield();
}

static struct vqs_ksim_dev *dev_new(enum vqs_ksim_fork mode, int *rc)
{
	struct vqs_ksim_dev_opts o;
	vqs_ksim_dev_opts_init(&o);
	o.fork = mode;
	struct vqs_ksim_dev *d = NULL;
	*rc = vqs_ksim_dev_create(&d, &o);
	return d;
}

static void test_work_queued_twice_runs_once(void **state)
{
	int rc;
	struct vqs_ksim_dev *d = dev_new(VQS_KSIM_FORK_KTHREAD, &rc);
	assert_int_equal(rc, 0);
	/* Hold the worker inside another item so both queue calls happen before either run. */
	struct gate g = {0};
	vqs_ksim_work_init(&g.work, gate_fn, &g);
	assert_true(vqs_ksim_vq_work_queue(d, 0, &g.work));
	struct counter c;
	counter_init(&c, d);
	assert_true(vqs_ksim_vq_work_queue(d, 0, &c.work));
	assert_false(vqs_ksim_vq_work_queue(d, 1, &c.work));
	atomic_store(&g.open, 1);
	assert_int_equal(vqs_ksim_dev_flush(d), 0);
	assert_int_equal(atomic_load(&c.runs), 1);
	/* Once run, it can be queued again. */
	assert_true(vqs_ksim_vq_work_queue(d, 0, &c.work));
	vqs_ksim_dev_flush(d);
	assert_int_equal(atomic_load(&c.runs), 2);
	vqs_ksim_dev_destroy(d);
}

static void test_work_requeued_on_budget_from_its_fn_runs_again(void **state)
{
	int rc;
	struct vqs_ksim_dev *d = dev_new(VQS_KSIM_FORK_KTHREAD, &rc);
	assert_int_equal(rc, 0);
	struct counter c;
	counter_init(&c, d);
	c.requeue = 3; /* what a handler does when it exceeds its weight */
	assert_true(vqs_ksim_vq_work_queue(d, 0, &c.work));
	assert_true(wait_runs(&c, 4));
	vqs_ksim_dev_flush(d);
	assert_int_equal(atomic_load(&c.runs), 4);
	vqs_ksim_dev_destroy(d);
}

static void test_kick_racing_sleep_is_never_missed(void **state)
{
	int rc;
	struct vqs_ksim_dev *d = dev_new(VQS_KSIM_FORK_KTHREAD, &rc);
	assert_int_equal(rc, 0);
	int kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(kick >= 0);
	struct counter c;
	counter_init(&c, d);
	assert_int_equal(vqs_ksim_poll_start(d, 0, kick, &c.work), 0);
	struct counter q;
	counter_init(&q, d);
	unsigned long n = vqs_test_scaled(20000);
	for (unsigned long i = 0; i < n; i++) {
		/* Varying delays put the kick and the direct queue at every point of the worker's
		 * way to sleep. */
		for (volatile unsigned spin = 0; spin < (i * 37) % 2000; spin++)
			;
		uint64_t one = 1;
		assert_int_equal(write(kick, &one, sizeof(one)), (int)sizeof(one));
		assert_true(wait_runs(&c, (unsigned)i + 1));
		vqs_ksim_vq_work_queue(d, 1, &q.work);
		assert_true(wait_runs(&q, (unsigned)i + 1));
	}
	vqs_ksim_poll_stop(d, 0);
	vqs_ksim_dev_destroy(d);
	close(kick);
}

static void test_worker_new_attach_get_free(void **state)
{
	int rc;
	struct vqs_ksim_dev *d = dev_new(VQS_KSIM_FORK_KTHREAD, &rc);
	assert_int_equal(rc, 0);
	unsigned id = 99, got = 99;
	assert_int_equal(vqs_ksim_vring_get_worker(d, 1, &got), 0);
	assert_int_equal(got, 0);
	assert_int_equal(vqs_ksim_worker_new(d, &id), 0);
	assert_int_not_equal(id, 0);
	assert_int_equal(vqs_ksim_vring_attach_worker(d, 1, id), 0);
	assert_int_equal(vqs_ksim_vring_get_worker(d, 1, &got), 0);
	assert_int_equal(got, id);
	assert_int_equal(vqs_ksim_worker_free(d, id), -EBUSY);
	assert_int_equal(vqs_ksim_vring_attach_worker(d, 1, 42), -ENOENT);

	/* Work of vq 1 runs on the new worker's thread, vq 0's on worker 0's. */
	int kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct counter c1, c0;
	counter_init(&c1, d);
	counter_init(&c0, d);
	assert_int_equal(vqs_ksim_poll_start(d, 1, kick, &c1.work), 0);
	uint64_t one = 1;
	assert_int_equal(write(kick, &one, sizeof(one)), (int)sizeof(one));
	assert_true(wait_runs(&c1, 1));
	assert_int_equal(atomic_load(&c1.tid), vqs_ksim_worker_tid(d, id));
	vqs_ksim_vq_work_queue(d, 0, &c0.work);
	assert_true(wait_runs(&c0, 1));
	assert_int_equal(atomic_load(&c0.tid), vqs_ksim_worker_tid(d, 0));

	/* The poll follows the vq back to worker 0. */
	assert_int_equal(vqs_ksim_vring_attach_worker(d, 1, 0), 0);
	assert_int_equal(write(kick, &one, sizeof(one)), (int)sizeof(one));
	assert_true(wait_runs(&c1, 2));
	assert_int_equal(atomic_load(&c1.tid), vqs_ksim_worker_tid(d, 0));
	assert_int_equal(vqs_ksim_worker_free(d, id), 0);
	assert_int_equal(vqs_ksim_worker_free(d, id), -ENOENT);
	vqs_ksim_dev_destroy(d);
	close(kick);
}

struct owner_args {
	enum vqs_ksim_fork mode;
	int cpu;
	int rc;
	cpu_set_t worker_cpus;
	cpu_set_t new_worker_cpus;
};

/* An owner thread pinned to one CPU creates the device, as QEMU's pinned main thread would. */
static void *pinned_owner(void *p)
{
	struct owner_args *a = p;
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(a->cpu, &one);
	a->rc = -pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
	if (a->rc)
		return NULL;
	struct vqs_ksim_dev *d = dev_new(a->mode, &a->rc);
	if (a->rc)
		return NULL;
	unsigned id;
	a->rc = vqs_ksim_worker_cpus(d, 0, &a->worker_cpus);
	if (!a->rc)
		a->rc = vqs_ksim_worker_new(d, &id);
	if (!a->rc)
		a->rc = vqs_ksim_worker_cpus(d, id, &a->new_worker_cpus);
	vqs_ksim_dev_destroy(d);
	return NULL;
}

static void run_owner(struct owner_args *a)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, pinned_owner, a), 0);
	pthread_join(t, NULL);
	assert_int_equal(a->rc, 0);
}

static void test_task_mode_worker_carries_owner_cpu_mask(void **state)
{
	cpu_set_t mine;
	assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
	int last = -1;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &mine))
			last = i;
	struct owner_args a = {.mode = VQS_KSIM_FORK_TASK, .cpu = last};
	run_owner(&a);
	assert_int_equal(CPU_COUNT(&a.worker_cpus), 1);
	assert_true(CPU_ISSET(last, &a.worker_cpus));
	assert_int_equal(CPU_COUNT(&a.new_worker_cpus), 1);
	assert_true(CPU_ISSET(last, &a.new_worker_cpus));
}

static void test_kthread_mode_worker_ignores_owner_cpu_mask(void **state)
{
	cpu_set_t mine;
	assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
	if (CPU_COUNT(&mine) < 2)
		vqs_test_skip();
	struct owner_args a = {.mode = VQS_KSIM_FORK_KTHREAD, .cpu = 0};
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (CPU_ISSET(i, &mine)) {
			a.cpu = i;
			break;
		}
	run_owner(&a);
	assert_true(CPU_COUNT(&a.worker_cpus) >= 2);
	assert_true(CPU_EQUAL(&a.worker_cpus, &a.new_worker_cpus));
}

/* In a child: lower RLIMIT_NPROC to 1 (the user already runs at least this process), then
 * create a device. */
static int child_nproc(enum vqs_ksim_fork mode)
{
	struct rlimit rl = {.rlim_cur = 1, .rlim_max = 1};
	if (setrlimit(RLIMIT_NPROC, &rl))
		return 3;
	int rc;
	struct vqs_ksim_dev *d = dev_new(mode, &rc);
	if (d)
		vqs_ksim_dev_destroy(d);
	return rc == -EAGAIN ? 10 : rc == 0 ? 11 : 12;
}

static int run_child(enum vqs_ksim_fork mode)
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(child_nproc(mode));
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static void test_task_mode_worker_counts_against_rlimit_nproc(void **state)
{
	assert_int_equal(run_child(VQS_KSIM_FORK_TASK), 10); /* -EAGAIN */
}

static void test_kthread_mode_worker_ignores_rlimit_nproc(void **state)
{
	/* Only root may create threads past its own limit for real (the kernel enforces it on
	 * every clone otherwise), so the model's exemption is observable only as root. */
	if (getuid() != 0)
		vqs_test_skip();
	assert_int_equal(run_child(VQS_KSIM_FORK_KTHREAD), 11); /* created */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_work_queued_twice_runs_once),
		cmocka_unit_test(test_work_requeued_on_budget_from_its_fn_runs_again),
		cmocka_unit_test(test_kick_racing_sleep_is_never_missed),
		cmocka_unit_test(test_worker_new_attach_get_free),
		cmocka_unit_test(test_task_mode_worker_carries_owner_cpu_mask),
		cmocka_unit_test(test_kthread_mode_worker_ignores_owner_cpu_mask),
		cmocka_unit_test(test_task_mode_worker_counts_against_rlimit_nproc),
		cmocka_unit_test(test_kthread_mode_worker_ignores_rlimit_nproc),
	};
	return vqs_test_status(cmocka_run_group_tests(tests, NULL, NULL));
}
