/* SPDX-License-Identifier: MIT */
/*
 * Driver and device on two threads through one 256-entry split ring with EVENT_IDX (once more with
 * IN_ORDER), waking each other with real eventfds (kick: driver -> device, call: device ->
 * driver). Each side sleeps in poll() when it has nothing to do, after re-enabling notifications
 * and re-checking the ring (the race where the peer published just before notifications came back
 * on). A missed wakeup shows as a poll timeout and fails the test. Every token must come back
 * exactly once; payloads are verified on a sample.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#include "pair.h"
#include "scale.h"

#define NUM 256u
#define BASE 0x40000000ull
#define BUF_LEN 64u
#define SAMPLE 64u          /* every SAMPLE-th chain carries and gets back a full payload */
#define WAIT_MS 10000       /* a wakeup later than this is a lost one */

struct slot {
	uint64_t seq;
	uint64_t out_gpa, in_gpa;
	uint8_t *out, *in;
};

struct stress {
	struct vqs_pair p;
	int kick_fd, call_fd;
	unsigned long n;
	struct slot slots[NUM];
	uint8_t *seen; /* one byte per sequence number: times its token came back */
	_Atomic bool stop;
	_Atomic int device_err; /* first failure on the device thread */
	unsigned long kicks, calls, dev_sleeps, drv_sleeps;
};

static uint8_t pattern(uint64_t seq, unsigned i, uint8_t salt)
{
	return (uint8_t)(seq * 131 + i * 7 + salt);
}

static void signal_fd(int fd)
{
	uint64_t one = 1;
	ssize_t r = write(fd, &one, sizeof(one));
	(void)r; /* an eventfd write only fails at 2^64-1 pending */
}

/* Sleep until fd is signalled; false on timeout (a lost wakeup). */
static bool wait_fd(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int r;
	while ((r = poll(&pfd, 1, WAIT_MS)) < 0 && errno == EINTR)
		;
	if (r <= 0)
		return false;
	uint64_t v;
	ssize_t rd = read(fd, &v, sizeof(v));
	(void)rd; /* non-blocking: EAGAIN only if someone else drained it */
	return true;
}

/* The device: pop, check the request, answer, flush, call when the driver asked for it. */
static int device_serve(struct stress *s, struct vqs_elem *e, uint64_t *served)
{
	struct iovec *out = &e->iov[0], *in = &e->iov[e->out_num];
	if (e->out_num != 1 || e->in_num != 1 || out->iov_len != BUF_LEN || in->iov_len != BUF_LEN)
		return -EPROTO;
	uint64_t seq;
	memcpy(&seq, out->iov_base, sizeof(seq));
	uint32_t written = sizeof(seq);
	if (seq % SAMPLE == 0) {
		const uint8_t *b = out->iov_base;
		for (unsigned i = sizeof(seq); i < BUF_LEN; i++)
			if (b[i] != pattern(seq, i, 0))
				return -EBADMSG;
		for (unsigned i = sizeof(seq); i < BUF_LEN; i++)
			((uint8_t *)in->iov_base)[i] = pattern(seq, i, 0x5a);
		written = BUF_LEN;
	}
	uint64_t answer = ~seq;
	memcpy(in->iov_base, &answer, sizeof(answer));
	(*served)++;
	return vqs_vq_fill(s->p.dev, e, written);
}

static void *device_thread(void *arg)
{
	struct stress *s = arg;
	struct vqs_vq *vq = s->p.dev;
	struct iovec iov[4];
	struct vqs_elem e = {.iov = iov, .iov_cap = 4};
	uint64_t served = 0;
	int err = 0;
	vqs_vq_disable_notify(vq);
	while (!err && served < s->n && !atomic_load(&s->stop)) {
		int rc;
		unsigned batch = 0;
		vqs_mem_read_lock();
		while (!err && (rc = vqs_vq_pop(vq, &e)) == 0) {
			err = device_serve(s, &e, &served);
			if (++batch % 32 == 0 && vqs_vq_flush(vq) && vqs_vq_need_call(vq)) {
				signal_fd(s->call_fd);
				s->calls++;
			}
		}
		vqs_mem_read_unlock();
		if (!err && rc != -EAGAIN)
			err = rc;
		if (vqs_vq_flush(vq) && vqs_vq_need_call(vq)) {
			signal_fd(s->call_fd);
			s->calls++;
		}
		if (err || batch)
			continue;
		/* Nothing left: ask for kicks, and re-check before sleeping. */
		if (vqs_vq_enable_notify(vq)) {
			vqs_vq_disable_notify(vq);
			continue;
		}
		s->dev_sleeps++;
		if (!wait_fd(s->kick_fd))
			err = -ETIMEDOUT;
		vqs_vq_disable_notify(vq);
	}
	if (err)
		atomic_store(&s->device_err, err);
	return NULL;
}

/* The driver's check of one completion; NULL when right, else what is wrong. */
static const char *check_used(struct stress *s, struct slot *sl, uint32_t len)
{
	if (sl < s->slots || sl >= s->slots + NUM)
		return "token is not one of ours";
	if (sl->seq >= s->n || s->seen[sl->seq]++)
		return "token came back twice";
	uint64_t answer;
	memcpy(&answer, sl->in, sizeof(answer));
	if (answer != ~sl->seq)
		return "wrong answer";
	if (len != (sl->seq % SAMPLE ? sizeof(answer) : BUF_LEN))
		return "wrong used len";
	if (sl->seq % SAMPLE == 0)
		for (unsigned i = sizeof(answer); i < BUF_LEN; i++)
			if (sl->in[i] != pattern(sl->seq, i, 0x5a))
				return "wrong payload";
	return NULL;
}

/* The driver: keep the ring full, take completions, sleep on the call eventfd when idle.
 * NULL when all chains came back, else why it stopped (after `done` completions). */
static const char *driver_run(struct stress *s, unsigned long *done_out)
{
	struct vqs_drv_vq *dq = s->p.drv;
	unsigned free_slots[NUM], nfree = NUM;
	for (unsigned i = 0; i < NUM; i++)
		free_slots[i] = NUM - 1 - i;
	unsigned long added = 0, done = 0;
	const char *why = NULL;
	vqs_drv_disable_cb(dq);
	while (!why && done < s->n && !atomic_load(&s->device_err)) {
		bool progress = false;
		while (added < s->n && nfree) {
			struct slot *sl = &s->slots[free_slots[nfree - 1]];
			sl->seq = added;
			memcpy(sl->out, &sl->seq, sizeof(sl->seq));
			if (added % SAMPLE == 0)
				for (unsigned i = sizeof(sl->seq); i < BUF_LEN; i++)
					sl->out[i] = pattern(added, i, 0);
			struct vqs_drv_buf b[2] = {{sl->out_gpa, BUF_LEN}, {sl->in_gpa, BUF_LEN}};
			int rc = vqs_drv_add(dq, b, 1, 1, sl, false);
			if (rc == -ENOSPC)
				break; /* ring full: NUM / 2 chains of two descriptors in flight */
			if (rc) {
				why = "add failed";
				break;
			}
			nfree--;
			added++;
			progress = true;
		}
		if (vqs_drv_kick_prepare(dq)) {
			signal_fd(s->kick_fd);
			s->kicks++;
		}
		uint32_t len;
		struct slot *sl;
		while (!why && (sl = vqs_drv_get_used(dq, &len))) {
			why = check_used(s, sl, len);
			free_slots[nfree++] = (unsigned)(sl - s->slots);
			done++;
			progress = true;
		}
		if (why || progress)
			continue;
		/* Nothing to add or take: ask for calls, and re-check before sleeping. */
		if (vqs_drv_enable_cb(dq)) {
			vqs_drv_disable_cb(dq);
			continue;
		}
		s->drv_sleeps++;
		if (!wait_fd(s->call_fd))
			why = "no call within the timeout (lost wakeup)";
		vqs_drv_disable_cb(dq);
	}
	*done_out = done;
	return why;
}

static void run_stress(uint64_t features, const char *name)
{
	struct stress *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	s->n = vqs_test_scaled(1000000);
	s->seen = calloc(s->n, 1);
	assert_non_null(s->seen);
	assert_int_equal(vqs_pair_init(&s->p, NUM, features, BASE, 1u << 20), 0);
	for (unsigned i = 0; i < NUM; i++) {
		struct slot *sl = &s->slots[i];
		sl->out_gpa = vqs_gmem_alloc(s->p.gmem, BUF_LEN, 64);
		sl->in_gpa = vqs_gmem_alloc(s->p.gmem, BUF_LEN, 64);
		assert_true(sl->out_gpa && sl->in_gpa);
		sl->out = vqs_gmem_host(s->p.gmem, sl->out_gpa, BUF_LEN);
		sl->in = vqs_gmem_host(s->p.gmem, sl->in_gpa, BUF_LEN);
	}
	s->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(s->kick_fd >= 0 && s->call_fd >= 0);

	uint64_t t0 = vqs_now_ns();
	pthread_t dev;
	assert_int_equal(pthread_create(&dev, NULL, device_thread, s), 0);
	unsigned long done;
	const char *why = driver_run(s, &done);
	atomic_store(&s->stop, true);
	signal_fd(s->kick_fd);
	pthread_join(dev, NULL);
	uint64_t t1 = vqs_now_ns();

	if (why)
		fail_msg("driver: %s, after %lu of %lu completions", why, done, s->n);
	if (atomic_load(&s->device_err))
		fail_msg("device: %s after %lu completions (%s)",
			 strerror(-atomic_load(&s->device_err)), done,
			 vqs_vq_err_name(vqs_vq_error(s->p.dev)));
	for (unsigned long i = 0; i < s->n; i++)
		if (s->seen[i] != 1)
			fail_msg("token of chain %lu came back %u times", i, s->seen[i]);
	assert_false(vqs_vq_is_broken(s->p.dev));
	print_message("split stress (%s): %lu buffers in %.3f s, %lu kicks, %lu calls, "
		      "device slept %lu times, driver slept %lu times\n",
		      name, s->n, (double)(t1 - t0) / 1e9, s->kicks, s->calls, s->dev_sleeps,
		      s->drv_sleeps);
	close(s->kick_fd);
	close(s->call_fd);
	vqs_pair_fini(&s->p);
	free(s->seen);
	free(s);
}

static void test_split_two_threads_eventfd_event_idx(void **state)
{
	(void)state;
	run_stress(VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX), "event_idx");
}

/* The device completes in pop order, so IN_ORDER holds; the driver then takes descriptors in
 * ring order and its free list is never spliced. */
static void test_split_two_threads_eventfd_event_idx_in_order(void **state)
{
	(void)state;
	run_stress(VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) | VQS_BIT(VQS_F_IN_ORDER),
		   "event_idx+in_order");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_two_threads_eventfd_event_idx),
		cmocka_unit_test(test_split_two_threads_eventfd_event_idx_in_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
