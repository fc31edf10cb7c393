/* SPDX-License-Identifier: MIT */
/*
 * The driver side of vhost-user, as a VMM would be: guest memory in a memfd arena, driver rings
 * in it, kick/call eventfds, and the message sequence QEMU sends. The driver rings outlive
 * connections, so a harness can keep its requests in flight across a backend restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/log.h"
#include "vhost-user/msg.h"
#include "vhost-user/sock.h"

#define RING_FEATURES                                                                            \
	(VQS_BIT(VQS_F_RING_PACKED) | VQS_BIT(VQS_F_EVENT_IDX) | VQS_BIT(VQS_F_INDIRECT_DESC) |   \
	 VQS_BIT(VQS_F_IN_ORDER))
/* virtio status bits: ACKNOWLEDGE | DRIVER | FEATURES_OK | DRIVER_OK */
#define STATUS_RUNNING (1u | 2u | 8u | 4u)

struct vqs_vu_frontend {
	struct vqs_vu_frontend_opts o;
	char path[108];
	int sock, listen_fd;
	struct vqs_gmem *gmem;
	struct vqs_drv_vq **vqs; /* NULL entries until the first setup */
	int *kick, *call;
	uint64_t features, protocol;
	int inflight_fd;         /* kept across reconnects; -1 when none */
	struct vqs_vu_inflight inflight;
	uint64_t offered;        /* virtio features the backend offered */
	/* Dirty log (vqs_vu_frontend_set_log): a memfd bitmap kept for the frontend's life. */
	int log_fd;
	uint8_t *log;
	size_t log_len;
	bool logging;
	/* GET_VRING_BASE answers of the last clean disconnect, where the next setup resumes. */
	uint32_t *stop_base;
	bool stop_base_valid;
};

void vqs_vu_frontend_opts_init(struct vqs_vu_frontend_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->num_queues = 1;
	o->queue_size = 256;
	o->protocol_features = VQS_VU_PROTOCOL_SUPPORTED;
	o->mem_size = 4u << 20;
	o->gpa_base = 0x100000;
	o->timeout_ms = 2000;
}

void vqs_vu_frontend_destroy(struct vqs_vu_frontend *f)
{
	if (!f)
		return;
	vqs_vu_frontend_disconnect(f, false);
	if (f->listen_fd >= 0) {
		close(f->listen_fd);
		unlink(f->path);
	}
	for (unsigned i = 0; i < f->o.num_queues; i++) {
		if (f->vqs && f->vqs[i])
			vqs_drv_vq_destroy(f->vqs[i]);
		if (f->kick && f->kick[i] >= 0)
			close(f->kick[i]);
		if (f->call && f->call[i] >= 0)
			close(f->call[i]);
	}
	if (f->inflight_fd >= 0)
		close(f->inflight_fd);
	if (f->log)
		munmap(f->log, f->log_len);
	if (f->log_fd >= 0)
		close(f->log_fd);
	free(f->stop_base);
	free(f->vqs);
	free(f->kick);
	free(f->call);
	vqs_gmem_destroy(f->gmem);
	free(f);
}

int vqs_vu_frontend_create(struct vqs_vu_frontend **out, const struct vqs_vu_frontend_opts *o)
{
	if (!o || o->size < sizeof(*o) || !o->path || !o->num_queues || !o->queue_size ||
	    o->queue_size > VQS_VQ_MAX_SIZE || !o->mem_size)
		return -EINVAL;
	if (strlen(o->path) >= sizeof(((struct vqs_vu_frontend *)0)->path))
		return -ENAMETOOLONG;
	struct vqs_vu_frontend *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->o = *o;
	strcpy(f->path, o->path);
	f->o.path = f->path;
	f->sock = f->listen_fd = f->inflight_fd = f->log_fd = -1;
	f->vqs = calloc(o->num_queues, sizeof(*f->vqs));
	f->stop_base = calloc(o->num_queues, sizeof(*f->stop_base));
	f->kick = malloc(o->num_queues * sizeof(int));
	f->call = malloc(o->num_queues * sizeof(int));
	int err = f->vqs && f->kick && f->call && f->stop_base ? 0 : -ENOMEM;
	for (unsigned i = 0; f->kick && f->call && i < o->num_queues; i++)
		f->kick[i] = f->call[i] = -1;
	for (unsigned i = 0; err == 0 && i < o->num_queues; i++) {
		f->kick[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		f->call[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (f->kick[i] < 0 || f->call[i] < 0)
			err = -errno;
	}
	if (err == 0)
		err = vqs_gmem_create(&f->gmem, o->gpa_base, o->mem_size);
	if (err < 0) {
		vqs_vu_frontend_destroy(f);
		return err;
	}
	*out = f;
	return 0;
}

int vqs_vu_frontend_connect(struct vqs_vu_frontend *f)
{
	if (f->sock >= 0)
		return -EISCONN;
	int tmo = (int)f->o.timeout_ms;
	if (f->o.server) {
		if (f->listen_fd < 0 && (f->listen_fd = vu_sock_listen(f->path)) < 0)
			return f->listen_fd;
		int r = vu_wait_readable(f->listen_fd, tmo);
		if (r < 0)
			return r;
		f->sock = vu_sock_accept(f->listen_fd, tmo);
		return f->sock < 0 ? f->sock : 0;
	}
	uint64_t deadline = vqs_now_ns() + (uint64_t)tmo * 1000000u;
	for (;;) {
		f->sock = vu_sock_connect(f->path, tmo);
		if (f->sock >= 0 || vqs_now_ns() >= deadline)
			return f->sock < 0 ? f->sock : 0;
		poll(NULL, 0, 5);
	}
}

int vqs_vu_frontend_stop(struct vqs_vu_frontend *f)
{
	if (f->sock < 0)
		return -ENOTCONN;
	int err = 0;
	/* As a migration moves them to the destination, the answers are where the next setup
	 * resumes; after an unclean end it reads the position from the ring itself. */
	f->stop_base_valid = false;
	for (unsigned i = 0; i < f->o.num_queues && f->vqs[i]; i++) {
		struct vqs_vu_vring_state st = { i, 0 }, rep;
		int r = vqs_vu_frontend_request(f, VQS_VU_GET_VRING_BASE, &st, sizeof(st), NULL, 0,
						false, &rep, sizeof(rep), NULL);
		if (r == sizeof(rep) && rep.index == i)
			f->stop_base[i] = rep.num;
		else if (err == 0)
			err = r < 0 ? r : -EPROTO;
	}
	f->stop_base_valid = err == 0 && f->vqs[0];
	return err;
}

int vqs_vu_frontend_disconnect(struct vqs_vu_frontend *f, bool clean)
{
	if (f->sock < 0)
		return 0;
	int err = clean ? vqs_vu_frontend_stop(f) : 0;
	if (!clean)
		f->stop_base_valid = false;
	close(f->sock);
	f->sock = -1;
	return err;
}

int vqs_vu_frontend_send_raw(struct vqs_vu_frontend *f, const void *buf, size_t len,
			     const int *fds, unsigned nfds)
{
	return f->sock < 0 ? -ENOTCONN : vu_send_bytes(f->sock, buf, len, fds, nfds);
}

int vqs_vu_frontend_recv_raw(struct vqs_vu_frontend *f, struct vqs_vu_hdr *hdr, void *payload,
			     uint32_t cap, uint32_t timeout_ms)
{
	struct vu_msg m;
	if (f->sock < 0)
		return -ENOTCONN;
	int r = vu_msg_recv(f->sock, &m, (int)timeout_ms);
	if (r < 0)
		return r == -EBADMSG ? -ECONNRESET : r;
	vu_msg_close_fds(&m);
	*hdr = m.hdr;
	memcpy(payload, m.p.bytes, m.hdr.size < cap ? m.hdr.size : cap);
	return (int)m.hdr.size;
}

int vqs_vu_frontend_request(struct vqs_vu_frontend *f, uint32_t request, const void *payload,
			    uint32_t len, const int *fds, unsigned nfds, bool ack, void *reply,
			    uint32_t reply_len, int *reply_fd)
{
	if (reply_fd)
		*reply_fd = -1;
	if (f->sock < 0)
		return -ENOTCONN;
	bool has_reply = vu_request_has_reply(request);
	ack = ack && !has_reply && (f->protocol & VQS_BIT(VQS_VU_PROTOCOL_F_REPLY_ACK));
	struct vqs_vu_hdr h = { request, VQS_VU_VERSION | (ack ? VQS_VU_FLAG_NEED_REPLY : 0), len };
	int r = vu_msg_send(f->sock, &h, payload, fds, nfds);
	if (r < 0 || (!has_reply && !ack))
		return r == -EPIPE ? -ECONNRESET : r;
	struct vu_msg m;
	r = vu_msg_recv(f->sock, &m, (int)f->o.timeout_ms);
	if (r < 0)
		return r == -EBADMSG ? -ECONNRESET : r;
	if (m.hdr.request != request || !(m.hdr.flags & VQS_VU_FLAG_REPLY) ||
	    (ack && m.hdr.size != sizeof(uint64_t)) || (!ack && m.hdr.size > reply_len)) {
		vu_msg_close_fds(&m);
		return -EPROTO;
	}
	if (ack) {
		vu_msg_close_fds(&m);
		return m.p.u64 ? -EPROTO : 0;
	}
	if (reply_len) /* reply may be NULL when no payload is expected (reply_len 0) */
		memcpy(reply, m.p.bytes, m.hdr.size);
	if (reply_fd && m.nfds == 1) {
		*reply_fd = m.fds[0];
		m.nfds = 0;
	}
	vu_msg_close_fds(&m);
	return (int)m.hdr.size;
}

static int get_u64(struct vqs_vu_frontend *f, uint32_t request, uint64_t *v)
{
	int r = vqs_vu_frontend_request(f, request, NULL, 0, NULL, 0, false, v, sizeof(*v), NULL);
	return r < 0 ? r : r == sizeof(*v) ? 0 : -EPROTO;
}

static int set_u64(struct vqs_vu_frontend *f, uint32_t request, uint64_t v)
{
	return vqs_vu_frontend_request(f, request, &v, sizeof(v), NULL, 0, true, NULL, 0, NULL);
}

static uint64_t log_feature(const struct vqs_vu_frontend *f)
{
	return f->logging ? VQS_BIT(VQS_VU_F_LOG_ALL) : 0;
}

static int negotiate(struct vqs_vu_frontend *f)
{
	uint64_t offered, proto = 0, features;
	int r = vqs_vu_frontend_request(f, VQS_VU_SET_OWNER, NULL, 0, NULL, 0, false, NULL, 0,
					NULL);
	if (r == 0)
		r = get_u64(f, VQS_VU_GET_FEATURES, &offered);
	if (r < 0)
		return r;
	f->offered = offered;
	features = offered & (f->o.features | VQS_BIT(VQS_VU_F_PROTOCOL_FEATURES));
	f->protocol = 0;
	if (features & VQS_BIT(VQS_VU_F_PROTOCOL_FEATURES)) {
		r = get_u64(f, VQS_VU_GET_PROTOCOL_FEATURES, &proto);
		if (r == 0)
			r = set_u64(f, VQS_VU_SET_PROTOCOL_FEATURES, proto &= f->o.protocol_features);
		if (r < 0)
			return r;
		f->protocol = proto;
	}
	if (f->o.num_queues > 1) {
		uint64_t nq = 0;
		if (!(proto & VQS_BIT(VQS_VU_PROTOCOL_F_MQ)))
			return -ENOTSUP;
		if ((r = get_u64(f, VQS_VU_GET_QUEUE_NUM, &nq)) < 0)
			return r;
		if (nq < f->o.num_queues)
			return -ENOTSUP;
	}
	/* The driver rings were built for one feature set: a reconnect must get the same. */
	if (f->vqs[0] && features != f->features)
		return -EPROTO;
	f->features = features;
	return set_u64(f, VQS_VU_SET_FEATURES, features | log_feature(f));
}

static uint64_t uaddr(const struct vqs_vu_frontend *f, uint64_t gpa)
{
	return (uint64_t)(uintptr_t)vqs_gmem_host(f->gmem, gpa, 1);
}

static int send_mem_table(struct vqs_vu_frontend *f)
{
	struct vqs_vu_memory mem = { .nregions = 1 };
	mem.regions[0] = (struct vqs_vu_mem_region){
		.guest_phys_addr = vqs_gmem_base(f->gmem),
		.memory_size = vqs_gmem_size(f->gmem),
		.userspace_addr = uaddr(f, vqs_gmem_base(f->gmem)),
		.mmap_offset = 0,
	};
	int fd = vqs_gmem_fd(f->gmem);
	return vqs_vu_frontend_request(f, VQS_VU_SET_MEM_TABLE, &mem,
				       8 + sizeof(struct vqs_vu_mem_region), &fd, 1, true, NULL, 0,
				       NULL);
}

/* Keep the backend's inflight region for the whole life of the frontend: after a backend
 * restart, the same fd goes back so the new backend finds what the old one had in flight. */
static int send_inflight(struct vqs_vu_frontend *f)
{
	if (!(f->protocol & VQS_BIT(VQS_VU_PROTOCOL_F_INFLIGHT_SHMFD)))
		return 0;
	if (f->inflight_fd < 0) {
		struct vqs_vu_inflight q = { .num_queues = f->o.num_queues,
					     .queue_size = f->o.queue_size };
		int r = vqs_vu_frontend_request(f, VQS_VU_GET_INFLIGHT_FD, &q, sizeof(q), NULL, 0,
						false, &f->inflight, sizeof(f->inflight),
						&f->inflight_fd);
		if (r < 0)
			return r;
		if (r != sizeof(q) || f->inflight_fd < 0)
			return -EPROTO;
	}
	return vqs_vu_frontend_request(f, VQS_VU_SET_INFLIGHT_FD, &f->inflight, sizeof(f->inflight),
				       &f->inflight_fd, 1, true, NULL, 0, NULL);
}

/* Packed: slot 0 with both wrap counters set, as a fresh packed ring starts. */
#define PACKED_FRESH_BASE 0x80008000u

/*
 * Where the backend resumes after a reconnect, read from the driver ring: the device's used
 * position, given as the next avail index too. That is exact for a backend that stopped (it
 * completes everything it popped before it stops, so it resumes popping where it stopped using),
 * and after a crash the inflight region overrides it (the backend resumes after the chains it
 * recorded in flight, and resubmits them). Split sends the used idx (vhost-user.rst: the used
 * half is in memory); packed sends both halves, avail in bits 0-15 and used in bits 16-31, each
 * an index with its wrap counter in the top bit.
 */
static int ring_base(struct vqs_vu_frontend *f, unsigned i, uint32_t *base)
{
	struct vqs_drv_pos pos;
	int r = vqs_drv_position(f->vqs[i], &pos);
	if (r < 0)
		return r;
	if (!(f->features & VQS_BIT(VQS_F_RING_PACKED))) {
		*base = pos.used_idx;
		return 0;
	}
	uint32_t half = pos.used_idx | (pos.used_wrap ? 1u << 15 : 0);
	*base = half | half << 16;
	return 0;
}

/* SET_VRING_ADDR of ring i; while logging with VRING_F_LOG and the used area's gpa, as QEMU. */
static int send_ring_addr(struct vqs_vu_frontend *f, unsigned i)
{
	uint64_t desc, drv, dev;
	vqs_drv_vq_addrs(f->vqs[i], &desc, &drv, &dev);
	struct vqs_vu_vring_addr a = { .index = i, .desc_user_addr = uaddr(f, desc),
				       .avail_user_addr = uaddr(f, drv),
				       .used_user_addr = uaddr(f, dev),
				       .flags = f->logging ? VQS_VU_VRING_F_LOG : 0,
				       .log_guest_addr = dev };
	return vqs_vu_frontend_request(f, VQS_VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0, true, NULL,
				       0, NULL);
}

static int setup_ring(struct vqs_vu_frontend *f, unsigned i)
{
	uint32_t base = (f->features & VQS_BIT(VQS_F_RING_PACKED)) ? PACKED_FRESH_BASE : 0;
	int r = 0;
	if (!f->vqs[i]) {
		struct vqs_drv_vq_config c = { .size = sizeof(c), .num = f->o.queue_size,
					       .features = f->features & RING_FEATURES,
					       .gmem = f->gmem };
		r = vqs_drv_vq_create(&f->vqs[i], &c);
	} else if (f->stop_base_valid) {
		base = f->stop_base[i];
	} else {
		r = ring_base(f, i, &base);
	}
	if (r < 0)
		return r;
	struct vqs_vu_vring_state num = { i, f->o.queue_size }, st = { i, base }, en = { i, 1 };
	r = vqs_vu_frontend_request(f, VQS_VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0, true, NULL,
				    0, NULL);
	if (r == 0)
		r = vqs_vu_frontend_request(f, VQS_VU_SET_VRING_BASE, &st, sizeof(st), NULL, 0, true,
					    NULL, 0, NULL);
	if (r == 0)
		r = send_ring_addr(f, i);
	uint64_t idx = i;
	if (r == 0)
		r = vqs_vu_frontend_request(f, VQS_VU_SET_VRING_CALL, &idx, 8, &f->call[i], 1, true,
					    NULL, 0, NULL);
	if (r == 0)
		r = vqs_vu_frontend_request(f, VQS_VU_SET_VRING_KICK, &idx, 8, &f->kick[i], 1, true,
					    NULL, 0, NULL);
	if (r == 0 && (f->features & VQS_BIT(VQS_VU_F_PROTOCOL_FEATURES)))
		r = vqs_vu_frontend_request(f, VQS_VU_SET_VRING_ENABLE, &en, sizeof(en), NULL, 0,
					    true, NULL, 0, NULL);
	return r;
}

/* SET_LOG_BASE with the bitmap, created the first time: a bit per page from gpa 0 to the end of
 * guest memory, in whole u64 words as QEMU sizes it. */
static int send_log_base(struct vqs_vu_frontend *f)
{
	if (!f->log) {
		uint64_t end = vqs_gmem_base(f->gmem) + vqs_gmem_size(f->gmem);
		uint64_t pages = (end + VQS_MEM_LOG_PAGE - 1) / VQS_MEM_LOG_PAGE;
		size_t len = (size_t)((pages + 63) / 64 * 8);
		int fd = memfd_create("vqs-dirty-log", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		void *p = ftruncate(fd, (off_t)len) < 0
				  ? MAP_FAILED
				  : mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			int e = -errno;
			close(fd);
			return e;
		}
		f->log_fd = fd;
		f->log = p;
		f->log_len = len;
	}
	struct vqs_vu_log l = { .mmap_size = f->log_len, .mmap_offset = 0 };
	return vqs_vu_frontend_request(f, VQS_VU_SET_LOG_BASE, &l, sizeof(l), &f->log_fd, 1, false,
				       NULL, 0, NULL);
}

int vqs_vu_frontend_negotiate(struct vqs_vu_frontend *f)
{
	int r = negotiate(f);
	if (r == 0)
		r = send_mem_table(f);
	if (r == 0 && f->logging)
		r = send_log_base(f);
	return r;
}

int vqs_vu_frontend_set_log(struct vqs_vu_frontend *f, bool on)
{
	if (f->sock < 0)
		return -ENOTCONN;
	if (!(f->offered & VQS_BIT(VQS_VU_F_LOG_ALL)) ||
	    !(f->protocol & VQS_BIT(VQS_VU_PROTOCOL_F_LOG_SHMFD)))
		return -ENOTSUP;
	int r = on ? send_log_base(f) : 0;
	if (r < 0)
		return r;
	f->logging = on;
	r = set_u64(f, VQS_VU_SET_FEATURES, f->features | log_feature(f));
	for (unsigned i = 0; r == 0 && i < f->o.num_queues && f->vqs[i]; i++)
		r = send_ring_addr(f, i);
	return r;
}

size_t vqs_vu_frontend_log_sync(struct vqs_vu_frontend *f, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < len && i < f->log_len; i++)
		out[i] = atomic_exchange_explicit((_Atomic uint8_t *)&f->log[i], 0,
						  memory_order_acquire);
	return f->log_len;
}

int vqs_vu_frontend_setup(struct vqs_vu_frontend *f)
{
	int r = vqs_vu_frontend_negotiate(f);
	if (r == 0)
		r = send_inflight(f);
	for (unsigned i = 0; r == 0 && i < f->o.num_queues; i++)
		r = setup_ring(f, i);
	if (r == 0 && (f->protocol & VQS_BIT(VQS_VU_PROTOCOL_F_STATUS)))
		r = set_u64(f, VQS_VU_SET_STATUS, STATUS_RUNNING);
	if (r < 0)
		vqs_info("vhost-user frontend: setup failed: %s", strerror(-r));
	return r;
}

struct vqs_gmem *vqs_vu_frontend_gmem(struct vqs_vu_frontend *f) { return f->gmem; }

struct vqs_drv_vq *vqs_vu_frontend_vq(struct vqs_vu_frontend *f, unsigned i)
{
	return i < f->o.num_queues ? f->vqs[i] : NULL;
}

int vqs_vu_frontend_kick_fd(const struct vqs_vu_frontend *f, unsigned i)
{
	return i < f->o.num_queues ? f->kick[i] : -EINVAL;
}

int vqs_vu_frontend_call_fd(const struct vqs_vu_frontend *f, unsigned i)
{
	return i < f->o.num_queues ? f->call[i] : -EINVAL;
}

uint64_t vqs_vu_frontend_features(const struct vqs_vu_frontend *f) { return f->features; }
uint64_t vqs_vu_frontend_protocol_features(const struct vqs_vu_frontend *f) { return f->protocol; }
int vqs_vu_frontend_sock(const struct vqs_vu_frontend *f) { return f->sock; }

/* ---- device state ---- */

/* SET_DEVICE_STATE_FD with `give` (our other end stays with us in *keep); the backend's own
 * channel replaces *keep when it returns one. */
static int state_channel(struct vqs_vu_frontend *f, uint32_t direction, int give, int *keep)
{
	if (!(f->protocol & VQS_BIT(VQS_VU_PROTOCOL_F_DEVICE_STATE)))
		return -ENOTSUP;
	struct vqs_vu_device_state p = { direction, VQS_VU_STATE_PHASE_STOPPED };
	uint64_t v = 0;
	int theirs = -1;
	int r = vqs_vu_frontend_request(f, VQS_VU_SET_DEVICE_STATE_FD, &p, sizeof(p), &give, 1,
					false, &v, sizeof(v), &theirs);
	if (r >= 0 && (r != sizeof(v) || (v & 0xff)))
		r = -EPROTO;
	if (r >= 0 && !(v & VQS_VU_STATE_NO_FD)) {
		if (theirs < 0)
			r = -EPROTO;
		else {
			close(*keep);
			*keep = theirs;
			theirs = -1;
		}
	}
	if (theirs >= 0)
		close(theirs);
	return r < 0 ? r : 0;
}

static int check_state(struct vqs_vu_frontend *f)
{
	uint64_t v;
	int r = get_u64(f, VQS_VU_CHECK_DEVICE_STATE, &v);
	return r < 0 ? r : v ? -EIO : 0;
}

int vqs_vu_frontend_save_state(struct vqs_vu_frontend *f, void **blob, size_t *len)
{
	int p[2];
	*blob = NULL;
	*len = 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	int r = state_channel(f, VQS_VU_STATE_SAVE, p[1], &p[0]);
	close(p[1]);
	size_t cap = 0;
	char *buf = NULL;
	while (r == 0) {
		if (*len == cap) {
			char *nb = cap < VQS_VU_DEVICE_STATE_MAX ? realloc(buf, cap ? cap * 2 : 4096)
								 : NULL;
			if (!nb) {
				r = cap ? -EFBIG : -ENOMEM;
				break;
			}
			buf = nb;
			cap = cap ? cap * 2 : 4096;
		}
		r = vu_wait_readable(p[0], (int)f->o.timeout_ms);
		ssize_t n = r < 0 ? 0 : read(p[0], buf + *len, cap - *len);
		if (n < 0)
			r = errno == EINTR || errno == EAGAIN ? 0 : -errno;
		else if (n == 0)
			break;
		else
			*len += (size_t)n;
	}
	close(p[0]);
	if (r == 0)
		r = check_state(f);
	if (r < 0) {
		free(buf);
		*len = 0;
		return r;
	}
	*blob = buf;
	return 0;
}

int vqs_vu_frontend_load_state(struct vqs_vu_frontend *f, const void *blob, size_t len)
{
	/* A socket rather than a pipe: a backend that stops reading costs an EPIPE here
	 * (MSG_NOSIGNAL), not a SIGPIPE. */
	int p[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p) < 0)
		return -errno;
	int r = state_channel(f, VQS_VU_STATE_LOAD, p[0], &p[1]);
	close(p[0]);
	for (size_t done = 0; r == 0 && done < len;) {
		ssize_t n = send(p[1], (const char *)blob + done, len - done, MSG_NOSIGNAL);
		if (n < 0 && errno != EINTR)
			r = -errno;
		else if (n > 0)
			done += (size_t)n;
	}
	close(p[1]); /* EOF: the whole state is there */
	return r < 0 ? r : check_state(f);
}
