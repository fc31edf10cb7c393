/* SPDX-License-Identifier: MIT */
/*
 * A driver thread and a device thread through one 256-entry packed ring with EVENT_IDX and
 * INDIRECT_DESC, waking each other through real eventfds (kick: driver -> device, call: device
 * -> driver) and sleeping in poll() only after re-enabling notifications and re-checking the ring.
 * Chains take three shapes (2 or 3 ring descriptors, or one indirect descriptor), so used
 * descriptors skip differently sized holes and the wrap counters flip mid-chain; the device
 * completes each batch in reverse, so buffer ids come back out of order. Every token must come
 * back exactly once with the right answer; a lost wakeup shows as a poll timeout.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#include "pair.h"
#include "scale.h"

#define NUM 256u
#define BASE 0x80000000ull
#define LEN 32u
#define BATCH 32u
#define POLL_MS 10000 /* a wakeup later than this is a lost one */

struct req {
	uint64_t seq;
	uint64_t out_gpa, in_gpa;
	uint8_t *out, *in;
};

struct run {
	struct vqs_pair p;
	int kick, call;
	unsigned long n;
	struct req reqs[NUM];
	uint8_t *back; /* per sequence number: how often its token came back */
	_Atomic bool stop;
	_Atomic int dev_err;
	unsigned long kicks, calls;
};

static void notify(int fd)
{
	uint64_t one = 1;
	ssize_t r = write(fd, &one, sizeof(one));
	(void)r; /* fails only with 2^64-1 pending */
}

/* Wait for fd; false after POLL_MS without a signal. */
static bool sleep_on(int fd)
{
	struct pollfd pfd = {.fd = fd, .events = POLLIN};
	int r;
	do
		r = poll(&pfd, 1, POLL_MS);
	while (r < 0 && errno == EINTR);
	if (r <= 0)
		return false;
	uint64_t v;
	ssize_t rd = read(fd, &v, sizeof(v));
	(void)rd;
	return true;
}

/* Gather the readable iovecs of e into one sequence number; answer it in the writable one. */
static int answer(struct vqs_elem *e, uint32_t *written)
{
	uint8_t req[LEN];
	size_t got = 0;
	for (unsigned i = 0; i < e->out_num; i++) {
		if (got + e->iov[i].iov_len > LEN)
			return -EPROTO;
		memcpy(req + got, e->iov[i].iov_base, e->iov[i].iov_len);
		got += e->iov[i].iov_len;
	}
	if (got != LEN || e->in_num != 1 || e->iov[e->out_num].iov_len != LEN)
		return -EPROTO;
	uint64_t seq;
	memcpy(&seq, req, sizeof(seq));
	for (unsigned i = sizeof(seq); i < LEN; i++)
		if (req[i] != (uint8_t)(seq + i))
			return -EBADMSG;
	uint64_t a = ~seq;
	memcpy(e->iov[e->out_num].iov_base, &a, sizeof(a));
	*written = sizeof(a);
	return 0;
}

static void flush_and_call(struct run *r)
{
	if (vqs_vq_flush(r->p.dev) && vqs_vq_need_call(r->p.dev)) {
		notify(r->call);
		r->calls++;
	}
}

static void *device(void *arg)
{
	struct run *r = arg;
	struct vqs_vq *vq = r->p.dev;
	static struct iovec iov[BATCH][4];
	struct vqs_elem e[BATCH];
	int err = 0;
	vqs_vq_disable_notify(vq);
	while (!err && !atomic_load(&r->stop)) {
		for (unsigned i = 0; i < BATCH; i++)
			e[i] = (struct vqs_elem){.iov = iov[i], .iov_cap = 4};
		vqs_mem_read_lock();
		struct vqs_vq_session ss;
		int n = vqs_vq_session_begin(vq, &ss);
		if (n > 0)
			n = vqs_vq_session_pop(
				&ss, &(struct vqs_pop_to){.base = e, .stride = sizeof(e[0])}, BATCH);
		vqs_vq_session_pause(&ss);
		/* Complete the batch backwards: ids go back out of order. */
		for (int i = n - 1; i >= 0 && !err; i--) {
			uint32_t written = 0;
			err = answer(&e[i], &written);
			if (!err)
				err = vqs_vq_fill(vq, &e[i], written);
		}
		vqs_mem_read_unlock();
		if (n < 0)
			err = n;
		if (err)
			break;
		flush_and_call(r);
		if (n > 0)
			continue;
		if (vqs_vq_enable_notify(vq)) { /* arrived while kicks were off */
			vqs_vq_disable_notify(vq);
			continue;
		}
		if (!sleep_on(r->kick) && !atomic_load(&r->stop))
			err = -ETIMEDOUT;
		vqs_vq_disable_notify(vq);
	}
	if (err)
		atomic_store(&r->dev_err, err);
	return NULL;
}

/* Add request q for sequence number seq, in the shape seq picks. */
static int submit(struct run *r, struct req *q, uint64_t seq)
{
	q->seq = seq;
	memcpy(q->out, &seq, sizeof(seq));
	for (unsigned i = sizeof(seq); i < LEN; i++)
		q->out[i] = (uint8_t)(seq + i);
	memset(q->in, 0, sizeof(uint64_t));
	struct vqs_drv_buf b[3];
	switch (seq % 3) {
	case 0: /* two descriptors */
	case 2: /* one indirect descriptor over the same two buffers */
		b[0] = (struct vqs_drv_buf){q->out_gpa, LEN};
		b[1] = (struct vqs_drv_buf){q->in_gpa, LEN};
		return vqs_drv_add(r->p.drv, b, 1, 1, q, seq % 3 == 2);
	default: /* three descriptors: the request split in two */
		b[0] = (struct vqs_drv_buf){q->out_gpa, 8};
		b[1] = (struct vqs_drv_buf){q->out_gpa + 8, LEN - 8};
		b[2] = (struct vqs_drv_buf){q->in_gpa, LEN};
		return vqs_drv_add(r->p.drv, b, 2, 1, q, false);
	}
}

static const char *driver(struct run *r, unsigned long *done_out)
{
	struct vqs_drv_vq *dq = r->p.drv;
	struct req *idle[NUM];
	unsigned nidle = NUM;
	for (unsigned i = 0; i < NUM; i++)
		idle[i] = &r->reqs[i];
	unsigned long sent = 0, done = 0;
	const char *why = NULL;
	vqs_drv_disable_cb(dq);
	while (!why && done < r->n && !atomic_load(&r->dev_err)) {
		bool moved = false;
		while (sent < r->n && nidle) {
			int rc = submit(r, idle[nidle - 1], sent);
			if (rc == -ENOSPC)
				break;
			if (rc) {
				why = "add failed";
				break;
			}
			nidle--;
			sent++;
			moved = true;
		}
		if (vqs_drv_kick_prepare(dq)) {
			notify(r->kick);
			r->kicks++;
		}
		uint32_t len;
		struct req *q;
		while (!why && (q = vqs_drv_get_used(dq, &len))) {
			uint64_t a;
			memcpy(&a, q->in, sizeof(a));
			if (q < r->reqs || q >= r->reqs + NUM || q->seq >= r->n)
				why = "foreign token";
			else if (r->back[q->seq]++)
				why = "token came back twice";
			else if (a != ~q->seq || len != sizeof(a))
				why = "wrong answer or length";
			idle[nidle++] = q;
			done++;
			moved = true;
		}
		if (why || moved)
			continue;
		if (vqs_drv_enable_cb(dq)) { /* completed while calls were off */
			vqs_drv_disable_cb(dq);
			continue;
		}
		if (!sleep_on(r->call))
			why = "no call within the timeout (lost wakeup)";
		vqs_drv_disable_cb(dq);
	}
	*done_out = done;
	return why;
}

static void packed_two_threads_eventfd_event_idx_every_token_once(void **state)
{
	struct run *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	r->n = vqs_test_scaled(1000000);
	r->back = calloc(r->n, 1);
	assert_non_null(r->back);
	uint64_t features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_RING_PACKED) |
			    VQS_BIT(VQS_F_EVENT_IDX) | VQS_BIT(VQS_F_INDIRECT_DESC);
	assert_int_equal(vqs_pair_init(&r->p, NUM, features, BASE, 4u << 20), 0);
	for (unsigned i = 0; i < NUM; i++) {
		struct req *q = &r->reqs[i];
		q->out_gpa = vqs_gmem_alloc(r->p.gmem, LEN, 64);
		q->in_gpa = vqs_gmem_alloc(r->p.gmem, LEN, 64);
		assert_true(q->out_gpa && q->in_gpa);
		q->out = vqs_gmem_host(r->p.gmem, q->out_gpa, LEN);
		q->in = vqs_gmem_host(r->p.gmem, q->in_gpa, LEN);
	}
	r->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	r->call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(r->kick >= 0 && r->call >= 0);

	uint64_t t0 = vqs_now_ns();
	pthread_t dev;
	assert_int_equal(pthread_create(&dev, NULL, device, r), 0);
	unsigned long done;
	const char *why = driver(r, &done);
	atomic_store(&r->stop, true);
	notify(r->kick);
	pthread_join(dev, NULL);
	double secs = (double)(vqs_now_ns() - t0) / 1e9;

	if (why)
		fail_msg("driver: %s after %lu of %lu completions", why, done, r->n);
	int derr = atomic_load(&r->dev_err);
	if (derr)
		fail_msg("device: error %d after %lu completions (%s)", derr, done,
			 vqs_vq_err_name(vqs_vq_error(r->p.dev)));
	for (unsigned long i = 0; i < r->n; i++)
		if (r->back[i] != 1)
			fail_msg("token of chain %lu came back %u times", i, r->back[i]);
	assert_false(vqs_vq_is_broken(r->p.dev));
	print_message("packed stress: %lu buffers in %.3f s, %lu kicks, %lu calls\n", r->n, secs,
		      r->kicks, r->calls);
	close(r->kick);
	close(r->call);
	vqs_pair_fini(&r->p);
	free(r->back);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(packed_two_threads_eventfd_event_idx_every_token_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
