/* SPDX-License-Identifier: MIT */
#include "transport_vu.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct vu_served {
	vqs_handler_fn handler;
	void *opaque;
	_Atomic(struct vqs_queue *) q; /* set and cleared by the backend's control thread */
};

struct vu_link {
	unsigned streams;
	char dir[64], path[96];
	struct vqs_vu_device_ops ops;
	struct vqs_vu_backend *backend;
	struct vqs_vu_frontend *front;
	struct vu_served *served;
};

static vqs_handler_fn link_queue_handler(void *opaque, unsigned qidx, void **handler_opaque)
{
	struct vu_link *l = opaque;
	if (qidx >= l->streams)
		return NULL;
	*handler_opaque = l->served[qidx].opaque;
	return l->served[qidx].handler;
}

static void link_queue_state(void *opaque, unsigned qidx, struct vqs_queue *q)
{
	struct vu_link *l = opaque;
	if (qidx < l->streams) /* pairs with the acquire in vu_link_start */
		atomic_store_explicit(&l->served[qidx].q, q, memory_order_release);
}

int vu_link_create(struct vu_link **out, unsigned streams, unsigned ring, uint64_t features,
		   size_t mem_size)
{
	if (!streams || streams > 256)
		return -EINVAL;
	struct vu_link *l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->streams = streams;
	l->served = calloc(streams, sizeof(*l->served));
	snprintf(l->dir, sizeof(l->dir), "/tmp/vqs-bench-vu-XXXXXX");
	if (!l->served || !mkdtemp(l->dir)) {
		int rc = l->served ? -errno : -ENOMEM;
		l->dir[0] = 0;
		vu_link_destroy(l);
		return rc;
	}
	snprintf(l->path, sizeof(l->path), "%s/vu.sock", l->dir);
	/* The bench's echo device is stateless like a net device: no inflight region to keep. */
	l->ops = (struct vqs_vu_device_ops){
		.size = sizeof(l->ops),
		.features = features,
		.protocol_features = VQS_VU_PROTOCOL_SUPPORTED &
				     ~VQS_BIT(VQS_VU_PROTOCOL_F_INFLIGHT_SHMFD),
		.num_queues = (uint16_t)streams,
		.queue_handler = link_queue_handler,
		.queue_state = link_queue_state,
		.iov_per_req = 4,
		.handlers_nonblocking = true, /* workload.c's handler */
	};
	struct vqs_vu_frontend_opts fo;
	vqs_vu_frontend_opts_init(&fo);
	fo.path = l->path;
	fo.num_queues = (uint16_t)streams;
	fo.queue_size = (uint16_t)ring;
	fo.features = features;
	fo.protocol_features = l->ops.protocol_features;
	fo.mem_size = mem_size;
	int rc = vqs_vu_frontend_create(&l->front, &fo);
	if (rc) {
		vu_link_destroy(l);
		return rc;
	}
	*out = l;
	return 0;
}

struct vqs_gmem *vu_link_gmem(struct vu_link *l) { return vqs_vu_frontend_gmem(l->front); }

void vu_link_serve(struct vu_link *l, unsigned i, vqs_handler_fn handler, void *opaque)
{
	l->served[i].handler = handler;
	l->served[i].opaque = opaque;
}

int vu_link_start(struct vu_link *l, struct vqs_sched *sched, bool dirty_log)
{
	struct vqs_vu_backend_opts bo;
	vqs_vu_backend_opts_init(&bo);
	bo.path = l->path;
	bo.sched = sched;
	bo.ops = &l->ops;
	bo.opaque = l;
	int rc = vqs_vu_backend_create(&l->backend, &bo);
	if (rc || (rc = vqs_vu_frontend_connect(l->front)) || (rc = vqs_vu_frontend_setup(l->front)) ||
	    (dirty_log && (rc = vqs_vu_frontend_set_log(l->front, true)))) {
		fprintf(stderr, "vqs-bench: vhost-user link on %s: %s\n", l->path, strerror(-rc));
		return rc;
	}
	/* Every setup message is acked (REPLY_ACK), so the backend has started each queue by now;
	 * a queue it refused to start would leave its stream without a device. */
	for (unsigned i = 0; i < l->streams; i++)
		if (!atomic_load_explicit(&l->served[i].q, memory_order_acquire)) {
			fprintf(stderr, "vqs-bench: vhost-user queue %u did not start\n", i);
			return -EIO;
		}
	return 0;
}

void vu_link_ends(struct vu_link *l, unsigned i, struct vu_stream_ends *e)
{
	e->drv = vqs_vu_frontend_vq(l->front, i);
	e->kick_fd = vqs_vu_frontend_kick_fd(l->front, i);
	e->call_fd = vqs_vu_frontend_call_fd(l->front, i);
	e->q = atomic_load_explicit(&l->served[i].q, memory_order_acquire); /* pairs with queue_state */
}

void vu_link_destroy(struct vu_link *l)
{
	if (!l)
		return;
	if (l->front)
		vqs_vu_frontend_disconnect(l->front, true);
	if (l->backend)
		vqs_vu_backend_destroy(l->backend); /* unlinks the socket */
	if (l->front)
		vqs_vu_frontend_destroy(l->front);
	if (l->dir[0] && rmdir(l->dir))
		fprintf(stderr, "vqs-bench: cannot remove %s: %s\n", l->dir, strerror(errno));
	free(l->served);
	free(l);
}
