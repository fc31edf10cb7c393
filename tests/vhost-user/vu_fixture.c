/* SPDX-License-Identifier: MIT */
#include "vu_fixture.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "proc_count.h"

static unsigned echo_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			     void *opaque)
{
	struct vu_echo *e = opaque;
	for (unsigned i = 0; i < n; i++) {
		struct vqs_elem *el = &reqs[i]->elem;
		uint32_t written = 0;
		unsigned in = el->out_num;
		size_t in_off = 0;
		for (unsigned o = 0; o < el->out_num; o++) {
			const char *src = el->iov[o].iov_base;
			size_t left = el->iov[o].iov_len;
			while (left && in < el->out_num + el->in_num) {
				size_t room = el->iov[in].iov_len - in_off;
				size_t c = left < room ? left : room;
				memcpy((char *)el->iov[in].iov_base + in_off, src, c);
				src += c;
				left -= c;
				written += (uint32_t)c;
				in_off += c;
				if (in_off == el->iov[in].iov_len) {
					in++;
					in_off = 0;
				}
			}
		}
		if (e->async) {
			pthread_mutex_lock(&e->lock);
			bool queued = e->npending < sizeof(e->pending) / sizeof(e->pending[0]);
			if (queued) {
				e->written[e->npending] = written;
				e->pending[e->npending++] = reqs[i];
			}
			pthread_mutex_unlock(&e->lock);
			if (queued)
				continue;
		}
		if (e->delay_us)
			usleep(e->delay_us);
		vqs_req_complete(reqs[i], written);
		atomic_fetch_add_explicit(&e->completed, 1, memory_order_relaxed);
	}
	return n;
}

static void *completer(void *arg)
{
	struct vu_echo *e = arg;
	for (;;) {
		usleep(e->delay_us ? e->delay_us : 100);
		pthread_mutex_lock(&e->lock);
		struct vqs_req *r = e->npending ? e->pending[--e->npending] : NULL;
		uint32_t written = r ? e->written[e->npending] : 0;
		pthread_mutex_unlock(&e->lock);
		if (r) {
			vqs_req_complete(r, written);
			atomic_fetch_add_explicit(&e->completed, 1, memory_order_relaxed);
		}
	}
	return NULL;
}

int vu_echo_start_async(struct vu_echo *e)
{
	pthread_mutex_init(&e->lock, NULL);
	e->async = true;
	return -pthread_create(&e->completer, NULL, completer, e);
}

static vqs_handler_fn echo_queue_handler(void *opaque, unsigned qidx, void **handler_opaque)
{
	*handler_opaque = opaque;
	return echo_handler;
}

static int echo_get_config(void *opaque, uint32_t off, void *buf, uint32_t len)
{
	struct vu_echo *e = opaque;
	memcpy(buf, e->config + off, len);
	return 0;
}

static int echo_set_config(void *opaque, uint32_t off, const void *buf, uint32_t len)
{
	struct vu_echo *e = opaque;
	memcpy(e->config + off, buf, len);
	return 0;
}

/* The echo device's state is its config space, exactly. */
static int echo_save_state(void *opaque, void **blob, size_t *len)
{
	struct vu_echo *e = opaque;
	if (!(*blob = malloc(VU_CONFIG_SIZE)))
		return -ENOMEM;
	memcpy(*blob, e->config, VU_CONFIG_SIZE);
	*len = VU_CONFIG_SIZE;
	return 0;
}

static int echo_load_state(void *opaque, const void *blob, size_t len)
{
	struct vu_echo *e = opaque;
	if (len != VU_CONFIG_SIZE)
		return -EINVAL;
	memcpy(e->config, blob, len);
	return 0;
}

static int echo_send_rarp(void *opaque, const uint8_t mac[VQS_VU_MAC_LEN])
{
	struct vu_echo *e = opaque;
	memcpy(e->rarp_mac, mac, VQS_VU_MAC_LEN);
	/* Release: a test that sees the count sees the address. */
	atomic_fetch_add_explicit(&e->rarps, 1, memory_order_release);
	return 0;
}

void vu_echo_init(struct vu_echo *e, uint16_t num_queues, uint64_t features)
{
	memset(e, 0, sizeof(*e));
	e->ops = (struct vqs_vu_device_ops){
		.size = sizeof(e->ops),
		.features = features,
		.protocol_features = VQS_VU_PROTOCOL_SUPPORTED,
		.num_queues = num_queues,
		.config_size = VU_CONFIG_SIZE,
		.queue_handler = echo_queue_handler,
		.get_config = echo_get_config,
		.set_config = echo_set_config,
		.save_state = echo_save_state,
		.load_state = echo_load_state,
		.send_rarp = echo_send_rarp,
	};
	for (unsigned i = 0; i < VU_CONFIG_SIZE; i++)
		e->config[i] = (uint8_t)i;
}

int vu_env_start(struct vu_env *env, uint16_t num_queues, bool client)
{
	return vu_env_start_with(env, num_queues, client, NULL);
}

static int env_start(struct vu_env *env, uint16_t num_queues, bool client,
		     void (*tweak)(struct vqs_vu_device_ops *ops), bool log_unmarked)
{
	static _Atomic unsigned seq;
	memset(env, 0, sizeof(*env));
	snprintf(env->path, sizeof(env->path), "/tmp/vqs-vu-%d-%u.sock", (int)getpid(),
		 atomic_fetch_add(&seq, 1));
	/* Packed rings offered; frontends take them only when they ask. */
	vu_echo_init(&env->echo, num_queues,
		     VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) | VQS_BIT(VQS_F_RING_PACKED));
	if (tweak)
		tweak(&env->echo.ops);
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_POOL;
	so.nworkers = 1;
	int r = vqs_sched_create(&env->sched, &so);
	if (r < 0)
		return r;
	struct vqs_vu_backend_opts bo;
	vqs_vu_backend_opts_init(&bo);
	bo.path = env->path;
	bo.client = client;
	bo.sched = env->sched;
	bo.ops = &env->echo.ops;
	bo.opaque = &env->echo;
	bo.msg_timeout_ms = 300;
	bo.test_log_unmarked = log_unmarked;
	r = vqs_vu_backend_create(&env->backend, &bo);
	if (r < 0) {
		vqs_sched_destroy(env->sched);
		env->sched = NULL;
	}
	return r;
}

int vu_env_start_with(struct vu_env *env, uint16_t num_queues, bool client,
		      void (*tweak)(struct vqs_vu_device_ops *ops))
{
	return env_start(env, num_queues, client, tweak, false);
}

int vu_env_start_log_unmarked(struct vu_env *env) { return env_start(env, 1, false, NULL, true); }

void vu_env_stop(struct vu_env *env)
{
	vqs_vu_backend_destroy(env->backend);
	if (env->sched)
		vqs_sched_destroy(env->sched);
	unlink(env->path);
}

bool vu_env_wait_disconnects(struct vu_env *env, uint64_t n)
{
	for (int i = 0; i < 1000; i++) {
		struct vqs_vu_backend_stats s;
		vqs_vu_backend_stats(env->backend, &s);
		if (s.disconnects >= n)
			return true;
		usleep(5000);
	}
	return false;
}

void vu_env_frontend_opts(const struct vu_env *env, struct vqs_vu_frontend_opts *o)
{
	vqs_vu_frontend_opts_init(o);
	o->path = env->path;
	o->queue_size = 64;
	o->features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX);
	o->mem_size = 1u << 20;
}

void *vu_wait_used(struct vqs_vu_frontend *f, unsigned q, uint32_t *len)
{
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, q);
	for (int tries = 0; tries < 400; tries++) {
		void *tok = vqs_drv_get_used(dq, len);
		if (tok)
			return tok;
		if (vqs_drv_enable_cb(dq))
			continue;
		struct pollfd p = { .fd = vqs_vu_frontend_call_fd(f, q), .events = POLLIN };
		if (poll(&p, 1, 10) > 0) {
			uint64_t v;
			if (read(p.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				return NULL;
		}
	}
	return NULL;
}

int vu_echo_roundtrip(struct vqs_vu_frontend *f, unsigned q, unsigned count, uint32_t len)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, q);
	if (!dq)
		return -ENOENT;
	uint64_t out = vqs_gmem_alloc(g, len, 64), in = vqs_gmem_alloc(g, len, 64);
	if (!out || !in)
		return -ENOMEM;
	uint8_t *po = vqs_gmem_host(g, out, len), *pi = vqs_gmem_host(g, in, len);
	for (unsigned k = 0; k < count; k++) {
		for (uint32_t b = 0; b < len; b++)
			po[b] = (uint8_t)(k * 7 + b + q);
		memset(pi, 0, len);
		struct vqs_drv_buf bufs[2] = { { out, len }, { in, len } };
		int r = vqs_drv_add(dq, bufs, 1, 1, po, false);
		if (r < 0)
			return r;
		if (vqs_drv_kick_prepare(dq)) {
			uint64_t one = 1;
			if (write(vqs_vu_frontend_kick_fd(f, q), &one, sizeof(one)) < 0)
				return -errno;
		}
		uint32_t got = 0;
		void *tok = vu_wait_used(f, q, &got);
		if (tok != po)
			return -ETIMEDOUT;
		if (got != len || memcmp(po, pi, len) != 0)
			return -EIO;
	}
	return 0;
}

int vu_echo_submit(struct vqs_vu_frontend *f, unsigned q, unsigned count, uint32_t len)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, q);
	uint64_t out = vqs_gmem_alloc(g, len, 64), in = vqs_gmem_alloc(g, len, 64);
	if (!dq || !out || !in)
		return -ENOMEM;
	for (unsigned k = 0; k < count; k++) {
		struct vqs_drv_buf bufs[2] = { { out, len }, { in, len } };
		int r = vqs_drv_add(dq, bufs, 1, 1, vqs_gmem_host(g, out, len), false);
		if (r < 0)
			return r;
	}
	uint64_t one = 1;
	if (vqs_drv_kick_prepare(dq) && write(vqs_vu_frontend_kick_fd(f, q), &one, 8) != 8)
		return -errno;
	return 0;
}

unsigned vu_wait_fds(unsigned want)
{
	unsigned n = vqs_test_count_fds();
	for (int i = 0; i < 400 && n != want; i++) {
		usleep(5000);
		n = vqs_test_count_fds();
	}
	return n;
}

int vu_kick_restart(struct vqs_vu_frontend *f, unsigned q)
{
	uint64_t idx = q;
	int kick = vqs_vu_frontend_kick_fd(f, q);
	return vqs_vu_frontend_request(f, VQS_VU_SET_VRING_KICK, &idx, 8, &kick, 1, true, NULL, 0,
				       NULL);
}

static void *traffic_thread(void *arg)
{
	struct vu_traffic *t = arg;
	while (!atomic_load(&t->stop) && t->err == 0 && (!t->max_calls || t->rounds < t->max_calls)) {
		t->err = vu_echo_roundtrip(t->f, 0, t->count, t->len);
		t->rounds++;
	}
	return NULL;
}

int vu_traffic_start(struct vu_traffic *t)
{
	atomic_store(&t->stop, false);
	t->err = 0;
	t->rounds = 0;
	return -pthread_create(&t->thread, NULL, traffic_thread, t);
}

int vu_traffic_stop(struct vu_traffic *t)
{
	atomic_store(&t->stop, true);
	pthread_join(t->thread, NULL);
	return t->err;
}
