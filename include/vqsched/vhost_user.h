/* SPDX-License-Identifier: MIT */
/*
 * vhost-user (QEMU docs/interop/vhost-user.rst): the wire format, a backend that serves a device's
 * queues on a vqsched scheduler, and a frontend (the driver side) for harnesses and benchmarks.
 *
 * Backend threads: each struct vqs_vu_backend owns one control thread. It accepts (server mode) or
 * connects (client mode) one frontend at a time, reads and validates every message, maps guest
 * memory into a vqs_mem, and attaches/detaches the device's queues on the caller's vqs_sched. The
 * device's ops callbacks (config, features, queue state) run on that control thread; the queue
 * handlers run on the scheduler's workers, as sched.h describes. After a disconnect the backend
 * stops every queue, drops the memory table and listens (or reconnects) again.
 *
 * A switch daemon creates one backend per port on one shared scheduler and learns each port's
 * running queues through ops->queue_state (vqs_queue_wake() on a peer's queue to push work).
 */
#ifndef VQSCHED_VHOST_USER_H
#define VQSCHED_VHOST_USER_H

#include <stddef.h>
#include <vqsched/common.h>
#include <vqsched/driver.h>
#include <vqsched/sched.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- wire format (all fields little-endian; this library runs on little-endian hosts) ---- */

struct vqs_vu_hdr {
	uint32_t request;
	uint32_t flags;
	uint32_t size; /* payload bytes that follow */
};
#define VQS_VU_VERSION 0x1u
#define VQS_VU_FLAG_VERSION_MASK 0x3u
#define VQS_VU_FLAG_REPLY (1u << 2)
#define VQS_VU_FLAG_NEED_REPLY (1u << 3)

enum vqs_vu_request {
	VQS_VU_GET_FEATURES = 1,
	VQS_VU_SET_FEATURES = 2,
	VQS_VU_SET_OWNER = 3,
	VQS_VU_RESET_OWNER = 4,
	VQS_VU_SET_MEM_TABLE = 5,
	VQS_VU_SET_LOG_BASE = 6,
	VQS_VU_SET_LOG_FD = 7,
	VQS_VU_SET_VRING_NUM = 8,
	VQS_VU_SET_VRING_ADDR = 9,
	VQS_VU_SET_VRING_BASE = 10,
	VQS_VU_GET_VRING_BASE = 11,
	VQS_VU_SET_VRING_KICK = 12,
	VQS_VU_SET_VRING_CALL = 13,
	VQS_VU_SET_VRING_ERR = 14,
	VQS_VU_GET_PROTOCOL_FEATURES = 15,
	VQS_VU_SET_PROTOCOL_FEATURES = 16,
	VQS_VU_GET_QUEUE_NUM = 17,
	VQS_VU_SET_VRING_ENABLE = 18,
	VQS_VU_SEND_RARP = 19,
	VQS_VU_NET_SET_MTU = 20,
	VQS_VU_SET_BACKEND_REQ_FD = 21, /* formerly SET_SLAVE_REQ_FD */
	VQS_VU_IOTLB_MSG = 22,
	VQS_VU_SET_VRING_ENDIAN = 23,
	VQS_VU_GET_CONFIG = 24,
	VQS_VU_SET_CONFIG = 25,
	VQS_VU_GET_INFLIGHT_FD = 31,
	VQS_VU_SET_INFLIGHT_FD = 32,
	VQS_VU_RESET_DEVICE = 34,
	VQS_VU_GET_MAX_MEM_SLOTS = 36,
	VQS_VU_ADD_MEM_REG = 37,
	VQS_VU_REM_MEM_REG = 38,
	VQS_VU_SET_STATUS = 39,
	VQS_VU_GET_STATUS = 40,
	VQS_VU_SET_DEVICE_STATE_FD = 42,
	VQS_VU_CHECK_DEVICE_STATE = 43,
};
/* Short stable name of a request ("SET_MEM_TABLE"), "?" when unknown. Threads: any. */
VQS_API const char *vqs_vu_request_name(uint32_t request);

/* Virtio feature bits only vhost-user uses. */
#define VQS_VU_F_LOG_ALL 26
#define VQS_VU_F_PROTOCOL_FEATURES 30

/* Protocol feature bits (GET/SET_PROTOCOL_FEATURES). */
#define VQS_VU_PROTOCOL_F_MQ 0
#define VQS_VU_PROTOCOL_F_LOG_SHMFD 1
#define VQS_VU_PROTOCOL_F_RARP 2
#define VQS_VU_PROTOCOL_F_REPLY_ACK 3
#define VQS_VU_PROTOCOL_F_MTU 4
#define VQS_VU_PROTOCOL_F_BACKEND_REQ 5
#define VQS_VU_PROTOCOL_F_CROSS_ENDIAN 6
#define VQS_VU_PROTOCOL_F_CONFIG 9
#define VQS_VU_PROTOCOL_F_BACKEND_SEND_FD 10
#define VQS_VU_PROTOCOL_F_HOST_NOTIFIER 11
#define VQS_VU_PROTOCOL_F_INFLIGHT_SHMFD 12
#define VQS_VU_PROTOCOL_F_RESET_DEVICE 13
#define VQS_VU_PROTOCOL_F_INBAND_NOTIFICATIONS 14
#define VQS_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS 15
#define VQS_VU_PROTOCOL_F_STATUS 16
#define VQS_VU_PROTOCOL_F_DEVICE_STATE 19
/* What this backend implements; a device's offer is masked with it. */
#define VQS_VU_PROTOCOL_SUPPORTED                                                                \
	(VQS_BIT(VQS_VU_PROTOCOL_F_MQ) | VQS_BIT(VQS_VU_PROTOCOL_F_LOG_SHMFD) |                  \
	 VQS_BIT(VQS_VU_PROTOCOL_F_RARP) |                                                      \
	 VQS_BIT(VQS_VU_PROTOCOL_F_REPLY_ACK) | VQS_BIT(VQS_VU_PROTOCOL_F_CONFIG) |               \
	 VQS_BIT(VQS_VU_PROTOCOL_F_INFLIGHT_SHMFD) | VQS_BIT(VQS_VU_PROTOCOL_F_RESET_DEVICE) |    \
	 VQS_BIT(VQS_VU_PROTOCOL_F_CONFIGURE_MEM_SLOTS) | VQS_BIT(VQS_VU_PROTOCOL_F_STATUS) |     \
	 VQS_BIT(VQS_VU_PROTOCOL_F_DEVICE_STATE))

/* SET_MEM_TABLE carries at most this many regions (and as many fds). */
#define VQS_VU_MEM_TABLE_MAX 8
/* Memory slots this backend reports for CONFIGURE_MEM_SLOTS (GET_MAX_MEM_SLOTS): as QEMU's
 * libvhost-user and rust-vmm, enough for virtio-mem; at most VQS_MEM_MAX_REGIONS. */
#define VQS_VU_MAX_MEM_SLOTS 509
/* Most fds one message may carry. */
#define VQS_VU_MAX_FDS 8
#define VQS_VU_CONFIG_MAX 256

/* SET_VRING_NUM/BASE/ENABLE, GET_VRING_BASE. */
struct vqs_vu_vring_state {
	uint32_t index;
	uint32_t num;
};
/* SET_VRING_ADDR: frontend virtual addresses (uaddr). */
struct vqs_vu_vring_addr {
	uint32_t index;
	uint32_t flags; /* VQS_VU_VRING_F_LOG: log the used ring at log_guest_addr (LOG_ALL) */
	uint64_t desc_user_addr;
	uint64_t used_user_addr;
	uint64_t avail_user_addr;
	uint64_t log_guest_addr;
};
#define VQS_VU_VRING_F_LOG 0x1u
/* SET_VRING_KICK/CALL/ERR payload (u64): queue index in the low byte, NOFD flag, nothing else. */
#define VQS_VU_VRING_IDX_MASK 0xffull
#define VQS_VU_VRING_NOFD_MASK (1ull << 8)

struct vqs_vu_mem_region {
	uint64_t guest_phys_addr;
	uint64_t memory_size;
	uint64_t userspace_addr;
	uint64_t mmap_offset;
};
/* SET_MEM_TABLE: size on the wire is 8 + nregions * 32 bytes, one fd per region, in order. */
struct vqs_vu_memory {
	uint32_t nregions;
	uint32_t padding;
	struct vqs_vu_mem_region regions[VQS_VU_MEM_TABLE_MAX];
};
/* ADD_MEM_REG (one fd) / REM_MEM_REG (no fd; one tolerated and closed). */
struct vqs_vu_mem_reg {
	uint64_t padding;
	struct vqs_vu_mem_region region;
};
/* SET_LOG_BASE (with LOG_SHMFD: one fd): the dirty bitmap is the fd's bytes [mmap_offset,
 * mmap_offset + mmap_size), a bit per 4 KiB guest page (vqs_mem_set_log). The backend replies
 * with an empty SET_LOG_BASE once it maps the log. */
struct vqs_vu_log {
	uint64_t mmap_size;
	uint64_t mmap_offset;
};
/* SET_DEVICE_STATE_FD (one fd: the frontend's end of the transfer channel). The reply is a u64:
 * bits 0-7 zero for success, bit 8 set when the backend returns no channel of its own. The
 * sending side writes the state and closes its end; CHECK_DEVICE_STATE (reply u64, 0 = success)
 * then tells whether the backend saved or loaded it. */
struct vqs_vu_device_state {
	uint32_t direction; /* VQS_VU_STATE_SAVE: backend to frontend; VQS_VU_STATE_LOAD */
	uint32_t phase;     /* VQS_VU_STATE_PHASE_STOPPED, the only one defined */
};
#define VQS_VU_STATE_SAVE 0u
#define VQS_VU_STATE_LOAD 1u
#define VQS_VU_STATE_PHASE_STOPPED 0u
#define VQS_VU_STATE_NO_FD (1ull << 8)
/* Largest device state the backend takes from a frontend (bytes). */
#define VQS_VU_DEVICE_STATE_MAX (16u << 20)

/* SEND_RARP (protocol feature RARP): a u64 whose first 6 bytes are the guest's MAC address, the
 * other two padding. */
#define VQS_VU_MAC_LEN 6

/* GET/SET_CONFIG: size on the wire is 12 + size bytes. */
struct vqs_vu_config {
	uint32_t offset;
	uint32_t size;
	uint32_t flags;
	uint8_t region[VQS_VU_CONFIG_MAX];
};
/* GET_INFLIGHT_FD (request: num_queues, queue_size; reply: all, plus the fd) / SET_INFLIGHT_FD. */
struct vqs_vu_inflight {
	uint64_t mmap_size;
	uint64_t mmap_offset;
	uint16_t num_queues;
	uint16_t queue_size;
	uint16_t padding[2];
};

/* Largest payload any request may declare (SET_CONFIG with a full config space). */
#define VQS_VU_PAYLOAD_MAX (12u + VQS_VU_CONFIG_MAX)

/* ---- backend ---- */

struct vqs_vu_backend;

/*
 * A device served over vhost-user. Every callback is optional except queue_handler; all but the
 * handlers run on the backend's control thread, one at a time.
 */
struct vqs_vu_device_ops {
	uint32_t size;              /* sizeof(struct vqs_vu_device_ops) */
	uint64_t features;          /* offered virtio features; VERSION_1 etc. included by the device */
	uint64_t protocol_features; /* offered protocol features; masked with VQS_VU_PROTOCOL_SUPPORTED */
	uint16_t num_queues;        /* 1..256 */
	uint32_t config_size;       /* bytes of config space, <= VQS_VU_CONFIG_MAX */
	/* The handler (and its opaque) serving queue qidx, called each time the queue starts. */
	vqs_handler_fn (*queue_handler)(void *opaque, unsigned qidx, void **handler_opaque);
	/* Read/write config space [offset, offset+len); range already checked. 0 or -errno. */
	int (*get_config)(void *opaque, uint32_t offset, void *buf, uint32_t len);
	int (*set_config)(void *opaque, uint32_t offset, const void *buf, uint32_t len);
	/* Negotiated virtio features, before any queue of that negotiation starts. */
	void (*set_features)(void *opaque, uint64_t features);
	/* Queue qidx started on the scheduler (q), or is stopping (q == NULL): called before the
	 * queue is detached, so forget q then (it is freed next); its handler may still finish a
	 * turn until the stop completes. Control thread. */
	void (*queue_state)(void *opaque, unsigned qidx, struct vqs_queue *q);
	/* The frontend connected (true) or went away (false; every queue already stopped). */
	void (*connection)(void *opaque, bool connected);
	/* Iovecs one request may span (vqs_queue_opts.iov_per_req; 0 = the scheduler's default of
	 * 16). A device advertising a segment limit (virtio-blk seg_max) sets it to match. */
	uint16_t iov_per_req;
	/* The demand function of queue qidx (vqs_queue_opts.demand; it gets the handler's opaque),
	 * or NULL; asked each time the queue starts, as queue_handler. A receive queue caps its pops
	 * at what it has to deliver. Older callers' smaller struct (size) leaves it NULL. */
	vqs_demand_fn (*queue_demand)(void *opaque, unsigned qidx);
	/*
	 * Device state transfer for migration (protocol feature DEVICE_STATE, offered when both are
	 * set). save_state gives the device's internal state as one blob (malloc'd; the library
	 * sends and frees it); load_state gets the blob a frontend sent, at most
	 * VQS_VU_DEVICE_STATE_MAX bytes and peer-controlled: check every byte of it. 0 or -errno;
	 * load_state's result is what CHECK_DEVICE_STATE reports. Control thread, every queue
	 * stopped. Older callers' smaller struct leaves them NULL.
	 */
	int (*save_state)(void *opaque, void **blob, size_t *len);
	int (*load_state)(void *opaque, const void *blob, size_t len);
	/*
	 * A net device's guest arrived here by live migration and cannot announce itself (SEND_RARP;
	 * protocol feature RARP, offered when the device lists it in protocol_features and sets
	 * this). QEMU sends it, with the guest's MAC address,
	 * when the guest did not negotiate VIRTIO_NET_F_GUEST_ANNOUNCE. The device makes the
	 * network learn that the address is now behind it, as QEMU's own announcement would (a
	 * broadcast RARP frame from that address). mac is a unicast address (the backend refuses
	 * others); the frontend may repeat it. Control thread, while the queues may run. 0 or
	 * -errno (what an ack asked for reports). Older callers' smaller struct leaves it NULL.
	 */
	int (*send_rarp)(void *opaque, const uint8_t mac[VQS_VU_MAC_LEN]);
	/* Every queue's handler is nonblocking (vqs_queue_opts.handler_nonblocking): it runs
	 * inside its batch's read-side section. Older callers' smaller struct leaves it false. */
	bool handlers_nonblocking;
};

struct vqs_vu_backend_opts {
	uint32_t size;         /* sizeof(struct vqs_vu_backend_opts) */
	const char *path;      /* unix socket path */
	bool client;           /* false: listen on path (unlinking a stale socket); true: connect */
	struct vqs_sched *sched;              /* queues run here; not owned */
	const struct vqs_vu_device_ops *ops;  /* copied at create */
	void *opaque;                         /* passed to every ops callback */
	uint32_t reconnect_min_ms;  /* client: first retry delay (default 10) */
	uint32_t reconnect_max_ms;  /* client: backoff cap (default 1000) */
	uint32_t msg_timeout_ms;    /* rest of a started message must arrive within this (default 1000) */
	/* TEST ONLY, never in a real deployment: dirty logging is offered and accepted as usual
	 * (LOG_ALL, SET_LOG_BASE) but no page is ever marked, so a live migration silently leaves
	 * stale guest memory wherever the device wrote. Lets a migration test show that its checks
	 * catch exactly that (tests/interop/qemu_blk_migrate.sh). */
	bool test_log_unmarked;
};
/* Fill defaults (size set, everything else 0 or its documented default). Threads: any. */
VQS_API void vqs_vu_backend_opts_init(struct vqs_vu_backend_opts *o);

/*
 * Start the control thread and listen/connect. One frontend is served at a time: a second one's
 * connection waits in the listen backlog until the first has gone and been cleaned up.
 * A message that cannot be parsed, or is refused while no ack was asked (NEED_REPLY with
 * REPLY_ACK negotiated), closes the connection; a refused message with an ack asked gets a
 * non-zero ack and the session goes on. Threads: any, not a scheduler worker.
 */
VQS_API int vqs_vu_backend_create(struct vqs_vu_backend **out, const struct vqs_vu_backend_opts *o);
/*
 * Stop the control thread, stop every queue (detached from the scheduler), unmap guest memory,
 * close every fd; server mode unlinks the socket. Threads: the creator; never from a callback or
 * a handler.
 */
VQS_API void vqs_vu_backend_destroy(struct vqs_vu_backend *b);

/* Counters, for tools and tests (each read relaxed; the set is not one snapshot).
 * Threads: any, while the backend exists. */
struct vqs_vu_backend_stats {
	uint64_t connections;    /* frontends accepted or connected */
	uint64_t disconnects;    /* connections closed and fully cleaned up */
	uint64_t messages;       /* messages handled */
	uint64_t bad_messages;   /* messages rejected (error reply or connection closed) */
	uint64_t queue_starts;
	uint64_t queue_stops;
};
VQS_API void vqs_vu_backend_stats(const struct vqs_vu_backend *b, struct vqs_vu_backend_stats *s);
/* Virtio features negotiated with the current frontend (0 when none). Threads: any, while the
 * backend exists. */
VQS_API uint64_t vqs_vu_backend_features(const struct vqs_vu_backend *b);

/* ---- frontend (the driver side, as QEMU or DPDK virtio-user would be) ---- */

struct vqs_vu_frontend;

struct vqs_vu_frontend_opts {
	uint32_t size;         /* sizeof(struct vqs_vu_frontend_opts) */
	const char *path;
	bool server;           /* true: listen on path and accept the backend */
	uint16_t num_queues;   /* default 1 */
	uint16_t queue_size;   /* default 256 */
	uint64_t features;     /* wanted virtio features; negotiated = offered & wanted */
	uint64_t protocol_features; /* wanted; default VQS_VU_PROTOCOL_SUPPORTED */
	size_t mem_size;       /* guest memory arena (memfd) bytes; default 4 MiB */
	uint64_t gpa_base;     /* guest physical base of the arena; default 0x100000 */
	uint32_t timeout_ms;   /* connect/accept and each reply; default 2000 */
};
/* Fill defaults (size set, each field its documented default). Threads: any. */
VQS_API void vqs_vu_frontend_opts_init(struct vqs_vu_frontend_opts *o);

/*
 * Allocate guest memory, kick/call eventfds; no connection yet. Threads: any.
 * Threads, for every vqs_vu_frontend_* call below: the frontend's one owner thread. The driver
 * queues (vqs_vu_frontend_vq) may each be handed to one other thread while no connect, setup or
 * disconnect runs; the getters of fds, features and gmem may be called from any thread then.
 */
VQS_API int vqs_vu_frontend_create(struct vqs_vu_frontend **out,
				   const struct vqs_vu_frontend_opts *o);
VQS_API void vqs_vu_frontend_destroy(struct vqs_vu_frontend *f);
/* Connect to (or accept) the backend, retrying until timeout_ms. No messages sent. 0, -ETIMEDOUT
 * (server mode), or the last connect error (-ENOENT, -ECONNREFUSED). */
VQS_API int vqs_vu_frontend_connect(struct vqs_vu_frontend *f);
/*
 * First half of the handshake: SET_OWNER, features, protocol features (and GET_QUEUE_NUM with
 * MQ), SET_MEM_TABLE. Tests use it to misbehave from a known state. 0 or -errno.
 */
VQS_API int vqs_vu_frontend_negotiate(struct vqs_vu_frontend *f);
/*
 * Full handshake: vqs_vu_frontend_negotiate, the inflight region (when INFLIGHT_SHMFD is
 * negotiated: GET_INFLIGHT_FD the first time, the same fd again after a reconnect), then per
 * queue NUM, BASE, ADDR, CALL, KICK, ENABLE, then STATUS DRIVER_OK.
 * After a reconnect the driver queues keep their state: BASE is the device's used position found
 * in the ring (vqs_drv_position; packed: in both halves, avail and used, each with its wrap
 * counter in bit 15), and the backend resubmits what the inflight region says was in flight.
 * 0 or -errno (-EPROTO for a refused message).
 */
VQS_API int vqs_vu_frontend_setup(struct vqs_vu_frontend *f);
/*
 * Dirty logging as QEMU drives it for a live migration. on: SET_LOG_BASE with the bitmap (a
 * memfd created the first time: a bit per 4 KiB page from gpa 0 to the end of guest memory),
 * SET_FEATURES with LOG_ALL, and each ring's SET_VRING_ADDR again with VRING_F_LOG and its used
 * area's gpa; the queues keep running. off: the same without LOG_ALL and VRING_F_LOG. A setup
 * after a reconnect logs again while on. -ENOTSUP unless the backend offered LOG_ALL and
 * LOG_SHMFD was negotiated; -ENOTCONN; -EPROTO for a refusal.
 */
VQS_API int vqs_vu_frontend_set_log(struct vqs_vu_frontend *f, bool on);
/*
 * Take the dirty bitmap as a migration's sync does: each of its first `len` bytes is copied to
 * out and cleared, one atomic exchange per byte (pairs with the backend's release or). Returns
 * the bitmap's size in bytes (0 before the first set_log). Threads: any, while set_log,
 * negotiate and destroy do not run.
 */
VQS_API size_t vqs_vu_frontend_log_sync(struct vqs_vu_frontend *f, uint8_t *out, size_t len);
/* Stop every queue (GET_VRING_BASE), keeping the connection; the answers are where the next
 * setup resumes. 0, -ENOTCONN, -EPROTO. */
VQS_API int vqs_vu_frontend_stop(struct vqs_vu_frontend *f);
/*
 * Device state transfer (DEVICE_STATE negotiated, queues stopped): save takes the backend
 * device's state through a pipe (SET_DEVICE_STATE_FD, then CHECK_DEVICE_STATE) into a malloc'd
 * *blob of *len bytes, the caller's to free(); load sends a blob the same way to a backend
 * whose device loads it (the blob stays the caller's). Threads: the frontend's owner, as above.
 * -ENOTSUP when not negotiated, -EIO when the backend reports failure, -EPROTO, -errno.
 */
VQS_API int vqs_vu_frontend_save_state(struct vqs_vu_frontend *f, void **blob, size_t *len);
VQS_API int vqs_vu_frontend_load_state(struct vqs_vu_frontend *f, const void *blob, size_t len);
/* Stop every queue (GET_VRING_BASE) when `clean`, then close the connection. The answers are
 * where the next setup resumes each queue (SET_VRING_BASE), as a migration's destination does;
 * after an unclean disconnect the next setup reads the position from the driver ring instead. */
VQS_API int vqs_vu_frontend_disconnect(struct vqs_vu_frontend *f, bool clean);

VQS_API struct vqs_gmem *vqs_vu_frontend_gmem(struct vqs_vu_frontend *f);
/* Driver queue i (exists after the first successful setup; NULL before). */
VQS_API struct vqs_drv_vq *vqs_vu_frontend_vq(struct vqs_vu_frontend *f, unsigned i);
/* Eventfds of queue i: write kick_fd to notify the backend; call_fd is signalled by it. */
VQS_API int vqs_vu_frontend_kick_fd(const struct vqs_vu_frontend *f, unsigned i);
VQS_API int vqs_vu_frontend_call_fd(const struct vqs_vu_frontend *f, unsigned i);
VQS_API uint64_t vqs_vu_frontend_features(const struct vqs_vu_frontend *f);
VQS_API uint64_t vqs_vu_frontend_protocol_features(const struct vqs_vu_frontend *f);
/* The connected socket, -1 when none (tests shut it down mid-message). */
VQS_API int vqs_vu_frontend_sock(const struct vqs_vu_frontend *f);

/*
 * Send one request (header built here; NEED_REPLY added when REPLY_ACK is negotiated and
 * `ack`) and wait for its reply when the request has one or an ack was asked. reply/reply_len
 * receive the reply payload (may be NULL/0 when none expected); *reply_fd (may be NULL) the fd a
 * reply carries (GET_INFLIGHT_FD), else -1. Returns the reply payload size, -EPROTO for a
 * non-zero ack, -ECONNRESET when the backend closed.
 */
VQS_API int vqs_vu_frontend_request(struct vqs_vu_frontend *f, uint32_t request,
				    const void *payload, uint32_t len, const int *fds, unsigned nfds,
				    bool ack, void *reply, uint32_t reply_len, int *reply_fd);
/* Send raw bytes (possibly a malformed message) with fds attached to the first byte. Tests. */
VQS_API int vqs_vu_frontend_send_raw(struct vqs_vu_frontend *f, const void *buf, size_t len,
				     const int *fds, unsigned nfds);
/*
 * Wait up to timeout_ms for one message from the backend: header into *hdr, up to cap payload
 * bytes into payload. Returns the payload size, -ECONNRESET when the backend closed, -ETIMEDOUT.
 */
VQS_API int vqs_vu_frontend_recv_raw(struct vqs_vu_frontend *f, struct vqs_vu_hdr *hdr,
				     void *payload, uint32_t cap, uint32_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
