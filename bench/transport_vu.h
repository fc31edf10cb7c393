/* SPDX-License-Identifier: MIT */
/*
 * The vhost-user transport of vqs-bench: the streams' rings live in a frontend's memfd guest
 * memory and reach the scheduler through the library's vhost-user backend over a unix socket
 * in a private temp dir, so the figures include the real backend path (memory table mapped from
 * the memfd, rings at frontend uaddrs, kick/call eventfds passed over the socket).
 */
#ifndef VQS_BENCH_TRANSPORT_VU_H
#define VQS_BENCH_TRANSPORT_VU_H

#include <stddef.h>
#include <stdint.h>
#include <vqsched/vqsched.h>

struct vu_link;

/* One stream as both ends see it once the link is up. */
struct vu_stream_ends {
	struct vqs_drv_vq *drv; /* driver queue, owned by the link */
	int kick_fd, call_fd;   /* owned by the link */
	struct vqs_queue *q;    /* the backend's scheduler queue, owned by the backend */
};

/* Frontend with mem_size bytes of memfd guest memory for `streams` queues of `ring` entries,
 * wanting `features`; nothing connected yet. 0 or -errno. Threads: the bench's main thread, as
 * for every vu_link_* call. */
int vu_link_create(struct vu_link **out, unsigned streams, unsigned ring, uint64_t features,
		   size_t mem_size);
/* The guest memory to allocate the request buffers from. */
struct vqs_gmem *vu_link_gmem(struct vu_link *l);
/* Queue i is served by handler(opaque) once the link is up. Before vu_link_start. */
void vu_link_serve(struct vu_link *l, unsigned i, vqs_handler_fn handler, void *opaque);
/* Start the backend on sched (listening on the private socket), connect the frontend and run the
 * full handshake, then switch dirty page logging on when dirty_log; every queue is running on
 * sched when it returns 0. -errno otherwise. */
int vu_link_start(struct vu_link *l, struct vqs_sched *sched, bool dirty_log);
/* Both ends of stream i, after vu_link_start. */
void vu_link_ends(struct vu_link *l, unsigned i, struct vu_stream_ends *e);
/* Stop the queues (GET_VRING_BASE), close the connection, destroy the backend (before its
 * scheduler goes), the frontend and its memory, remove the temp dir. NULL is a no-op. */
void vu_link_destroy(struct vu_link *l);

#endif
