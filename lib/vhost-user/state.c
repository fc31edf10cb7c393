/* SPDX-License-Identifier: MIT */
/*
 * Device state transfer (vhost-user.rst "Migrating back-end state", protocol feature
 * DEVICE_STATE): SET_DEVICE_STATE_FD hands over one end of a channel, the state flows through it
 * on a thread of its own (the frontend reads or writes the other end only after the reply, so
 * the control thread must not block on it), and CHECK_DEVICE_STATE collects the result. The
 * device sees one blob either way, on the control thread: save_state before the transfer,
 * load_state after the whole blob arrived. What arrives is capped at VQS_VU_DEVICE_STATE_MAX;
 * a frontend that never closes its end is cut off by CHECK_DEVICE_STATE's wait (msg_timeout_ms),
 * a reset or the disconnect.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "util/log.h"
#include "vhost-user/backend_internal.h"

/* Wait until fd is ready for `events` or the transfer is cancelled: 0, -ECANCELED, -errno. */
static int wait_fd(struct vu_state *st, short events)
{
	struct pollfd p[2] = { { .fd = st->fd, .events = events },
			       { .fd = st->stop_fd, .events = POLLIN } };
	for (;;) {
		int r = poll(p, 2, -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (p[1].revents)
			return -ECANCELED;
		return 0;
	}
}

static int send_blob(struct vu_state *st)
{
	size_t done = 0;
	while (done < st->len) {
		ssize_t n = write(st->fd, (char *)st->blob + done, st->len - done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		int r = wait_fd(st, POLLOUT);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Read until EOF, at most VQS_VU_DEVICE_STATE_MAX bytes. */
static int receive_blob(struct vu_state *st)
{
	size_t cap = 0;
	for (;;) {
		if (st->len == cap) {
			if (cap == VQS_VU_DEVICE_STATE_MAX)
				return -EFBIG;
			size_t ncap = cap ? cap * 2 : 4096;
			if (ncap > VQS_VU_DEVICE_STATE_MAX)
				ncap = VQS_VU_DEVICE_STATE_MAX;
			/* one byte more than allowed shows a blob that is too big */
			void *nb = realloc(st->blob, ncap + (ncap == VQS_VU_DEVICE_STATE_MAX));
			if (!nb)
				return -ENOMEM;
			st->blob = nb;
			cap = ncap + (ncap == VQS_VU_DEVICE_STATE_MAX);
		}
		ssize_t n = read(st->fd, (char *)st->blob + st->len, cap - st->len);
		if (n == 0)
			return st->len > VQS_VU_DEVICE_STATE_MAX ? -EFBIG : 0;
		if (n > 0) {
			st->len += (size_t)n;
			if (st->len > VQS_VU_DEVICE_STATE_MAX)
				return -EFBIG;
			continue;
		}
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		int r = wait_fd(st, POLLIN);
		if (r < 0)
			return r;
	}
}

static void *transfer(void *arg)
{
	struct vu_state *st = arg;
	/* A frontend closing its end early must cost an EPIPE, not the process: SIGPIPE from a
	 * write is sent to the writing thread, so blocked here it stays pending on this thread
	 * and goes with it. */
	sigset_t pipe_sig;
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, NULL);
	st->result = st->direction == VQS_VU_STATE_SAVE ? send_blob(st) : receive_blob(st);
	/* Closing the sending end is what tells the frontend the state is complete. */
	close(st->fd);
	st->fd = -1;
	uint64_t one = 1;
	/* The eventfd write orders the result before the control thread's read of it (and
	 * pthread_join does too). */
	if (write(st->done_fd, &one, sizeof(one)) < 0)
		vqs_err("vhost-user: device state transfer: %s", strerror(errno));
	return NULL;
}

/* Stop a running transfer (if any) and forget it. */
void vu_state_drop(struct vqs_vu_backend *b)
{
	struct vu_state *st = &b->state;
	if (st->running) {
		uint64_t one = 1;
		if (write(st->stop_fd, &one, sizeof(one)) < 0)
			vqs_err("vhost-user: cannot cancel the state transfer: %s", strerror(errno));
		pthread_join(st->thread, NULL);
	}
	int fds[] = { st->stop_fd, st->done_fd };
	for (unsigned i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(st->blob);
	*st = (struct vu_state){ .fd = -1, .stop_fd = -1, .done_fd = -1 };
}

int vu_state_set_fd(struct vqs_vu_backend *b, const struct vqs_vu_device_state *p, int fd,
		    uint64_t *reply)
{
	struct vu_state *st = &b->state;
	if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_DEVICE_STATE))
		return -EPROTO;
	if (p->direction > VQS_VU_STATE_LOAD || p->phase != VQS_VU_STATE_PHASE_STOPPED)
		return -EINVAL;
	/* Only a stopped device has a state that holds still. */
	if (vu_any_running(b))
		return -EBUSY;
	vu_state_drop(b); /* a transfer never checked is abandoned */
	st->direction = p->direction;
	int err = 0;
	if (p->direction == VQS_VU_STATE_SAVE)
		err = b->ops.save_state(b->opaque, &st->blob, &st->len);
	st->stop_fd = eventfd(0, EFD_CLOEXEC);
	st->done_fd = eventfd(0, EFD_CLOEXEC);
	if (err == 0 && (st->stop_fd < 0 || st->done_fd < 0 ||
			 fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0))
		err = -errno;
	if (err == 0 && (st->fd = dup(fd)) < 0)
		err = -errno;
	if (err == 0 && (err = -pthread_create(&st->thread, NULL, transfer, st)) < 0) {
		close(st->fd);
		st->fd = -1;
	}
	if (err < 0) {
		vu_state_drop(b);
		return err;
	}
	st->running = true;
	*reply = VQS_VU_STATE_NO_FD; /* no channel of our own: the frontend's is used */
	return 0;
}

uint64_t vu_state_check(struct vqs_vu_backend *b)
{
	struct vu_state *st = &b->state;
	int r = -EINVAL; /* nothing was transferred */
	if (st->running) {
		struct pollfd p = { .fd = st->done_fd, .events = POLLIN };
		int n;
		while ((n = poll(&p, 1, (int)b->opts.msg_timeout_ms)) < 0 && errno == EINTR)
			;
		if (n == 1) {
			pthread_join(st->thread, NULL);
			st->running = false;
			r = st->result;
		} else {
			r = -ETIMEDOUT; /* the frontend kept its end open */
		}
		if (r == 0 && st->direction == VQS_VU_STATE_LOAD)
			r = b->ops.load_state(b->opaque, st->blob, st->len);
	}
	if (r < 0)
		vqs_info("vhost-user: device state %s failed: %s",
			 st->direction == VQS_VU_STATE_SAVE ? "save" : "load", strerror(-r));
	vu_state_drop(b);
	return r < 0 ? (uint64_t)-r : 0;
}
