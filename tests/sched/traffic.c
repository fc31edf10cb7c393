/* SPDX-License-Identifier: MIT */
#include "traffic.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#define REPLY_MAGIC 0x5a5a5a5a00000000ull
#define STALL_NS (30ull * 1000000000u) /* no progress this long = a lost wakeup */
#define ARENA (1u << 20)

static _Thread_local unsigned tls_seed = 1;

static unsigned rnd(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

uint64_t thread_cpu_ns(int tid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* Fields after the command name (which may contain spaces): state is field 3; utime and
	 * stime are fields 14 and 15. */
	char *p = strrchr(buf, ')');
	unsigned long long ut = 0, st = 0;
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* ---- device side ---- */

static void serve_one(struct vqs_req *r)
{
	const struct vqs_elem *e = &r->elem;
	uint64_t seq = 0;
	if (e->out_num == 1 && e->in_num == 1 && e->iov[0].iov_len == 16 && e->iov[1].iov_len == 8) {
		memcpy(&seq, e->iov[0].iov_base, 8);
		seq ^= REPLY_MAGIC;
		memcpy(e->iov[1].iov_base, &seq, 8);
		vqs_req_complete(r, 8);
	} else {
		vqs_req_complete(r, 0); /* the driver reports the short reply */
	}
}

static void completer_post(struct traffic *t, struct vqs_req *r, struct vqs_queue *wake)
{
	pthread_mutex_lock(&t->mu);
	if (r)
		t->pending[t->npending++] = r;
	else
		t->wakes[t->nwakes++] = wake;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
}

unsigned traffic_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			 void *opaque)
{
	struct traffic_queue *tq = opaque;
	struct traffic *t = tq->t;
	if (tls_seed == 1)
		tls_seed = (unsigned)(uintptr_t)&tls_seed;
	unsigned taken = n;
	if (t->cfg.mode == TRAFFIC_GIVEBACK && rnd(&tls_seed) % 4 == 0)
		taken = rnd(&tls_seed) % n; /* give back at least one */
	for (unsigned i = 0; i < taken; i++) {
		bool async = t->cfg.mode == TRAFFIC_ASYNC ||
			     (t->cfg.mode == TRAFFIC_MIXED && rnd(&tls_seed) % 2);
		if (async)
			completer_post(t, reqs[i], NULL);
		else
			serve_one(reqs[i]);
	}
	atomic_fetch_add(&tq->served, taken);
	if (taken < n) {
		if (rnd(&tls_seed) % 2)
			vqs_queue_wake(q);
		else
			completer_post(t, NULL, q);
	}
	return taken;
}

static void *completer_main(void *arg)
{
	struct traffic *t = arg;
	pthread_mutex_lock(&t->mu);
	for (;;) {
		while (!t->npending && !t->nwakes && !t->stop)
			pthread_cond_wait(&t->cv, &t->mu);
		if (!t->npending && !t->nwakes)
			break;
		/* Oldest first is not required; newest first makes completions out of order. */
		if (t->npending) {
			struct vqs_req *r = t->pending[--t->npending];
			pthread_mutex_unlock(&t->mu);
			serve_one(r);
		} else {
			struct vqs_queue *q = t->wakes[--t->nwakes];
			pthread_mutex_unlock(&t->mu);
			vqs_queue_wake(q);
		}
		pthread_mutex_lock(&t->mu);
	}
	pthread_mutex_unlock(&t->mu);
	return NULL;
}

/* ---- driver side ---- */

static void fail(struct traffic_queue *tq, const char *why)
{
	if (!tq->error)
		tq->error = why;
}

static void kick(struct traffic_queue *tq)
{
	uint64_t one = 1;
	if (write(tq->kick, &one, sizeof(one)) != sizeof(one))
		fail(tq, "kick write failed");
}

static unsigned reap(struct traffic_queue *tq)
{
	unsigned n = 0;
	uint32_t len;
	void *tok;
	while ((tok = vqs_drv_get_used(tq->p.drv, &len))) {
		unsigned b = (unsigned)((uint64_t *)tok - tq->buf_seq);
		uint64_t seq = tq->buf_seq[b], reply;
		memcpy(&reply, vqs_gmem_host(tq->p.gmem, tq->buf_gpa[b] + 16, 8), 8);
		if (len != 8 || reply != (seq ^ REPLY_MAGIC))
			fail(tq, "wrong reply");
		if (seq >= tq->total || tq->seen[seq]++)
			fail(tq, "request completed twice");
		tq->free_bufs[tq->nfree++] = b;
		tq->done++;
		n++;
	}
	return n;
}

static void swap_fds(struct traffic_queue *tq)
{
	int k = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC), c = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (k < 0 || c < 0 || vqs_queue_set_fds(atomic_load(&tq->q), k, c)) {
		fail(tq, "set_fds failed");
		return;
	}
	close(tq->kick);
	close(tq->call);
	tq->kick = k;
	tq->call = c;
	kick(tq); /* whatever the old fd got after the switch is for the new one too */
}

static void driver_delay(struct traffic_queue *tq)
{
	unsigned r = rnd(&tq->seed);
	if (r % 64 == 0) {
		struct timespec ts = {0, (long)(r % 100) * 1000};
		nanosleep(&ts, NULL); /* long enough for the worker to go to sleep */
	} else {
		for (volatile unsigned i = 0, spins = r % 512; i < spins; i++)
			;
	}
}

static void *driver_main(void *arg)
{
	struct traffic_queue *tq = arg;
	const struct traffic_cfg *cfg = &tq->t->cfg;
	uint64_t progress = vqs_now_ns();
	unsigned long next_swap = cfg->swap_fds_every;
	while (tq->done < tq->total && !tq->error) {
		unsigned burst = 1 + rnd(&tq->seed) % 8, added = 0;
		while (added < burst && tq->sent < tq->total && tq->nfree) {
			unsigned b = tq->free_bufs[--tq->nfree];
			uint64_t seq = tq->sent++;
			tq->buf_seq[b] = seq;
			memcpy(vqs_gmem_host(tq->p.gmem, tq->buf_gpa[b], 8), &seq, 8);
			struct vqs_drv_buf bufs[2] = {{tq->buf_gpa[b], 16}, {tq->buf_gpa[b] + 16, 8}};
			if (vqs_drv_add(tq->p.drv, bufs, 1, 1, &tq->buf_seq[b], false)) {
				fail(tq, "drv_add failed");
				break;
			}
			added++;
		}
		if (added && vqs_drv_kick_prepare(tq->p.drv))
			kick(tq);
		if (cfg->delays)
			driver_delay(tq);
		if (next_swap && tq->sent >= next_swap) {
			swap_fds(tq);
			next_swap += cfg->swap_fds_every;
		}
		if (reap(tq)) {
			progress = vqs_now_ns();
			continue;
		}
		if (tq->sent < tq->total && tq->nfree)
			continue;
		if (vqs_drv_enable_cb(tq->p.drv))
			continue;
		struct pollfd pfd = {.fd = tq->call, .events = POLLIN};
		if (poll(&pfd, 1, 100) > 0) {
			uint64_t v;
			if (read(tq->call, &v, sizeof(v)) < 0 && errno != EAGAIN)
				fail(tq, "call read failed");
		} else if (vqs_now_ns() - progress > STALL_NS) {
			fail(tq, "stalled: a wakeup was lost");
		}
	}
	atomic_fetch_sub(&tq->t->drivers, 1);
	return NULL;
}

/* ---- setup ---- */

void traffic_queue_opts(struct traffic_queue *tq, struct vqs_queue_opts *o)
{
	vqs_queue_opts_init(o);
	o->vq = tq->p.dev;
	o->kick_fd = tq->kick;
	o->call_fd = tq->call;
	o->handler = traffic_handler;
	o->opaque = tq;
	o->group = tq->t->cfg.group;
}

int traffic_init(struct traffic *t, struct vqs_sched *s, const struct traffic_cfg *cfg)
{
	memset(t, 0, sizeof(*t));
	t->cfg = *cfg;
	t->s = s;
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->cap = cfg->nqueues * cfg->num * 2;
	t->pending = calloc(t->cap, sizeof(*t->pending));
	t->wakes = calloc(t->cap, sizeof(*t->wakes));
	t->tq = calloc(cfg->nqueues, sizeof(*t->tq));
	if (!t->pending || !t->wakes || !t->tq)
		return -ENOMEM;
	if (pthread_create(&t->completer, NULL, completer_main, t))
		return -EAGAIN;
	for (unsigned i = 0; i < cfg->nqueues; i++) {
		struct traffic_queue *tq = &t->tq[i];
		tq->t = t;
		tq->idx = i;
		tq->seed = 12345u + i;
		tq->total = cfg->total / cfg->nqueues + (i < cfg->total % cfg->nqueues);
		int rc = vqs_pair_init(&tq->p, cfg->num, cfg->features, 0x100000, ARENA);
		if (rc)
			return rc;
		tq->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		tq->call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		tq->seen = calloc(tq->total, 1);
		tq->buf_gpa = calloc(cfg->num, sizeof(uint64_t));
		tq->buf_seq = calloc(cfg->num, sizeof(uint64_t));
		tq->free_bufs = calloc(cfg->num, sizeof(unsigned));
		if (tq->kick < 0 || tq->call < 0 || !tq->seen || !tq->buf_gpa || !tq->buf_seq ||
		    !tq->free_bufs)
			return -ENOMEM;
		/* Two descriptors per request: half as many requests as ring slots fit at once. */
		for (unsigned b = 0; b < cfg->num / 2; b++) {
			tq->buf_gpa[b] = vqs_gmem_alloc(tq->p.gmem, 24, 8);
			if (!tq->buf_gpa[b])
				return -ENOMEM;
			tq->free_bufs[tq->nfree++] = b;
		}
		struct vqs_queue_opts o;
		traffic_queue_opts(tq, &o);
		struct vqs_queue *q;
		if ((rc = vqs_sched_attach(s, &o, &q)))
			return rc;
		atomic_store(&tq->q, q);
	}
	return 0;
}

bool traffic_running(struct traffic *t) { return atomic_load(&t->drivers) > 0; }

void traffic_start(struct traffic *t)
{
	atomic_store(&t->drivers, t->cfg.nqueues);
	for (unsigned i = 0; i < t->cfg.nqueues; i++)
		pthread_create(&t->tq[i].th, NULL, driver_main, &t->tq[i]);
}

int traffic_join(struct traffic *t)
{
	int rc = 0;
	for (unsigned i = 0; i < t->cfg.nqueues; i++) {
		struct traffic_queue *tq = &t->tq[i];
		pthread_join(tq->th, NULL);
		for (unsigned long s = 0; s < tq->total && !tq->error; s++)
			if (tq->seen[s] != 1)
				fail(tq, "request never completed");
		if (tq->error || vqs_vq_is_broken(tq->p.dev)) {
			fprintf(stderr, "queue %u: %s (%lu of %lu done, device %s)\n", i,
				tq->error ? tq->error : "ring broken", tq->done, tq->total,
				vqs_vq_err_name(vqs_vq_error(tq->p.dev)));
			rc = -1;
		}
	}
	return rc;
}

int traffic_run(enum vqs_policy p, unsigned nworkers, const struct traffic_cfg *cfg,
		struct vqs_queue_stats *sum)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = p;
	so.nworkers = nworkers;
	struct vqs_sched *s;
	int rc = vqs_sched_create(&s, &so);
	if (rc)
		return rc;
	static struct traffic t;
	if ((rc = traffic_init(&t, s, cfg))) {
		vqs_sched_destroy(s);
		return rc;
	}
	traffic_start(&t);
	rc = traffic_join(&t);
	memset(sum, 0, sizeof(*sum));
	for (unsigned i = 0; i < cfg->nqueues; i++) {
		struct vqs_queue_stats st = {.size = sizeof(st)};
		vqs_queue_stats_get(atomic_load(&t.tq[i].q), &st);
		sum->reqs += st.reqs;
		sum->async_completions += st.async_completions;
		sum->given_back += st.given_back;
	}
	traffic_fini(&t);
	vqs_sched_destroy(s);
	return rc;
}

void traffic_fini(struct traffic *t)
{
	/* The completer finishes everything posted (requests and wakes) before it stops, so no
	 * request stays outstanding and no wake can reach a detached queue. */
	pthread_mutex_lock(&t->mu);
	t->stop = true;
	pthread_cond_signal(&t->cv);
	pthread_mutex_unlock(&t->mu);
	pthread_join(t->completer, NULL);
	for (unsigned i = 0; t->tq && i < t->cfg.nqueues; i++) {
		struct vqs_queue *q = atomic_load(&t->tq[i].q);
		if (q)
			vqs_sched_detach(q);
	}
	for (unsigned i = 0; t->tq && i < t->cfg.nqueues; i++) {
		struct traffic_queue *tq = &t->tq[i];
		if (tq->kick > 0)
			close(tq->kick);
		if (tq->call > 0)
			close(tq->call);
		vqs_pair_fini(&tq->p);
		free(tq->seen);
		free(tq->buf_gpa);
		free(tq->buf_seq);
		free(tq->free_bufs);
	}
	free(t->tq);
	free(t->pending);
	free(t->wakes);
	pthread_mutex_destroy(&t->mu);
	pthread_cond_destroy(&t->cv);
}
