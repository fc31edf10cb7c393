/* SPDX-License-Identifier: MIT */
#include "robust_dev.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void copy_tag(struct vqs_elem *e)
{
	uint64_t tag = 0;
	if (e->out_num && e->iov[0].iov_len >= sizeof(tag))
		memcpy(&tag, e->iov[0].iov_base, sizeof(tag));
	if (e->in_num && e->iov[e->out_num].iov_len >= sizeof(tag))
		memcpy(e->iov[e->out_num].iov_base, &tag, sizeof(tag));
}

static unsigned handle(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	struct robust_dev *d = opaque;
	uint64_t before = atomic_fetch_add_explicit(&d->handled, n, memory_order_relaxed);
	bool due = d->kill_at != KILL_NEVER && before + n > d->kill_after;
	if (due && (d->kill_at == KILL_AFTER_POP || d->kill_at == KILL_AFTER_FLUSH))
		raise(SIGKILL);
	for (unsigned i = 0; i < n; i++) {
		if (due && i == n / 2)
			raise(SIGKILL); /* KILL_AFTER_FILL: half staged, the worker never flushes */
		copy_tag(&reqs[i]->elem);
		vqs_req_complete(reqs[i], sizeof(uint64_t));
	}
	return n;
}

static vqs_handler_fn queue_handler(void *opaque, unsigned qidx, void **handler_opaque)
{
	*handler_opaque = opaque;
	return handle;
}

void robust_dev_init(struct robust_dev *d, uint16_t num_queues)
{
	memset(d, 0, sizeof(*d));
	d->ops = (struct vqs_vu_device_ops){
		.size = sizeof(d->ops),
		.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX),
		.protocol_features = VQS_VU_PROTOCOL_SUPPORTED,
		.num_queues = num_queues,
		.queue_handler = queue_handler,
	};
}

enum robust_kill_at robust_kill_parse(const char *s)
{
	return !s ? KILL_NEVER
	       : !strcmp(s, "pop") ? KILL_AFTER_POP
	       : !strcmp(s, "fill") ? KILL_AFTER_FILL
	       : !strcmp(s, "flush") ? KILL_AFTER_FLUSH
				      : KILL_NEVER;
}

int robust_backend_start(struct robust_backend *rb, struct robust_dev *d, const char *path,
			 uint32_t msg_timeout_ms)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_POOL;
	so.nworkers = 1;
	int r = vqs_sched_create(&rb->sched, &so);
	if (r < 0)
		return r;
	struct vqs_vu_backend_opts bo;
	vqs_vu_backend_opts_init(&bo);
	bo.path = path;
	bo.sched = rb->sched;
	bo.ops = &d->ops;
	bo.opaque = d;
	bo.msg_timeout_ms = msg_timeout_ms;
	r = vqs_vu_backend_create(&rb->b, &bo);
	if (r < 0)
		vqs_sched_destroy(rb->sched);
	return r;
}

void robust_backend_stop(struct robust_backend *rb)
{
	vqs_vu_backend_destroy(rb->b);
	vqs_sched_destroy(rb->sched);
}

int robust_frontend(struct vqs_vu_frontend **f, const char *path, uint16_t num_queues)
{
	struct vqs_vu_frontend_opts o;
	vqs_vu_frontend_opts_init(&o);
	o.path = path;
	o.num_queues = num_queues;
	o.queue_size = 64;
	o.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX);
	o.mem_size = 1u << 20;
	o.timeout_ms = 10000;
	return vqs_vu_frontend_create(f, &o);
}

int robust_traffic_init(struct robust_traffic *t, struct vqs_vu_frontend *f, unsigned q,
			uint64_t total)
{
	memset(t, 0, sizeof(*t));
	t->f = f;
	t->q = q;
	t->total = total;
	t->done = calloc(total, 1);
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	for (unsigned s = 0; s < ROBUST_SLOTS; s++) {
		t->slot[s].out = vqs_gmem_alloc(g, 64, 64);
		t->slot[s].in = vqs_gmem_alloc(g, 64, 64);
		if (!t->slot[s].out || !t->slot[s].in)
			return -ENOMEM;
	}
	return t->done ? 0 : -ENOMEM;
}

void robust_traffic_fini(struct robust_traffic *t) { free(t->done); }

void robust_traffic_submit(struct robust_traffic *t)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(t->f);
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(t->f, t->q);
	for (unsigned s = 0; s < ROBUST_SLOTS && t->submitted < t->total; s++) {
		if (t->slot[s].busy)
			continue;
		t->slot[s].tag = t->submitted;
		memcpy(vqs_gmem_host(g, t->slot[s].out, 8), &t->slot[s].tag, 8);
		memset(vqs_gmem_host(g, t->slot[s].in, 8), 0xff, 8);
		struct vqs_drv_buf b[2] = { { t->slot[s].out, 64 }, { t->slot[s].in, 64 } };
		if (vqs_drv_add(dq, b, 1, 1, &t->slot[s], false) < 0)
			break;
		t->slot[s].busy = true;
		t->submitted++;
	}
	if (vqs_drv_kick_prepare(dq)) {
		uint64_t one = 1;
		if (write(vqs_vu_frontend_kick_fd(t->f, t->q), &one, 8) != 8)
			abort();
	}
}

void robust_traffic_reap(struct robust_traffic *t, int wait_ms)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(t->f);
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(t->f, t->q);
	bool any = false;
	for (;;) {
		uint32_t len;
		typeof(&t->slot[0]) s = vqs_drv_get_used(dq, &len);
		if (!s)
			break;
		any = true;
		if (!s->busy) {
			t->dups++;
			continue;
		}
		uint64_t echoed;
		memcpy(&echoed, vqs_gmem_host(g, s->in, 8), 8);
		if (len != 8 || echoed != s->tag)
			t->wrong++;
		t->done[s->tag]++;
		s->busy = false;
		t->completed++;
	}
	if (!any && wait_ms && !vqs_drv_enable_cb(dq)) {
		struct pollfd p = { .fd = vqs_vu_frontend_call_fd(t->f, t->q), .events = POLLIN };
		uint64_t v;
		if (poll(&p, 1, wait_ms) > 0 && read(p.fd, &v, 8) < 0 && errno != EAGAIN)
			abort();
	}
}

bool robust_traffic_exact(const struct robust_traffic *t)
{
	if (t->dups || t->wrong || t->completed != t->total)
		return false;
	for (uint64_t i = 0; i < t->total; i++)
		if (t->done[i] != 1)
			return false;
	return true;
}

