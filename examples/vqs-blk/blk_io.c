/* SPDX-License-Identifier: MIT */
#include "blk_io.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "blk_dev.h"

/* Wait 0..max_us, drawn from the thread's own generator. */
static void service_time(uint64_t *seed, uint32_t max_us)
{
	if (!max_us)
		return;
	*seed ^= *seed << 13;
	*seed ^= *seed >> 7;
	*seed ^= *seed << 17;
	uint64_t ns = *seed % ((uint64_t)max_us * 1000u + 1);
	struct timespec ts = { (time_t)(ns / 1000000000u), (long)(ns % 1000000000u) };
	nanosleep(&ts, NULL);
}

static void *io_thread(void *arg)
{
	struct blk_io *io = arg;
	uint64_t seed = vqs_now_ns() | 1;
	pthread_mutex_lock(&io->lock);
	for (;;) {
		while (!io->head && !io->stop)
			pthread_cond_wait(&io->more, &io->lock);
		struct vqs_req *r = io->head;
		if (!r)
			break;
		io->head = r->user;
		if (!io->head)
			io->tail = NULL;
		pthread_mutex_unlock(&io->lock);
		service_time(&seed, io->latency_us);
		blk_dev_run(io->dev, r);
		pthread_mutex_lock(&io->lock);
	}
	pthread_mutex_unlock(&io->lock);
	return NULL;
}

int blk_io_start(struct blk_io *io, struct blk_dev *dev, unsigned n, uint32_t latency_us)
{
	*io = (struct blk_io){ .dev = dev, .latency_us = latency_us };
	io->threads = calloc(n, sizeof(*io->threads));
	if (!io->threads)
		return -ENOMEM;
	pthread_mutex_init(&io->lock, NULL);
	pthread_cond_init(&io->more, NULL);
	for (; io->nthreads < n; io->nthreads++) {
		int err = pthread_create(&io->threads[io->nthreads], NULL, io_thread, io);
		if (err) {
			blk_io_stop(io);
			return -err;
		}
	}
	return 0;
}

void blk_io_submit(struct blk_io *io, struct vqs_req *const *reqs, unsigned n)
{
	for (unsigned k = 0; k < n; k++)
		reqs[k]->user = k + 1 < n ? reqs[k + 1] : NULL;
	pthread_mutex_lock(&io->lock);
	if (io->tail)
		io->tail->user = reqs[0];
	else
		io->head = reqs[0];
	io->tail = reqs[n - 1];
	pthread_cond_broadcast(&io->more);
	pthread_mutex_unlock(&io->lock);
}

void blk_io_stop(struct blk_io *io)
{
	pthread_mutex_lock(&io->lock);
	io->stop = true;
	pthread_cond_broadcast(&io->more);
	pthread_mutex_unlock(&io->lock);
	for (unsigned i = 0; i < io->nthreads; i++)
		pthread_join(io->threads[i], NULL);
	pthread_mutex_destroy(&io->lock);
	pthread_cond_destroy(&io->more);
	free(io->threads);
}
