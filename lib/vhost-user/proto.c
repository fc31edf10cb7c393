/* SPDX-License-Identifier: MIT */
/*
 * One function per vhost-user request, each working on a message whose shape (payload size, fd
 * count) msg.c already checked; here the values are checked against the device and the
 * connection's state before anything uses them. fds a handler keeps are taken out of the message
 * (set to -1); the caller closes whatever is left.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "vhost-user/backend_internal.h"

/* Every device can be migrated: all it writes into guest memory goes through the rings, which
 * log it (log.c). */
static uint64_t offered_features(const struct vqs_vu_backend *b)
{
	return b->ops.features | VQS_BIT(VQS_VU_F_PROTOCOL_FEATURES) | VQS_BIT(VQS_VU_F_LOG_ALL);
}

static uint64_t offered_protocol(const struct vqs_vu_backend *b)
{
	uint64_t p = b->ops.protocol_features & VQS_VU_PROTOCOL_SUPPORTED;
	if (b->ops.num_queues > 1)
		p |= VQS_BIT(VQS_VU_PROTOCOL_F_MQ);
	if (!b->ops.config_size)
		p &= ~VQS_BIT(VQS_VU_PROTOCOL_F_CONFIG);
	if (!b->ops.save_state || !b->ops.load_state)
		p &= ~VQS_BIT(VQS_VU_PROTOCOL_F_DEVICE_STATE);
	if (!b->ops.send_rarp)
		p &= ~VQS_BIT(VQS_VU_PROTOCOL_F_RARP);
	return p;
}

/* Take fd i out of the message so the caller does not close it. */
static int take_fd(struct vu_msg *m, unsigned i)
{
	int fd = m->fds[i];
	m->fds[i] = -1;
	return fd;
}

static int ring_index(const struct vqs_vu_backend *b, uint64_t index)
{
	return index < b->ops.num_queues ? (int)index : -ERANGE;
}

/* A ring that cannot start yet is not this message's fault: it starts on a later message. */
static void start_waiting_rings(struct vqs_vu_backend *b)
{
	for (unsigned i = 0; i < b->ops.num_queues; i++)
		if (!b->rings[i].sq && vu_vring_update(b, i) < 0)
			vqs_info("vhost-user: ring %u cannot start yet", i);
}

static int set_features(struct vqs_vu_backend *b, uint64_t f)
{
	const uint64_t log_all = VQS_BIT(VQS_VU_F_LOG_ALL);
	if (f & ~offered_features(b))
		return -EINVAL;
	/* A migration switches LOG_ALL while the queues run (QEMU's vhost_dev_set_log); any
	 * other change needs them stopped. */
	bool running = vu_any_running(b);
	if (running && (f & ~log_all) != (b->features & ~log_all))
		return -EBUSY;
	b->features = f;
	atomic_store_explicit(&b->neg_features, f, memory_order_relaxed);
	int err = vu_log_update(b);
	if (err < 0)
		return err;
	if (!running && b->ops.set_features)
		b->ops.set_features(b->opaque, f & ~log_all);
	/* Rings waiting only for "enabled" start now if PROTOCOL_FEATURES was left out. */
	start_waiting_rings(b);
	return 0;
}

static int set_mem_table(struct vqs_vu_backend *b, struct vu_msg *m)
{
	const struct vqs_vu_memory *wm = &m->p.memory;
	struct vqs_mem_region regs[VQS_VU_MEM_TABLE_MAX];
	unsigned n = wm->nregions, mapped;
	int err = 0;
	for (mapped = 0; mapped < n; mapped++)
		if ((err = vu_region_map(&wm->regions[mapped], m->fds[mapped], &regs[mapped])) < 0)
			break;
	if (err == 0)
		err = vqs_mem_set(b->mem, regs, n);
	if (err < 0) {
		for (unsigned i = 0; i < mapped; i++)
			vu_region_unmap(&regs[i]);
		return err;
	}
	/* The frontend may reuse the old memory once acknowledged: no ring may still touch it. */
	vqs_mem_synchronize(b->mem);
	/* Rings that waited for memory (areas unmapped) may start now. */
	start_waiting_rings(b);
	return 0;
}

static int add_mem_reg(struct vqs_vu_backend *b, struct vu_msg *m)
{
	struct vqs_mem_region r;
	if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
		return -EPROTO;
	if (vqs_mem_nregions(b->mem) >= VQS_VU_MAX_MEM_SLOTS)
		return -ENOSPC;
	int err = vu_region_map(&m->p.mem_reg.region, m->fds[0], &r);
	if (err == 0 && (err = vqs_mem_add(b->mem, &r)) < 0)
		vu_region_unmap(&r);
	return err;
}

static int rem_mem_reg(struct vqs_vu_backend *b, struct vu_msg *m)
{
	if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
		return -EPROTO;
	const struct vqs_vu_mem_region *wr = &m->p.mem_reg.region;
	int err = vqs_mem_remove(b->mem, wr->guest_phys_addr, wr->memory_size);
	/* The frontend may reuse the range once acknowledged: no ring may still touch it. */
	if (err == 0)
		vqs_mem_synchronize(b->mem);
	return err;
}

static int set_vring_num(struct vqs_vu_backend *b, const struct vqs_vu_vring_state *s)
{
	int i = ring_index(b, s->index);
	if (i < 0)
		return i;
	if (s->num == 0 || s->num > VQS_VQ_MAX_SIZE ||
	    (!(b->features & VQS_BIT(VQS_F_RING_PACKED)) && (s->num & (s->num - 1))))
		return -EINVAL;
	if (b->rings[i].sq)
		return -EBUSY;
	b->rings[i].num = s->num;
	return vu_vring_update(b, (unsigned)i);
}

static int set_vring_addr(struct vqs_vu_backend *b, const struct vqs_vu_vring_addr *a)
{
	int i = ring_index(b, a->index);
	if (i < 0)
		return i;
	if (a->flags & ~VQS_VU_VRING_F_LOG)
		return -EINVAL;
	if ((a->flags & VQS_VU_VRING_F_LOG) && !(b->features & VQS_BIT(VQS_VU_F_LOG_ALL)))
		return -EINVAL;
	struct vu_vring *r = &b->rings[i];
	if (r->sq) {
		/* A running ring takes only a change of its logging (QEMU sends the same addresses
		 * with VRING_F_LOG set or cleared as a migration starts or ends): it restarts from
		 * where it stopped, configured to log its used ring or not. */
		struct vqs_vu_vring_addr was = r->addr;
		if (was.desc_user_addr != a->desc_user_addr ||
		    was.avail_user_addr != a->avail_user_addr ||
		    was.used_user_addr != a->used_user_addr)
			return -EBUSY;
		vu_vring_stop(b, (unsigned)i);
	}
	r->addr = *a;
	r->addr_set = true;
	return vu_vring_update(b, (unsigned)i);
}

static int set_vring_base(struct vqs_vu_backend *b, const struct vqs_vu_vring_state *s)
{
	int i = ring_index(b, s->index);
	if (i < 0)
		return i;
	if (b->rings[i].sq)
		return -EBUSY;
	struct vqs_vq_state st = { 0 };
	if (b->features & VQS_BIT(VQS_F_RING_PACKED)) {
		/* vhost-user.rst: bits 0-14 the next avail slot, 15 its wrap counter; 16-30 the
		 * next used slot, 31 its wrap counter. DPDK virtio-user and older QEMU send the
		 * avail half only (upper bits 0): used then resumes where avail does, as after
		 * any stop. The ring checks both slots against its size when it starts. */
		uint16_t avail = (uint16_t)s->num, used = (uint16_t)(s->num >> 16);
		if (used == 0)
			used = avail;
		st.last_avail_idx = avail & 0x7fff;
		st.avail_wrap = avail >> 15;
		st.used_idx = used & 0x7fff;
		st.used_wrap = used >> 15;
	} else {
		if (s->num > 0xffff)
			return -EINVAL;
		st.last_avail_idx = st.used_idx = (uint16_t)s->num;
	}
	b->rings[i].base = st;
	b->rings[i].base_packed = (b->features & VQS_BIT(VQS_F_RING_PACKED)) != 0;
	return 0;
}

static int get_vring_base(struct vqs_vu_backend *b, struct vu_msg *m, struct vu_msg *reply)
{
	int i = ring_index(b, m->p.state.index);
	if (i < 0)
		return i;
	struct vu_vring *r = &b->rings[i];
	vu_vring_stop(b, (unsigned)i);
	/* The ring stays stopped until the next SET_VRING_KICK. */
	r->kicked = false;
	if (r->kick_fd >= 0)
		close(r->kick_fd);
	r->kick_fd = -1;
	uint32_t num = r->base.last_avail_idx;
	if (r->base_packed)
		num = (num & 0x7fffu) | ((uint32_t)r->base.avail_wrap << 15) |
		      (uint32_t)(r->base.used_idx & 0x7fffu) << 16 | (uint32_t)r->base.used_wrap << 31;
	reply->p.state = (struct vqs_vu_vring_state){ (uint32_t)i, num };
	return sizeof(reply->p.state);
}

static int set_vring_fd(struct vqs_vu_backend *b, struct vu_msg *m)
{
	uint64_t v = m->p.u64;
	int i = ring_index(b, v & VQS_VU_VRING_IDX_MASK);
	if (i < 0)
		return i;
	struct vu_vring *r = &b->rings[i];
	/* KICK is the last message for a ring in every real frontend's sequence (QEMU's
	 * vhost_virtqueue_start and DPDK virtio-user both send NUM, BASE, ADDR, then KICK; CALL
	 * may come at any time): a kick for a ring without a size or addresses is out of order
	 * (issue 6) and refused, its fd closed with the message. */
	if (m->hdr.request == VQS_VU_SET_VRING_KICK && (!r->num || !r->addr_set))
		return -EPROTO;
	int fd = (v & VQS_VU_VRING_NOFD_MASK) ? -1 : take_fd(m, 0);
	int *slot = m->hdr.request == VQS_VU_SET_VRING_KICK   ? &r->kick_fd
		    : m->hdr.request == VQS_VU_SET_VRING_CALL ? &r->call_fd
							      : &r->err_fd;
	int old = *slot;
	*slot = fd;
	if (r->sq && m->hdr.request != VQS_VU_SET_VRING_ERR) {
		int err = vqs_queue_set_fds(r->sq, r->kick_fd, r->call_fd);
		if (err < 0) {
			*slot = old;
			if (fd >= 0)
				close(fd);
			return err;
		}
	}
	if (old >= 0)
		close(old);
	if (m->hdr.request == VQS_VU_SET_VRING_KICK)
		r->kicked = true;
	return vu_vring_update(b, (unsigned)i);
}

static int set_vring_enable(struct vqs_vu_backend *b, const struct vqs_vu_vring_state *s)
{
	int i = ring_index(b, s->index);
	if (i < 0)
		return i;
	if (s->num > 1)
		return -EINVAL;
	b->rings[i].enabled = s->num == 1;
	return vu_vring_update(b, (unsigned)i);
}

static int config_range(const struct vqs_vu_backend *b, const struct vqs_vu_config *c)
{
	uint32_t end;
	if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_CONFIG))
		return -EPROTO;
	if (__builtin_add_overflow(c->offset, c->size, &end) || end > b->ops.config_size)
		return -EINVAL;
	return 0;
}

static int get_config(struct vqs_vu_backend *b, struct vu_msg *m, struct vu_msg *reply)
{
	struct vqs_vu_config c = m->p.config;
	int err = config_range(b, &c);
	if (err == 0 && !b->ops.get_config)
		err = -ENOTSUP;
	if (err == 0)
		err = b->ops.get_config(b->opaque, c.offset, c.region, c.size);
	if (err < 0)
		return err;
	reply->p.config = c;
	return (int)(12 + c.size);
}

static int set_config(struct vqs_vu_backend *b, const struct vqs_vu_config *c)
{
	int err = config_range(b, c);
	if (err == 0 && !b->ops.set_config)
		err = -ENOTSUP;
	return err < 0 ? err : b->ops.set_config(b->opaque, c->offset, c->region, c->size);
}

/* The address a migrated guest is announced by: a station's (unicast; all zeros is no
 * station), which is what a switch learns. */
static int send_rarp(struct vqs_vu_backend *b, const struct vu_msg *m)
{
	static const uint8_t zero[VQS_VU_MAC_LEN];
	const uint8_t *mac = m->p.bytes;
	if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_RARP))
		return -EPROTO;
	if ((mac[0] & 1) || !memcmp(mac, zero, sizeof(zero)))
		return -EINVAL;
	return b->ops.send_rarp(b->opaque, mac);
}

static int reply_u64(struct vu_msg *reply, uint64_t v)
{
	reply->p.u64 = v;
	return sizeof(uint64_t);
}

int vu_handle(struct vqs_vu_backend *b, struct vu_msg *m, struct vu_msg *reply, int *reply_fd)
{
	*reply_fd = -1;
	switch (m->hdr.request) {
	case VQS_VU_GET_FEATURES:
		return reply_u64(reply, offered_features(b));
	case VQS_VU_SET_FEATURES:
		return set_features(b, m->p.u64);
	case VQS_VU_GET_PROTOCOL_FEATURES:
		return reply_u64(reply, offered_protocol(b));
	case VQS_VU_SET_PROTOCOL_FEATURES:
		if (m->p.u64 & ~offered_protocol(b))
			return -EINVAL;
		b->protocol_features = m->p.u64;
		return 0;
	case VQS_VU_SET_OWNER:
		return 0;
	case VQS_VU_RESET_OWNER: /* what QEMU sends for a reset without RESET_DEVICE */
		vu_device_reset(b);
		return 0;
	case VQS_VU_RESET_DEVICE:
		if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_RESET_DEVICE))
			return -EPROTO;
		vu_device_reset(b);
		return 0;
	case VQS_VU_SET_MEM_TABLE:
		return set_mem_table(b, m);
	case VQS_VU_ADD_MEM_REG:
		return add_mem_reg(b, m);
	case VQS_VU_REM_MEM_REG:
		return rem_mem_reg(b, m);
	case VQS_VU_GET_MAX_MEM_SLOTS:
		if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS))
			return -EPROTO;
		return reply_u64(reply, VQS_VU_MAX_MEM_SLOTS);
	case VQS_VU_SET_LOG_BASE:
		return vu_set_log_base(b, &m->p.log, m->fds[0]);
	case VQS_VU_SET_LOG_FD:
		return vu_set_log_fd(b, take_fd(m, 0));
	case VQS_VU_SET_VRING_NUM:
		return set_vring_num(b, &m->p.state);
	case VQS_VU_SET_VRING_ADDR:
		return set_vring_addr(b, &m->p.addr);
	case VQS_VU_SET_VRING_BASE:
		return set_vring_base(b, &m->p.state);
	case VQS_VU_GET_VRING_BASE:
		return get_vring_base(b, m, reply);
	case VQS_VU_SET_VRING_KICK:
	case VQS_VU_SET_VRING_CALL:
	case VQS_VU_SET_VRING_ERR:
		return set_vring_fd(b, m);
	case VQS_VU_SET_VRING_ENABLE:
		return set_vring_enable(b, &m->p.state);
	case VQS_VU_GET_QUEUE_NUM:
		return reply_u64(reply, b->ops.num_queues);
	case VQS_VU_SEND_RARP:
		return send_rarp(b, m);
	case VQS_VU_SET_BACKEND_REQ_FD:
		/* Nothing is ever sent backend-to-frontend: the channel is accepted and closed. */
		return 0;
	case VQS_VU_GET_CONFIG:
		return get_config(b, m, reply);
	case VQS_VU_SET_CONFIG:
		return set_config(b, &m->p.config);
	case VQS_VU_GET_INFLIGHT_FD: {
		struct vqs_vu_inflight in = m->p.inflight;
		int err = vu_inflight_get(b, &in, reply_fd);
		if (err < 0)
			return err;
		reply->p.inflight = in;
		return sizeof(in);
	}
	case VQS_VU_SET_INFLIGHT_FD:
		return vu_inflight_set(b, &m->p.inflight, m->fds[0]);
	case VQS_VU_SET_STATUS:
		if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_STATUS) || m->p.u64 > 0xff)
			return -EINVAL;
		/* virtio 2.1: writing 0 resets the device */
		if (m->p.u64 == 0)
			vu_device_reset(b);
		b->status = (uint8_t)m->p.u64;
		return 0;
	case VQS_VU_GET_STATUS:
		if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_STATUS))
			return -EPROTO;
		return reply_u64(reply, b->status);
	case VQS_VU_SET_DEVICE_STATE_FD: {
		uint64_t v;
		int err = vu_state_set_fd(b, &m->p.dstate, m->fds[0], &v);
		return err < 0 ? err : reply_u64(reply, v);
	}
	case VQS_VU_CHECK_DEVICE_STATE:
		if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_DEVICE_STATE))
			return -EPROTO;
		return reply_u64(reply, vu_state_check(b));
	default:
		return -ENOSYS;
	}
}
