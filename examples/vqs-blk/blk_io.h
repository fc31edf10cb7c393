/* SPDX-License-Identifier: MIT */
/*
 * I/O threads: the queue handler hands requests here and returns at once; each thread runs one
 * request at a time and completes it, so completions come back out of order, as from a real
 * disk queue (and a crash leaves holes that only inflight tracking can tell apart).
 */
#ifndef VQS_BLK_IO_H
#define VQS_BLK_IO_H

#include <pthread.h>
#include <vqsched/vqsched.h>

struct blk_dev;

struct blk_io {
	struct blk_dev *dev;
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct vqs_req *head, *tail; /* FIFO linked through vqs_req.user */
	unsigned nthreads;
	uint32_t latency_us; /* each request first waits 0..latency_us (a disk's varying service time) */
	bool stop;
	pthread_t *threads;
};

/* Start n threads serving dev, each request delayed by 0..latency_us. 0 or -errno.
 * Threads: the owner. */
int blk_io_start(struct blk_io *io, struct blk_dev *dev, unsigned n, uint32_t latency_us);
/* Queue requests (their `user` field links them); never blocks. Threads: any (the handlers). */
void blk_io_submit(struct blk_io *io, struct vqs_req *const *reqs, unsigned n);
/* Finish what is queued, join the threads. Threads: the owner, after the backend is gone. */
void blk_io_stop(struct blk_io *io);

#endif
