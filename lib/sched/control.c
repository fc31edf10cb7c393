/* SPDX-License-Identifier: MIT */
/*
 * Control side of the scheduler: create and destroy workers and their groups, attach and detach
 * queues, pause/resume, move, replace eventfds, change the policy.
 *
 * Every control operation is serialised by s->ctl and works on paused queues: pause_locked()
 * waits until no worker runs the queue and it is on no ready list, after which the control thread
 * owns the queue (its vq, slots, group). Completions arriving meanwhile wait on q->done (and
 * detach publishes them itself). Kick events that raced with an unregistration find the queue by
 * key in s->table inside an RCU read-side section; detach clears the entry and waits a grace
 * period before freeing, so a late event or completer never touches freed memory.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <urcu-bp.h>

#include "sched/internal.h"
#include "sched/slots.h"
#include "util/log.h"
#include "util/tsan.h"
#include "util/alloc.h"

#define SCHED_MAX_WORKERS 256u

void vqs_sched_opts_init(struct vqs_sched_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->policy = VQS_POLICY_DEDICATED;
	o->nworkers = 1;
	o->poll_timeout_us = 50;
	o->batch_max = 64;
	o->budget_pkts = 256;
	o->budget_bytes = 0x80000;
	o->placement = VQS_PLACE_FLOAT;
	o->numa_node = -1;
	o->spin_pct = 200;
}

void vqs_queue_opts_init(struct vqs_queue_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->kick_fd = -1;
	o->call_fd = -1;
	o->group = -1;
	o->worker = -1;
	o->iov_per_req = 16;
	o->prefetch_lines = 1;
}

/* ---- groups and workers ---- */

static void group_free(struct sched_group *g)
{
	if (!g)
		return;
	if (g->epfd >= 0)
		close(g->epfd);
	if (g->bell_fd >= 0)
		close(g->bell_fd);
	pthread_mutex_destroy(&g->take_lock);
	free(g);
}

static int group_new(struct sched_group **out)
{
	struct sched_group *g = vqs_alloc_lines(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	pthread_mutex_init(&g->take_lock, NULL);
	g->epfd = epoll_create1(EPOLL_CLOEXEC);
	g->bell_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = SCHED_BELL_KEY};
	if (g->epfd < 0 || g->bell_fd < 0 || epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->bell_fd, &ev)) {
		int rc = -errno;
		group_free(g);
		return rc;
	}
	*out = g;
	return 0;
}

static int worker_start(struct vqs_sched *s, struct sched_group *shared, int group_id,
			int node_hint)
{
	if (s->nw == SCHED_MAX_WORKERS)
		return -EMFILE;
	if (s->nw == s->capw) {
		unsigned cap = s->capw ? s->capw * 2 : 4;
		struct sched_worker **w = realloc(s->w, cap * sizeof(*w));
		if (!w)
			return -ENOMEM;
		s->w = w;
		s->capw = cap;
	}
	struct sched_worker *w = vqs_alloc_lines(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->s = s;
	w->index = s->nw;
	w->group_id = group_id;
	int rc = 0;
	if (shared) {
		w->g = shared;
	} else {
		w->own_group = true;
		rc = group_new(&w->g);
	}
	if (!rc)
		rc = sched_place(s, w->index, node_hint, &w->mask, &w->numa_node);
	if (rc)
		goto fail;
	/* The mask is part of the thread's creation: it never runs a single instruction on a mask
	 * inherited from whoever called us. */
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setaffinity_np(&attr, sizeof(w->mask), &w->mask);
	rc = -pthread_create(&w->th, &attr, sched_worker_main, w);
	pthread_attr_destroy(&attr);
	if (rc) {
		vqs_err("sched: cannot start worker %u: %d", w->index, rc);
		goto fail;
	}
	pthread_mutex_lock(&s->sig_mu);
	while (!atomic_load(&w->tid))
		pthread_cond_wait(&s->sig_cv, &s->sig_mu);
	pthread_mutex_unlock(&s->sig_mu);
	s->w[s->nw++] = w;
	return 0;
fail:
	if (w->own_group)
		group_free(w->g);
	free(w);
	return rc;
}

/* Stop and join every worker, free their groups. Queues must be paused (or none attached). */
static void workers_stop(struct vqs_sched *s)
{
	for (unsigned i = 0; i < s->nw; i++) {
		/* release pairs with the acquire load in sched_worker_main. */
		atomic_store_explicit(&s->w[i]->g->stop, true, memory_order_release);
		group_ring(s->w[i]->g);
	}
	for (unsigned i = 0; i < s->nw; i++)
		pthread_join(s->w[i]->th, NULL);
	/* A waker (completer, vqs_queue_wake) that made a queue READY may still be inside
	 * group_push on the group after a worker took the queue and it reached PAUSED: wakers run
	 * in read-side sections, so a grace period lets them leave the group before it is freed. */
	urcu_bp_synchronize_rcu();
	vqs_tsan_acquire(&sched_tsan_grace);
	for (unsigned i = 0; i < s->nw; i++) {
		if (s->w[i]->own_group)
			group_free(s->w[i]->g);
		free(s->w[i]);
	}
	s->nw = 0;
	group_free(s->pool_group);
	s->pool_group = NULL;
}

static int workers_start(struct vqs_sched *s)
{
	int rc = 0;
	switch (s->o.policy) {
	case VQS_POLICY_DEDICATED:
		return 0; /* one per queue or queue group, at attach */
	case VQS_POLICY_POOL:
		rc = group_new(&s->pool_group);
		for (unsigned i = 0; !rc && i < s->o.nworkers; i++)
			rc = worker_start(s, s->pool_group, -1, -1);
		break;
	default:
		for (unsigned i = 0; !rc && i < s->o.nworkers; i++)
			rc = worker_start(s, NULL, -1, -1);
		break;
	}
	if (rc)
		workers_stop(s);
	return rc;
}

/* ---- queue states (control side) ---- */

/* Wait until q is PAUSED: off every list, run by nobody; then the control thread owns it. */
static void pause_locked(struct vqs_queue *q)
{
	uint32_t st = atomic_load_explicit(&q->state, memory_order_relaxed);
	for (;;) {
		uint32_t next;
		switch (st & Q_STATE_MASK) {
		case Q_PAUSED:
			/* acquire: a pause that another path already completed */
			atomic_thread_fence(memory_order_acquire);
			return;
		case Q_IDLE:
			next = Q_PAUSED | (st & Q_PENDING);
			break;
		default:
			next = st | Q_PAUSE_REQ;
			break;
		}
		/* acq_rel pairs with sched_finish()/sched_take_turn() on the worker and
		 * sched_queue_wake. */
		if (atomic_compare_exchange_weak_explicit(&q->state, &st, next, memory_order_acq_rel,
							  memory_order_relaxed))
			break;
	}
	pthread_mutex_lock(&q->s->sig_mu);
	/* acquire pairs with the worker's acq_rel CAS to PAUSED. */
	while ((atomic_load_explicit(&q->state, memory_order_acquire) & Q_STATE_MASK) != Q_PAUSED)
		pthread_cond_wait(&q->s->sig_cv, &q->s->sig_mu);
	pthread_mutex_unlock(&q->s->sig_mu);
}

/* PAUSED -> READY: one turn looks at the ring and the completions, whatever happened meanwhile. */
static void resume_locked(struct vqs_queue *q)
{
	q->broken = false; /* the caller may have reset the ring; a pop tells again if not */
	struct vqs_vq_config c;
	if (vqs_vq_get_config(q->vq, &c) == 0) /* it may have been reconfigured while paused */
		q->mem = c.mem;
	sched_queue_order_init(q);
	atomic_store_explicit(&q->noticed_ns, vqs_now_ns(), memory_order_relaxed);
	/* An RMW, not a store: acquire takes in what wakers published while the queue was paused
	 * (their RMWs set PENDING), release hands that and the control thread's changes (group,
	 * fds, vq) to the worker whose sched_take_turn reads READY. */
	atomic_exchange_explicit(&q->state, Q_READY, memory_order_acq_rel);
	group_push(atomic_load_explicit(&q->group, memory_order_relaxed), q);
}

static int kick_register(struct vqs_queue *q, int op)
{
	int fd = atomic_load_explicit(&q->kick_fd, memory_order_relaxed);
	if (fd < 0)
		return 0;
	struct sched_group *g = atomic_load_explicit(&q->group, memory_order_relaxed);
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.u64 = q->key};
	if (epoll_ctl(g->epfd, op, fd, &ev) == 0)
		return 0;
	int rc = -errno;
	vqs_warn("sched: epoll_ctl(%d) of kick fd %d: %d", op, fd, rc);
	return rc;
}

/* NUMA node of q's ring memory, -1 unknown. */
static int ring_node(struct vqs_queue *q)
{
	struct vqs_vq_config c;
	if (vqs_vq_get_config(q->vq, &c))
		return -1;
	vqs_mem_read_lock();
	const struct vqs_mem_table *t = vqs_mem_current(c.mem);
	void *p = c.addr_space == VQS_ADDR_UADDR ? vqs_mem_uaddr_to_host(t, c.desc_addr, 1)
						 : vqs_mem_gpa_to_host(t, c.desc_addr, 1);
	int node = p ? sched_mem_node(p) : -1;
	vqs_mem_read_unlock();
	return node;
}

/* Make g q's group (q is PAUSED); NULL leaves its group. Keeps the groups' queue counts (all,
 * and those with notifications on). */
static void set_group(struct vqs_queue *q, struct sched_group *g)
{
	struct sched_group *old = atomic_load_explicit(&q->group, memory_order_relaxed);
	if (old) {
		atomic_fetch_sub_explicit(&old->nqueues, 1, memory_order_relaxed);
		if (q->notify_on)
			atomic_fetch_sub_explicit(&old->armed, 1, memory_order_relaxed);
	}
	if (g) {
		atomic_fetch_add_explicit(&g->nqueues, 1, memory_order_relaxed);
		if (q->notify_on)
			atomic_fetch_add_explicit(&g->armed, 1, memory_order_relaxed);
	}
	/* release: the group is read by wakers after their acquire CAS on the state. */
	atomic_store_explicit(&q->group, g, memory_order_release);
}

/* Choose q's worker and group under the current policy; may start a dedicated worker. */
static int assign(struct vqs_queue *q)
{
	struct vqs_sched *s = q->s;
	struct sched_worker *home = NULL;
	if (s->o.policy == VQS_POLICY_POOL) {
		set_group(q, s->pool_group);
		q->home = NULL;
		return 0;
	}
	if (s->o.policy == VQS_POLICY_DEDICATED) {
		for (unsigned i = 0; !home && i < s->nw; i++)
			if (q->group_id >= 0 && s->w[i]->group_id == q->group_id && s->w[i]->nqueues)
				home = s->w[i];
		for (unsigned i = 0; !home && i < s->nw; i++)
			if (!s->w[i]->nqueues)
				home = s->w[i]; /* reuse a thread whose queues left */
		if (!home) {
			int rc = worker_start(s, NULL, q->group_id, ring_node(q));
			if (rc)
				return rc;
			home = s->w[s->nw - 1];
		}
		home->group_id = q->group_id;
	} else if (q->pref_worker >= 0 && (unsigned)q->pref_worker < s->nw) {
		home = s->w[q->pref_worker];
	} else {
		home = s->w[0];
		for (unsigned i = 1; i < s->nw; i++)
			if (s->w[i]->nqueues < home->nqueues)
				home = s->w[i];
	}
	home->nqueues++;
	q->home = home;
	set_group(q, home->g);
	return 0;
}

static void unassign(struct vqs_queue *q)
{
	if (q->home)
		q->home->nqueues--;
	q->home = NULL;
	set_group(q, NULL);
}

/* ---- scheduler ---- */

int vqs_sched_create(struct vqs_sched **out, const struct vqs_sched_opts *opts)
{
	struct vqs_sched_opts o;
	vqs_sched_opts_init(&o);
	if (!out || !opts || opts->size < offsetof(struct vqs_sched_opts, nworkers))
		return -EINVAL;
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	o.size = sizeof(o);
	if (!sched_policy_get(o.policy) || (unsigned)o.placement > VQS_PLACE_AUTO ||
	    !o.nworkers || o.nworkers > SCHED_MAX_WORKERS || !o.batch_max || o.batch_max > SCHED_BATCH_MAX ||
	    !o.budget_pkts || !o.budget_bytes || o.spin_pct > SCHED_SPIN_PCT_MAX ||
	    (o.placement == VQS_PLACE_PIN && !CPU_COUNT(&o.cpus)))
		return -EINVAL;
	struct vqs_sched *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->o = o;
	s->pol = sched_policy_get(o.policy);
	pthread_mutex_init(&s->ctl, NULL);
	pthread_mutex_init(&s->sig_mu, NULL);
	pthread_cond_init(&s->sig_cv, NULL);
	int rc = -pthread_getaffinity_np(pthread_self(), sizeof(s->inherit_mask), &s->inherit_mask);
	if (!rc)
		rc = sched_place_init(s);
	if (!rc) {
		sched_measure_costs(s);
		rc = workers_start(s);
	}
	if (rc) {
		sched_place_fini(s);
		free(s->w);
		free(s);
		return rc;
	}
	*out = s;
	return 0;
}

static void queue_free(struct vqs_queue *q)
{
	free(q->reqs);
	free(q->long_ids);
	free(q->pin_mem);
	free(q->order);
	free(q);
}

static int detach_locked(struct vqs_queue *q)
{
	struct vqs_sched *s = q->s;
	pause_locked(q);
	/* We own the vq now; publish every outstanding completion as it comes. */
	pthread_mutex_lock(&s->sig_mu);
	for (;;) {
		sched_reap(q);
		if (!q->nout)
			break;
		pthread_cond_wait(&s->sig_cv, &s->sig_mu);
	}
	pthread_mutex_unlock(&s->sig_mu);
	kick_register(q, EPOLL_CTL_DEL);
	unassign(q);
	atomic_store_explicit(&s->table[(uint32_t)q->key], NULL, memory_order_relaxed);
	for (struct vqs_queue **p = &s->queues; *p; p = &(*p)->next_attached)
		if (*p == q) {
			*p = q->next_attached;
			break;
		}
	return 0;
}

static void queue_reclaim(struct vqs_queue *q)
{
	/* Wakers and epoll events still holding q are inside read-side sections. */
	urcu_bp_synchronize_rcu();
	vqs_tsan_acquire(&sched_tsan_grace);
	queue_free(q);
}

void vqs_sched_destroy(struct vqs_sched *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->ctl);
	while (s->queues) {
		struct vqs_queue *q = s->queues;
		detach_locked(q);
		queue_reclaim(q);
	}
	workers_stop(s);
	pthread_mutex_unlock(&s->ctl);
	sched_place_fini(s);
	pthread_mutex_destroy(&s->ctl);
	pthread_mutex_destroy(&s->sig_mu);
	pthread_cond_destroy(&s->sig_cv);
	free(s->w);
	free(s);
}

/* The queue's requests, one per chain id of a ring of n entries (whole lines each, so a request
 * completed on one thread shares no line with its neighbour's), each element naming its own
 * iovecs, where the ring pops its chains. */
static int slots_alloc(struct vqs_queue *q, unsigned n)
{
	size_t iov = q->iov_per_req * sizeof(struct iovec);
	q->req_stride = (uint32_t)((sizeof(struct req_slot) + iov + VQS_CACHE_LINE - 1) &
				   ~(size_t)(VQS_CACHE_LINE - 1));
	q->reqs = vqs_alloc_lines(n, q->req_stride);
	q->pin_mem = vqs_alloc_lines(n, sizeof(*q->pin_mem));
	q->order = vqs_alloc_lines(n, sizeof(*q->order));
	q->long_ids = vqs_alloc_lines(n, sizeof(*q->long_ids));
	if (!q->reqs || !q->pin_mem || !q->order || !q->long_ids)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		q->pin_mem[i].next_free = q->free_pins;
		q->free_pins = &q->pin_mem[i];
		struct req_slot *r = slot_of(q, i);
		r->q = q;
		r->req.elem.iov = r->iov;
		r->req.elem.iov_cap = q->iov_per_req;
	}
	q->nslots = n;
	return 0;
}

int vqs_sched_attach(struct vqs_sched *s, const struct vqs_queue_opts *opts,
		     struct vqs_queue **out)
{
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	if (!s || !out || !opts || opts->size < offsetof(struct vqs_queue_opts, opaque))
		return -EINVAL;
	memcpy(&o, opts, opts->size < sizeof(o) ? opts->size : sizeof(o));
	if (!o.vq || !o.handler || !vqs_vq_is_configured(o.vq) || !o.iov_per_req)
		return -EINVAL;
	struct vqs_queue *q = vqs_alloc_lines(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->s = s;
	q->vq = o.vq;
	q->handler = o.handler;
	q->opaque = o.opaque;
	q->on_broken = o.on_broken;
	q->on_broken_opaque = o.on_broken_opaque;
	q->group_id = o.group;
	q->pref_worker = o.worker;
	q->iov_per_req = o.iov_per_req;
	q->prefetch_lines = o.prefetch_lines;
	q->handler_nonblocking = o.handler_nonblocking;
	q->demand = o.demand;
	q->notify_on = true;
	q->req_ns = SCHED_CLOCK_NS; /* unknown: a read after every batch until it is measured */
	atomic_init(&q->kick_fd, o.kick_fd);
	atomic_init(&q->call_fd, o.call_fd);
	atomic_init(&q->state, Q_PAUSED);
	int rc = slots_alloc(q, vqs_vq_num(o.vq));
	if (rc) {
		queue_free(q);
		return rc;
	}
	pthread_mutex_lock(&s->ctl);
	uint32_t idx = 0;
	while (idx < SCHED_MAX_QUEUES && atomic_load_explicit(&s->table[idx], memory_order_relaxed))
		idx++;
	if (idx == SCHED_MAX_QUEUES)
		rc = -ENOSPC;
	if (!rc) {
		q->key = (uint64_t)++s->table_gen[idx] << 32 | idx;
		rc = assign(q);
	}
	if (!rc && (rc = kick_register(q, EPOLL_CTL_ADD)))
		unassign(q);
	if (rc) {
		pthread_mutex_unlock(&s->ctl);
		queue_free(q);
		return rc;
	}
	/* release pairs with the acquire lookup of kick events. */
	atomic_store_explicit(&s->table[idx], q, memory_order_release);
	q->next_attached = s->queues;
	s->queues = q;
	resume_locked(q);
	pthread_mutex_unlock(&s->ctl);
	*out = q;
	return 0;
}

int vqs_sched_detach(struct vqs_queue *q)
{
	if (!q)
		return -EINVAL;
	struct vqs_sched *s = q->s;
	pthread_mutex_lock(&s->ctl);
	int rc = detach_locked(q);
	pthread_mutex_unlock(&s->ctl);
	queue_reclaim(q);
	return rc;
}

int vqs_queue_pause(struct vqs_queue *q)
{
	pthread_mutex_lock(&q->s->ctl);
	pause_locked(q);
	q->user_paused = true;
	pthread_mutex_unlock(&q->s->ctl);
	return 0;
}

int vqs_queue_resume(struct vqs_queue *q)
{
	pthread_mutex_lock(&q->s->ctl);
	int rc = q->user_paused ? 0 : -EINVAL;
	/* No group: a policy change failed to place it (vqs_sched_set_policy reported it). */
	if (!rc && !atomic_load_explicit(&q->group, memory_order_relaxed))
		rc = -EIO;
	if (!rc) {
		q->user_paused = false;
		resume_locked(q);
	}
	pthread_mutex_unlock(&q->s->ctl);
	return rc;
}

/* Pause q unless the user holds it paused already; returns whether to resume afterwards. */
static bool hold(struct vqs_queue *q)
{
	if (q->user_paused)
		return false;
	pause_locked(q);
	return true;
}

int vqs_queue_set_fds(struct vqs_queue *q, int kick_fd, int call_fd)
{
	pthread_mutex_lock(&q->s->ctl);
	bool resume = hold(q);
	kick_register(q, EPOLL_CTL_DEL);
	atomic_store_explicit(&q->kick_fd, kick_fd, memory_order_relaxed);
	atomic_store_explicit(&q->call_fd, call_fd, memory_order_relaxed);
	int rc = kick_register(q, EPOLL_CTL_ADD);
	if (rc)
		atomic_store_explicit(&q->kick_fd, -1, memory_order_relaxed);
	if (resume)
		resume_locked(q);
	pthread_mutex_unlock(&q->s->ctl);
	return rc;
}

int vqs_queue_move(struct vqs_queue *q, unsigned worker)
{
	struct vqs_sched *s = q->s;
	pthread_mutex_lock(&s->ctl);
	int rc = worker < s->nw ? 0 : -EINVAL;
	/* pool: every worker serves every queue already; nothing to move. */
	if (!rc && s->o.policy != VQS_POLICY_POOL && s->w[worker] != q->home) {
		bool resume = hold(q);
		kick_register(q, EPOLL_CTL_DEL);
		unassign(q);
		q->home = s->w[worker];
		q->home->nqueues++;
		set_group(q, q->home->g);
		rc = kick_register(q, EPOLL_CTL_ADD);
		if (resume)
			resume_locked(q);
	}
	pthread_mutex_unlock(&s->ctl);
	return rc;
}

int vqs_sched_set_policy(struct vqs_sched *s, enum vqs_policy p)
{
	if (!sched_policy_get(p))
		return -EINVAL;
	pthread_mutex_lock(&s->ctl);
	if (p == s->o.policy) {
		pthread_mutex_unlock(&s->ctl);
		return 0;
	}
	for (struct vqs_queue *q = s->queues; q; q = q->next_attached) {
		pause_locked(q);
		kick_register(q, EPOLL_CTL_DEL);
		unassign(q);
	}
	workers_stop(s);
	s->o.policy = p;
	s->pol = sched_policy_get(p);
	int rc = workers_start(s);
	for (struct vqs_queue *q = s->queues; !rc && q; q = q->next_attached)
		if (!(rc = assign(q)) && !(rc = kick_register(q, EPOLL_CTL_ADD)) && !q->user_paused)
			resume_locked(q);
	if (rc)
		vqs_err("sched: switching to %s failed (%d); queues stay paused", vqs_policy_name(p),
			rc);
	pthread_mutex_unlock(&s->ctl);
	return rc;
}

unsigned vqs_sched_nworkers(const struct vqs_sched *s)
{
	pthread_mutex_lock((pthread_mutex_t *)&s->ctl);
	unsigned n = s->nw;
	pthread_mutex_unlock((pthread_mutex_t *)&s->ctl);
	return n;
}

int vqs_sched_worker_cpus(struct vqs_sched *s, unsigned i, cpu_set_t *cpus)
{
	pthread_mutex_lock(&s->ctl);
	int rc = i < s->nw ? -pthread_getaffinity_np(s->w[i]->th, sizeof(*cpus), cpus) : -ENOENT;
	pthread_mutex_unlock(&s->ctl);
	return rc;
}

int vqs_sched_worker_tid(struct vqs_sched *s, unsigned i)
{
	pthread_mutex_lock(&s->ctl);
	int rc = i < s->nw ? atomic_load(&s->w[i]->tid) : -ENOENT;
	pthread_mutex_unlock(&s->ctl);
	return rc;
}
