/* SPDX-License-Identifier: MIT */
/*
 * The backend's control thread: one epoll loop over a stop eventfd, the listening socket (server
 * mode, only while no frontend is connected), the reconnect timer (client mode) and the
 * connection. Each readable connection yields one message: read, shape check, handle, reply.
 * A message that cannot be parsed, or a refused one nobody asked an ack for, ends the connection;
 * the backend then stops the rings, drops the memory and serves the next frontend.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "util/log.h"
#include "vhost-user/backend_internal.h"
#include "vhost-user/sock.h"

void vqs_vu_backend_opts_init(struct vqs_vu_backend_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->reconnect_min_ms = 10;
	o->reconnect_max_ms = 1000;
	o->msg_timeout_ms = 1000;
}

static void count(_Atomic uint64_t *c) { atomic_fetch_add_explicit(c, 1, memory_order_relaxed); }

static int watch(struct vqs_vu_backend *b, int op, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	return epoll_ctl(b->epfd, op, fd, &ev) < 0 ? -errno : 0;
}

static void arm_timer(struct vqs_vu_backend *b, uint32_t ms)
{
	struct itimerspec its = { .it_value = { ms / 1000, (long)(ms % 1000) * 1000000 + 1 } };
	timerfd_settime(b->timer_fd, 0, &its, NULL);
}

static void connected(struct vqs_vu_backend *b, int fd)
{
	b->conn_fd = fd;
	if (watch(b, EPOLL_CTL_ADD, fd) < 0) {
		vqs_err("vhost-user: cannot watch the connection: %s", strerror(errno));
		close(fd);
		b->conn_fd = -1;
		return;
	}
	if (b->listen_fd >= 0)
		epoll_ctl(b->epfd, EPOLL_CTL_DEL, b->listen_fd, NULL);
	b->backoff_ms = b->opts.reconnect_min_ms;
	count(&b->st_connections);
	if (b->ops.connection)
		b->ops.connection(b->opaque, true);
}

void vu_device_reset(struct vqs_vu_backend *b)
{
	for (unsigned i = 0; i < b->ops.num_queues; i++) {
		struct vu_vring *r = &b->rings[i];
		vu_vring_stop(b, i);
		struct vqs_vq_state base = r->base;
		bool packed = r->base_packed;
		vu_vring_reset(b, i);
		r->base = base;
		r->base_packed = packed;
	}
	vu_state_drop(b);
	vu_log_drop(b);
	/* Every mapping released before the caller goes on (or acknowledges). */
	vqs_mem_synchronize(b->mem);
	vu_inflight_drop(b);
	b->features = 0;
	b->status = 0;
	atomic_store_explicit(&b->neg_features, 0, memory_order_relaxed);
}

/* Forget the frontend: rings stopped, fds closed, memory unmapped, then serve the next one. */
static void disconnect(struct vqs_vu_backend *b, bool serve_next)
{
	if (b->conn_fd < 0)
		return;
	vu_device_reset(b);
	vqs_mem_set(b->mem, NULL, 0);
	vqs_mem_synchronize(b->mem);
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, b->conn_fd, NULL);
	close(b->conn_fd);
	b->conn_fd = -1;
	b->inflight.own_ino = 0;
	b->protocol_features = 0;
	if (b->ops.connection)
		b->ops.connection(b->opaque, false);
	count(&b->st_disconnects);
	if (!serve_next)
		return;
	if (b->opts.client)
		arm_timer(b, b->opts.reconnect_min_ms);
	else if (watch(b, EPOLL_CTL_ADD, b->listen_fd) < 0)
		vqs_err("vhost-user: cannot listen again: %s", strerror(errno));
}

static void try_connect(struct vqs_vu_backend *b)
{
	uint64_t ticks;
	if (read(b->timer_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		vqs_warn("vhost-user: timer read: %s", strerror(errno));
	int fd = vu_sock_connect(b->path, (int)b->opts.msg_timeout_ms);
	if (fd >= 0) {
		connected(b, fd);
		return;
	}
	arm_timer(b, b->backoff_ms);
	b->backoff_ms = b->backoff_ms * 2 > b->opts.reconnect_max_ms ? b->opts.reconnect_max_ms
								     : b->backoff_ms * 2;
}

static void try_accept(struct vqs_vu_backend *b)
{
	int fd = vu_sock_accept(b->listen_fd, (int)b->opts.msg_timeout_ms);
	if (fd >= 0)
		connected(b, fd);
	else if (fd != -EAGAIN)
		vqs_warn("vhost-user: accept: %s", strerror(-fd));
}

/* Reply to m with its own payload (GET_*) or with an ack when one was asked. */
static int send_reply(struct vqs_vu_backend *b, const struct vu_msg *m, struct vu_msg *reply,
		      int result, int reply_fd)
{
	bool has_payload = vu_request_has_reply(m->hdr.request);
	bool ack = !has_payload && (m->hdr.flags & VQS_VU_FLAG_NEED_REPLY) &&
		   vu_has_proto(b, VQS_VU_PROTOCOL_F_REPLY_ACK);
	if (!has_payload && !ack)
		return 0;
	reply->hdr = (struct vqs_vu_hdr){ m->hdr.request, VQS_VU_VERSION | VQS_VU_FLAG_REPLY, 0 };
	if (ack) {
		/* 0 = success; any other value reports failure (vhost-user.rst "REPLY_ACK"). */
		reply->p.u64 = result < 0 ? (uint64_t)-result : 0;
		reply->hdr.size = sizeof(uint64_t);
	} else {
		reply->hdr.size = (uint32_t)result;
	}
	return vu_msg_send(b->conn_fd, &reply->hdr, reply->p.bytes, &reply_fd, reply_fd >= 0);
}

static void serve_message(struct vqs_vu_backend *b)
{
	struct vu_msg m, reply;
	int r = vu_msg_recv(b->conn_fd, &m, (int)b->opts.msg_timeout_ms);
	if (r < 0) {
		if (r != -ECONNRESET) {
			count(&b->st_bad);
			vqs_info("vhost-user: unreadable message (%s): closing", strerror(-r));
		}
		disconnect(b, true);
		return;
	}
	count(&b->st_messages);
	r = vu_msg_check_shape(&m);
	int reply_fd = -1;
	if (r == 0)
		r = vu_handle(b, &m, &reply, &reply_fd);
	vu_msg_close_fds(&m);
	bool acked = (m.hdr.flags & VQS_VU_FLAG_NEED_REPLY) &&
		     vu_has_proto(b, VQS_VU_PROTOCOL_F_REPLY_ACK) &&
		     !vu_request_has_reply(m.hdr.request) && r != -EBADMSG;
	if (r < 0) {
		count(&b->st_bad);
		vqs_info("vhost-user: %s (%u) refused: %s", vqs_vu_request_name(m.hdr.request),
			 m.hdr.request, strerror(-r));
		/* Without an ack the frontend would not learn of the refusal: end the session. */
		if (!acked) {
			disconnect(b, true);
			return;
		}
	}
	int s = send_reply(b, &m, &reply, r, reply_fd);
	if (reply_fd >= 0)
		close(reply_fd);
	if (s < 0) {
		vqs_info("vhost-user: reply failed: %s", strerror(-s));
		disconnect(b, true);
	}
}

static void *control_thread(void *arg)
{
	struct vqs_vu_backend *b = arg;
	if (b->opts.client)
		arm_timer(b, 0);
	for (;;) {
		struct epoll_event ev[4];
		int n = epoll_wait(b->epfd, ev, 4, -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			vqs_err("vhost-user: epoll_wait: %s", strerror(errno));
			break;
		}
		for (int k = 0; k < n; k++) {
			int fd = ev[k].data.fd;
			if (fd == b->stop_fd) {
				disconnect(b, false);
				return NULL;
			}
			if (fd == b->err_event_fd)
				vu_vring_signal_errors(b);
			else if (fd == b->conn_fd)
				serve_message(b);
			else if (fd == b->listen_fd && b->conn_fd < 0)
				try_accept(b);
			else if (fd == b->timer_fd && b->conn_fd < 0)
				try_connect(b);
		}
	}
	disconnect(b, false);
	return NULL;
}

static void free_backend(struct vqs_vu_backend *b)
{
	int fds[] = { b->epfd, b->stop_fd, b->err_event_fd, b->listen_fd, b->timer_fd };
	for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (b->listen_fd >= 0)
		unlink(b->path);
	if (b->rings)
		for (unsigned i = 0; i < b->ops.num_queues; i++)
			if (b->rings[i].vq)
				vqs_vq_destroy(b->rings[i].vq);
	free(b->rings);
	if (b->mem)
		vqs_mem_destroy(b->mem);
	if (b->log_fd >= 0) /* a SET_LOG_FD eventfd the map could not let go of (vu_log_drop) */
		close(b->log_fd);
	free(b);
}

static int check_opts(const struct vqs_vu_backend_opts *o)
{
	if (!o || o->size < sizeof(*o) || !o->path || !o->sched || !o->ops)
		return -EINVAL;
	const struct vqs_vu_device_ops *ops = o->ops;
	/* the struct as first released (up to iov_per_req) or larger */
	if (ops->size < offsetof(struct vqs_vu_device_ops, queue_demand) || !ops->queue_handler ||
	    ops->num_queues == 0 || ops->num_queues > 256 || ops->config_size > VQS_VU_CONFIG_MAX)
		return -EINVAL;
	if (strlen(o->path) >= sizeof(((struct vqs_vu_backend *)0)->path))
		return -ENAMETOOLONG;
	return 0;
}

int vqs_vu_backend_create(struct vqs_vu_backend **out, const struct vqs_vu_backend_opts *o)
{
	int err = check_opts(o);
	if (err < 0)
		return err;
	struct vqs_vu_backend *b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	b->opts = *o;
	if (!b->opts.reconnect_min_ms)
		b->opts.reconnect_min_ms = 10;
	if (b->opts.reconnect_max_ms < b->opts.reconnect_min_ms)
		b->opts.reconnect_max_ms = b->opts.reconnect_min_ms;
	if (!b->opts.msg_timeout_ms)
		b->opts.msg_timeout_ms = 1000;
	/* callers built against an older, shorter struct get the newer fields zeroed (b is calloc'd) */
	memcpy(&b->ops, o->ops, o->ops->size < sizeof(b->ops) ? o->ops->size : sizeof(b->ops));
	b->ops.size = sizeof(b->ops);
	b->opaque = o->opaque;
	strcpy(b->path, o->path);
	b->opts.path = b->path;
	b->backoff_ms = b->opts.reconnect_min_ms;
	b->epfd = b->stop_fd = b->err_event_fd = b->listen_fd = b->timer_fd = b->conn_fd = -1;
	b->log_fd = -1;
	b->state = (struct vu_state){ .fd = -1, .stop_fd = -1, .done_fd = -1 };

	b->rings = calloc(b->ops.num_queues, sizeof(*b->rings));
	err = b->rings ? vqs_mem_create(&b->mem) : -ENOMEM;
	for (unsigned i = 0; err == 0 && i < b->ops.num_queues; i++) {
		b->rings[i].kick_fd = b->rings[i].call_fd = b->rings[i].err_fd = -1;
		b->rings[i].owner = b;
		err = vqs_vq_create(&b->rings[i].vq);
	}
	if (err == 0) {
		b->epfd = epoll_create1(EPOLL_CLOEXEC);
		b->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		b->err_event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (b->epfd < 0 || b->stop_fd < 0 || b->err_event_fd < 0)
			err = -errno;
	}
	if (err == 0)
		err = watch(b, EPOLL_CTL_ADD, b->stop_fd);
	if (err == 0)
		err = watch(b, EPOLL_CTL_ADD, b->err_event_fd);
	if (err == 0 && b->opts.client) {
		b->timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		err = b->timer_fd < 0 ? -errno : watch(b, EPOLL_CTL_ADD, b->timer_fd);
	} else if (err == 0) {
		b->listen_fd = vu_sock_listen(b->path);
		err = b->listen_fd < 0 ? b->listen_fd : watch(b, EPOLL_CTL_ADD, b->listen_fd);
	}
	if (err == 0)
		err = -pthread_create(&b->thread, NULL, control_thread, b);
	if (err < 0) {
		free_backend(b);
		return err;
	}
	pthread_setname_np(b->thread, "vqs-vu-ctl");
	*out = b;
	return 0;
}

void vqs_vu_backend_destroy(struct vqs_vu_backend *b)
{
	if (!b)
		return;
	uint64_t one = 1;
	if (write(b->stop_fd, &one, sizeof(one)) < 0)
		vqs_err("vhost-user: cannot stop the control thread: %s", strerror(errno));
	pthread_join(b->thread, NULL);
	free_backend(b);
}

void vqs_vu_backend_stats(const struct vqs_vu_backend *b, struct vqs_vu_backend_stats *s)
{
	*s = (struct vqs_vu_backend_stats){
		.connections = atomic_load_explicit(&b->st_connections, memory_order_relaxed),
		.disconnects = atomic_load_explicit(&b->st_disconnects, memory_order_relaxed),
		.messages = atomic_load_explicit(&b->st_messages, memory_order_relaxed),
		.bad_messages = atomic_load_explicit(&b->st_bad, memory_order_relaxed),
		.queue_starts = atomic_load_explicit(&b->st_starts, memory_order_relaxed),
		.queue_stops = atomic_load_explicit(&b->st_stops, memory_order_relaxed),
	};
}

uint64_t vqs_vu_backend_features(const struct vqs_vu_backend *b)
{
	return atomic_load_explicit(&b->neg_features, memory_order_relaxed);
}
