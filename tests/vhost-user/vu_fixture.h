/* SPDX-License-Identifier: MIT */
/*
 * Shared by the vhost-user tests: an echo device (each request's readable bytes are copied into
 * its writable buffers), a backend serving it on a scheduler, a frontend driving it, and the
 * process-wide counters (open fds, threads, mappings) the leak checks compare. Public API only.
 */
#ifndef VQS_TEST_VU_FIXTURE_H
#define VQS_TEST_VU_FIXTURE_H

#include <pthread.h>
#include <stdatomic.h>
#include <vqsched/vqsched.h>

#define VU_CONFIG_SIZE 16

struct vu_echo {
	struct vqs_vu_device_ops ops;
	uint8_t config[VU_CONFIG_SIZE];
	_Atomic uint64_t completed;
	/* SEND_RARP: how many reached the device, and the last address (control thread). */
	_Atomic unsigned rarps;
	uint8_t rarp_mac[VQS_VU_MAC_LEN];
	/* Completion delay per request, to keep requests in flight (inflight tests). */
	_Atomic uint32_t delay_us; /* a test may change it while the queues run */
	/*
	 * Asynchronous mode (vu_echo_start_async): handlers only queue the echoed requests; a
	 * completer thread completes the newest first, one per delay_us. The used ring then is no
	 * prefix of the avail ring, so only inflight tracking can tell what a dead backend left
	 * undone.
	 */
	bool async;
	pthread_t completer;
	pthread_mutex_t lock;
	unsigned npending;
	struct vqs_req *pending[1024];
	uint32_t written[1024];
};
/* An echo device with num_queues queues offering `features` and every protocol feature; its
 * device state (DEVICE_STATE) is its config space; SEND_RARP is counted (RARP). */
void vu_echo_init(struct vu_echo *e, uint16_t num_queues, uint64_t features);
/* Switch e to asynchronous completion (runs until the process exits). 0 or -errno. */
int vu_echo_start_async(struct vu_echo *e);

struct vu_env {
	char path[108];
	struct vqs_sched *sched;
	struct vqs_vu_backend *backend;
	struct vu_echo echo;
};
/* Scheduler (pool, one worker) + backend on a fresh socket path, offering VERSION_1, EVENT_IDX
 * and RING_PACKED. client: the backend connects. */
int vu_env_start(struct vu_env *env, uint16_t num_queues, bool client);
/* vu_env_start, with tweak(ops) applied to the device ops before the backend is created. */
int vu_env_start_with(struct vu_env *env, uint16_t num_queues, bool client,
		      void (*tweak)(struct vqs_vu_device_ops *ops));
/* vu_env_start (one queue, listening) with vqs_vu_backend_opts.test_log_unmarked set. */
int vu_env_start_log_unmarked(struct vu_env *env);
void vu_env_stop(struct vu_env *env);
/* Wait (bounded) until the backend counted `n` disconnects. */
bool vu_env_wait_disconnects(struct vu_env *env, uint64_t n);
/* Frontend options for env's socket: 1 queue of 64, EVENT_IDX + VERSION_1, 1 MiB arena. */
void vu_env_frontend_opts(const struct vu_env *env, struct vqs_vu_frontend_opts *o);

/* The next completion on queue q (its token, *len the bytes written), sleeping on the call
 * eventfd; NULL after about 4 s without one. */
void *vu_wait_used(struct vqs_vu_frontend *f, unsigned q, uint32_t *len);

/* Echo `count` requests of `len` bytes through queue q, checking every byte. 0 or -errno. */
int vu_echo_roundtrip(struct vqs_vu_frontend *f, unsigned q, unsigned count, uint32_t len);

/* A thread echoing on queue 0 of f until stopped: calls of vu_echo_roundtrip(f, 0, count, len),
 * at most max_calls (each takes two buffers of the arena for good; 0 = no limit). The thread
 * owns queue 0 meanwhile. */
struct vu_traffic {
	struct vqs_vu_frontend *f;
	unsigned count, max_calls;
	uint32_t len;
	pthread_t thread;
	_Atomic bool stop;
	int err;         /* the first failure, read after vu_traffic_stop */
	unsigned rounds; /* calls made, read after vu_traffic_stop */
};
int vu_traffic_start(struct vu_traffic *t);
/* Stop and join the thread; its first error (0 when none). */
int vu_traffic_stop(struct vu_traffic *t);

/* Send SET_VRING_KICK with queue q's kick eventfd (acked): restarts a stopped ring. 0 or -errno. */
int vu_kick_restart(struct vqs_vu_frontend *f, unsigned q);

/* Add `count` requests to queue q and kick, without waiting for them. 0 or -errno. */
int vu_echo_submit(struct vqs_vu_frontend *f, unsigned q, unsigned count, uint32_t len);

/* Wait (bounded) until the fd count is back to `want`; returns the last count seen. */
unsigned vu_wait_fds(unsigned want);

#endif
