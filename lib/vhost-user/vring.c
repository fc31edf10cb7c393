/* SPDX-License-Identifier: MIT */
/*
 * A vhost-user ring runs on the scheduler once it has a size, addresses, a kick (or NOFD), is
 * enabled, and its areas are wholly mapped; messages may arrive in several orders (DPDK sends
 * CALL before the memory table, QEMU ENABLE before the features; only a KICK before the ring's
 * size and addresses is refused, in proto.c), so every ring message ends with vu_vring_update()
 * deciding whether the ring can start now.
 */
#include <errno.h>
#include <unistd.h>
#include <string.h>

#include "util/log.h"
#include "vhost-user/backend_internal.h"

bool vu_any_running(const struct vqs_vu_backend *b)
{
	for (unsigned i = 0; i < b->ops.num_queues; i++)
		if (b->rings[i].sq)
			return true;
	return false;
}

static bool enabled(const struct vqs_vu_backend *b, const struct vu_vring *r)
{
	/* Without PROTOCOL_FEATURES a ring is enabled from the start (vhost-user.rst "Ring states"). */
	return r->enabled || !(b->features & VQS_BIT(VQS_VU_F_PROTOCOL_FEATURES));
}

/* Every byte of the three ring areas must lie in mapped memory before the ring may start. */
static int check_areas(struct vqs_vu_backend *b, const struct vu_vring *r)
{
	bool is_packed = (b->features & VQS_BIT(VQS_F_RING_PACKED)) != 0;
	bool event_idx = (b->features & VQS_BIT(VQS_F_EVENT_IDX)) != 0;
	uint64_t len[3], at[3] = { r->addr.desc_user_addr, r->addr.avail_user_addr,
				    r->addr.used_user_addr };
	if (is_packed) {
		len[0] = vqs_vring_packed_desc_size(r->num);
		len[1] = len[2] = sizeof(struct vqs_vring_packed_event);
	} else {
		len[0] = vqs_vring_desc_size(r->num);
		len[1] = vqs_vring_avail_size(r->num) - (event_idx ? 0 : 2);
		len[2] = vqs_vring_used_size(r->num) - (event_idx ? 0 : 2);
	}
	int err = 0;
	vqs_mem_read_lock();
	const struct vqs_mem_table *t = vqs_mem_current(b->mem);
	for (unsigned k = 0; k < 3; k++)
		if (!vqs_mem_uaddr_to_host(t, at[k], len[k]))
			err = -EFAULT;
	vqs_mem_read_unlock();
	return err;
}

/* Scheduler hook, on a worker: the guest broke ring r. The control thread signals its err_fd. */
static void ring_broken(struct vqs_queue *q, enum vqs_vq_err why, void *opaque)
{
	struct vu_vring *r = opaque;
	vqs_warn("vhost-user: ring %td broke: %s", r - r->owner->rings, vqs_vq_err_name(why));
	/* release pairs with the acquire exchange in vu_vring_signal_errors. */
	atomic_store_explicit(&r->err_pending, true, memory_order_release);
	uint64_t one = 1;
	if (write(r->owner->err_event_fd, &one, sizeof(one)) < 0)
		vqs_err("vhost-user: cannot report a broken ring: %s", strerror(errno));
}

void vu_vring_signal_errors(struct vqs_vu_backend *b)
{
	uint64_t n;
	if (read(b->err_event_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		vqs_err("vhost-user: error eventfd: %s", strerror(errno));
	for (unsigned i = 0; i < b->ops.num_queues; i++) {
		struct vu_vring *r = &b->rings[i];
		if (atomic_exchange_explicit(&r->err_pending, false, memory_order_acquire) &&
		    r->err_fd >= 0) {
			uint64_t one = 1;
			if (write(r->err_fd, &one, sizeof(one)) < 0)
				vqs_warn("vhost-user: ring %u error fd: %s", i, strerror(errno));
		}
	}
}

/*
 * VRING_F_LOG: the used ring is logged at log_guest_addr (vhost-user.rst). A packed ring's device
 * writes go to its descriptor ring and device event area, logged at their gpas instead.
 */
static int log_config(struct vqs_vu_backend *b, const struct vu_vring *r,
		      struct vqs_vq_config *cfg)
{
	if (!(r->addr.flags & VQS_VU_VRING_F_LOG))
		return 0;
	cfg->log_ring = true;
	cfg->log_addr = r->addr.log_guest_addr;
	if (!(b->features & VQS_BIT(VQS_F_RING_PACKED)))
		return 0;
	vqs_mem_read_lock();
	const struct vqs_mem_table *t = vqs_mem_current(b->mem);
	int err = vqs_mem_uaddr_to_gpa(t, r->addr.desc_user_addr,
				       vqs_vring_packed_desc_size(r->num), &cfg->log_addr);
	if (err == 0)
		err = vqs_mem_uaddr_to_gpa(t, r->addr.used_user_addr,
					   sizeof(struct vqs_vring_packed_event),
					   &cfg->log_event_addr);
	vqs_mem_read_unlock();
	return err;
}

static int start(struct vqs_vu_backend *b, unsigned i)
{
	struct vu_vring *r = &b->rings[i];
	int err = check_areas(b, r);
	if (err < 0) {
		vqs_info("vhost-user: ring %u areas are not mapped", i);
		return err;
	}
	struct vqs_vq_config cfg = {
		.size = sizeof(cfg),
		.num = r->num,
		.features = b->features,
		.addr_space = VQS_ADDR_UADDR,
		.desc_addr = r->addr.desc_user_addr,
		.driver_addr = r->addr.avail_user_addr,
		.device_addr = r->addr.used_user_addr,
		.mem = b->mem,
	};
	err = log_config(b, r, &cfg);
	if (err == 0)
		err = vqs_vq_configure(r->vq, &cfg);
	if (err == 0)
		err = vqs_vq_set_state(r->vq, &r->base);
	void *region = err == 0 ? vu_inflight_queue(b, i, r->num, &err) : NULL;
	if (err == 0 && region)
		err = vqs_vq_set_inflight(r->vq, region, b->inflight.queue_len, b->inflight.restore);
	struct vqs_queue_opts qo;
	vqs_queue_opts_init(&qo);
	qo.vq = r->vq;
	qo.kick_fd = r->kick_fd;
	qo.call_fd = r->call_fd;
	if (b->ops.iov_per_req)
		qo.iov_per_req = b->ops.iov_per_req;
	qo.handler_nonblocking = b->ops.handlers_nonblocking;
	qo.on_broken = ring_broken;
	qo.on_broken_opaque = r;
	if (err == 0) {
		qo.handler = b->ops.queue_handler(b->opaque, i, &qo.opaque);
		if (b->ops.queue_demand)
			qo.demand = b->ops.queue_demand(b->opaque, i);
		err = qo.handler ? vqs_sched_attach(b->opts.sched, &qo, &r->sq) : -EINVAL;
	}
	if (err < 0) {
		vqs_vq_reset(r->vq);
		r->sq = NULL;
		return err;
	}
	atomic_fetch_add_explicit(&b->st_starts, 1, memory_order_relaxed);
	if (b->ops.queue_state)
		b->ops.queue_state(b->opaque, i, r->sq);
	return 0;
}

int vu_vring_update(struct vqs_vu_backend *b, unsigned i)
{
	struct vu_vring *r = &b->rings[i];
	bool ready = r->num && r->addr_set && r->kicked && enabled(b, r);
	if (ready && !r->sq)
		return start(b, i);
	if (!ready && r->sq)
		vu_vring_stop(b, i);
	return 0;
}

void vu_vring_stop(struct vqs_vu_backend *b, unsigned i)
{
	struct vu_vring *r = &b->rings[i];
	if (!r->sq)
		return;
	/* Tell the device first: once detached the queue is freed, and a device that still held it
	 * (a switch waking a peer's queue) would touch freed memory. */
	if (b->ops.queue_state)
		b->ops.queue_state(b->opaque, i, NULL);
	/* Detach waits until no worker runs the queue and every request it handed out completed,
	 * so the position read next is final. */
	vqs_sched_detach(r->sq);
	r->sq = NULL;
	vqs_vq_get_state(r->vq, &r->base);
	r->base_packed = (b->features & VQS_BIT(VQS_F_RING_PACKED)) != 0;
	vqs_vq_set_inflight(r->vq, NULL, 0, false);
	vqs_vq_reset(r->vq);
	atomic_fetch_add_explicit(&b->st_stops, 1, memory_order_relaxed);
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

void vu_vring_reset(struct vqs_vu_backend *b, unsigned i)
{
	struct vu_vring *r = &b->rings[i];
	vu_vring_stop(b, i);
	close_fd(&r->kick_fd);
	close_fd(&r->call_fd);
	close_fd(&r->err_fd);
	struct vqs_vq *vq = r->vq;
	*r = (struct vu_vring){ .vq = vq, .kick_fd = -1, .call_fd = -1, .err_fd = -1, .owner = b };
}
