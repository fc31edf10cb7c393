/* SPDX-License-Identifier: MIT */
/*
 * Inside struct vqs_vu_backend: the connection state the control thread keeps. Everything here
 * is touched only by the control thread, except the atomics (stats, negotiated features).
 *
 * Files: backend.c (thread, sockets, connection lifecycle), proto.c (one handler per request),
 * vring.c (queue start/stop on the scheduler), memtab.c (regions in and out of the memory map),
 * inflight.c (the INFLIGHT_SHMFD region), log.c (dirty page logging), state.c (device state
 * transfer).
 */
#ifndef VQS_VU_BACKEND_INTERNAL_H
#define VQS_VU_BACKEND_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <vqsched/vhost_user.h>

#include "vhost-user/msg.h"

struct vu_vring {
	struct vqs_vq *vq;
	struct vqs_queue *sq;          /* attached to the scheduler; NULL while stopped */
	uint32_t num;                  /* 0 until SET_VRING_NUM */
	bool addr_set;
	struct vqs_vu_vring_addr addr; /* validated copy */
	struct vqs_vq_state base;      /* where the ring resumes */
	bool base_packed;              /* base is a packed ring's (GET_VRING_BASE's encoding) */
	bool enabled;                  /* SET_VRING_ENABLE */
	bool kicked;                   /* SET_VRING_KICK seen since the last stop: may start */
	int kick_fd, call_fd, err_fd;  /* -1 when none */
	struct vqs_vu_backend *owner;
	/* Set by the scheduler's on_broken hook on a worker; the control thread signals err_fd
	 * (it alone owns the fd, so a worker never writes to an fd SET_VRING_ERR just closed). */
	atomic_bool err_pending;
};

struct vu_inflight {
	void *base;       /* shared mapping, NULL when none */
	size_t map_len;
	size_t queue_len; /* bytes per queue */
	uint16_t num_queues, queue_size;
	bool restore;     /* holds a previous backend's records (not the region we created) */
	dev_t own_dev;    /* identity of the region GET_INFLIGHT_FD created here */
	ino_t own_ino;
};

/* A device state transfer (state.c): the thread moving the blob through the frontend's channel. */
struct vu_state {
	bool running;       /* thread started, not joined */
	pthread_t thread;
	uint32_t direction; /* VQS_VU_STATE_SAVE / LOAD */
	int fd;             /* our end of the channel; closed by the thread when done */
	int stop_fd;        /* eventfd: cancel (control thread to transfer thread) */
	int done_fd;        /* eventfd: finished (transfer thread to control thread) */
	void *blob;
	size_t len;
	int result;         /* the thread's, read after done_fd or the join */
};

struct vqs_vu_backend {
	struct vqs_vu_backend_opts opts;
	/* A copy: callers built against an older, shorter struct get the new fields zeroed. */
	struct vqs_vu_device_ops ops;
	void *opaque;
	char path[108];

	pthread_t thread;
	int epfd, stop_fd, listen_fd, timer_fd, conn_fd;
	int err_event_fd; /* eventfd: a ring broke, signal its err_fd (vring.c) */
	uint32_t backoff_ms;

	struct vqs_mem *mem;
	struct vu_vring *rings; /* ops->num_queues */
	struct vu_inflight inflight;
	struct vu_state state;
	bool log_set;   /* SET_LOG_BASE installed a dirty log in mem (owned by mem) */
	int log_fd;     /* SET_LOG_FD; -1 when none */
	uint64_t features, protocol_features;
	uint8_t status;

	/* Read by other threads alone, with nothing published through them: relaxed, no pairs. */
	_Atomic uint64_t neg_features;
	_Atomic uint64_t st_connections, st_disconnects, st_messages, st_bad, st_starts, st_stops;
};

/* Back to a device no frontend configured: rings stopped and forgotten (fds closed), dirty log
 * and inflight region unmapped, features and status 0. Each ring's last position stays for a
 * GET_VRING_BASE after the reset (QEMU 7.2 stops a device with SET_STATUS 0 first, then asks
 * each ring's base, which it migrates); the next SET_VRING_BASE replaces it. The connection, its
 * protocol features and the guest memory table stay: QEMU 7.2 stops a device with SET_STATUS 0
 * and starts it again without sending the regions it added with ADD_MEM_REG (it sends only
 * changes), as when SeaBIOS hands a virtio-blk disk over to Linux. backend.c. */
void vu_device_reset(struct vqs_vu_backend *b);

/* state.c: SET_DEVICE_STATE_FD (fd not consumed; *reply its u64), CHECK_DEVICE_STATE (its
 * u64), and dropping a transfer (cancelled, thread joined). */
int vu_state_set_fd(struct vqs_vu_backend *b, const struct vqs_vu_device_state *p, int fd,
		    uint64_t *reply);
uint64_t vu_state_check(struct vqs_vu_backend *b);
void vu_state_drop(struct vqs_vu_backend *b);

/* Handle one validated-shape message. Returns the reply payload size (>= 0) written into
 * *reply (and *reply_fd, or -1), or -errno when the message is refused. proto.c. */
int vu_handle(struct vqs_vu_backend *b, struct vu_msg *m, struct vu_msg *reply, int *reply_fd);

/* vring.c: make ring i run if everything it needs arrived, 0 or -errno (ring areas unmapped,
 * bad base, scheduler refusal); stop it (saving its position). */
int vu_vring_update(struct vqs_vu_backend *b, unsigned i);
void vu_vring_stop(struct vqs_vu_backend *b, unsigned i);
/* Stop ring i and forget everything about it (fds closed). */
void vu_vring_reset(struct vqs_vu_backend *b, unsigned i);
bool vu_any_running(const struct vqs_vu_backend *b);
/* Control thread: signal the error eventfd of every ring whose guest broke it. */
void vu_vring_signal_errors(struct vqs_vu_backend *b);

/* memtab.c: map a wire region backed by fd (not consumed) into *out, with a release hook that
 * unmaps it. 0, -EINVAL (size 0, overflow, beyond the fd's size), -errno. */
int vu_region_map(const struct vqs_vu_mem_region *wr, int fd, struct vqs_mem_region *out);
void vu_region_unmap(const struct vqs_mem_region *r);
/* Map the dirty log [off, off + size) of fd (not consumed) into *out, with a release hook that
 * unmaps it. Errors as vu_region_map. */
int vu_log_map(uint64_t size, uint64_t off, int fd, struct vqs_mem_log *out);
/* Log (or stop) as LOG_ALL and the installed log say; drop the log (frontend gone, reset). */
int vu_log_update(struct vqs_vu_backend *b);
void vu_log_drop(struct vqs_vu_backend *b);
/* SET_LOG_BASE (fd not consumed) and SET_LOG_FD (fd consumed: signalled after marks, or closed
 * on refusal). log.c. */
int vu_set_log_base(struct vqs_vu_backend *b, const struct vqs_vu_log *l, int fd);
int vu_set_log_fd(struct vqs_vu_backend *b, int fd);

/* inflight.c */
int vu_inflight_get(struct vqs_vu_backend *b, struct vqs_vu_inflight *io, int *fd_out);
int vu_inflight_set(struct vqs_vu_backend *b, const struct vqs_vu_inflight *in, int fd);
/* The region of queue i for a ring of `num` entries, or NULL when none covers it. -EINVAL in
 * *err when a region exists but does not fit the ring. */
void *vu_inflight_queue(struct vqs_vu_backend *b, unsigned i, unsigned num, int *err);
void vu_inflight_drop(struct vqs_vu_backend *b);

static inline bool vu_has_proto(const struct vqs_vu_backend *b, unsigned bit)
{
	return (b->protocol_features & VQS_BIT(bit)) != 0;
}

#endif
