/* SPDX-License-Identifier: MIT */
/*
 * Traffic for scheduler tests, public API only: per queue a driver-side ring in its own arena,
 * a driver thread that sends numbered requests, kicks when the device asks, sleeps on the call
 * eventfd with a bounded wait, and checks that every request comes back exactly once with the
 * reply the handler computed; and a device-side handler that serves each request synchronously,
 * from a completer thread, or gives some back.
 */
#ifndef VQS_TEST_SCHED_TRAFFIC_H
#define VQS_TEST_SCHED_TRAFFIC_H

#include <pthread.h>
#include <stdatomic.h>
#include <vqsched/vqsched.h>

#include "pair.h"

enum traffic_mode {
	TRAFFIC_SYNC,     /* complete inside the handler */
	TRAFFIC_ASYNC,    /* complete from the completer thread */
	TRAFFIC_MIXED,    /* each request at random one of the two */
	TRAFFIC_GIVEBACK, /* take a random prefix, give the rest back, wake later (handler or
			   * completer thread at random) */
};

struct traffic_cfg {
	unsigned nqueues;
	unsigned long total;  /* requests over all queues */
	unsigned num;         /* ring size */
	uint64_t features;
	enum traffic_mode mode;
	bool delays;          /* random short spins and sleeps in the driver threads */
	int group;            /* dedicated: group of every queue (-1: one thread each) */
	/* Driver i switches to fresh kick/call eventfds (vqs_queue_set_fds) this often, 0 = never. */
	unsigned long swap_fds_every;
};

struct traffic;

struct traffic_queue {
	struct traffic *t;
	unsigned idx;
	struct vqs_pair p;
	int kick, call;
	struct vqs_queue *_Atomic q;  /* NULL while detached by the test */
	pthread_t th;
	unsigned long total, sent, done;
	uint8_t *seen;
	uint64_t *buf_gpa;            /* per buffer: out (16 bytes) then in (8 bytes) */
	uint64_t *buf_seq;
	unsigned *free_bufs, nfree;
	unsigned seed;
	const char *error;            /* first problem the driver saw */
	_Atomic unsigned long served; /* handler side */
};

struct traffic {
	struct traffic_cfg cfg;
	struct vqs_sched *s;
	struct traffic_queue *tq;
	pthread_t completer;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct vqs_req **pending;  /* requests (or queues to wake) for the completer */
	struct vqs_queue **wakes;
	unsigned npending, nwakes, cap;
	bool stop;
	_Atomic unsigned drivers; /* driver threads still running */
};

/* Build the rings and attach every queue to s (not started). */
int traffic_init(struct traffic *t, struct vqs_sched *s, const struct traffic_cfg *cfg);
/* Start the driver threads. */
void traffic_start(struct traffic *t);
/* Whether some driver thread is still sending or waiting. */
bool traffic_running(struct traffic *t);
/* Join the driver threads; 0 when every request came back exactly once, else -1 (printed). */
int traffic_join(struct traffic *t);
/* Detach what is attached, stop the completer, free everything. */
void traffic_fini(struct traffic *t);
/*
 * The whole run on a scheduler of its own: create one with policy p and nworkers workers, run
 * cfg's traffic to the end, add up the queues' counters in *sum (reqs, async_completions,
 * given_back), free everything. traffic_join's result, or -errno when it could not start.
 */
int traffic_run(enum vqs_policy p, unsigned nworkers, const struct traffic_cfg *cfg,
		struct vqs_queue_stats *sum);
/* Queue options the harness attaches with (for re-attaching after a test detached). */
void traffic_queue_opts(struct traffic_queue *tq, struct vqs_queue_opts *o);
/* The handler the harness attaches. */
unsigned traffic_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			 void *opaque);

/* CPU time of a thread of this process, from /proc/self/task/TID/stat (ns). */
uint64_t thread_cpu_ns(int tid);
/* Sleep ms milliseconds. */
void sleep_ms(unsigned ms);

#endif
