/* SPDX-License-Identifier: MIT */
/*
 * The modelled vhost device (drivers/vhost/vhost.c): workers draining lock-free work lists, vq to
 * worker attachment, and polls turning kick eventfds into queued work.
 *
 * A worker sleeps in an epoll set holding its wake eventfd and the kick fds of the polls of the
 * vqs attached to it, so a kick costs one wake-up, as the kernel's waitqueue callback does.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ksim/fork.h"
#include "ksim/wait.h"
#include "util/log.h"

#define WORK_QUEUED 1u

struct ksim_worker {
	struct vqs_ksim_dev *dev;
	pthread_t thread;
	atomic_int tid;
	struct vqs_ksim_work *_Atomic head; /* llist: newest first */
	atomic_int sleeping;
	atomic_bool stop;
	int wake_fd;
	int ep_fd;
	unsigned attached; /* vqs attached (control threads, under dev->lock) */
};

struct ksim_vq {
	struct ksim_worker *_Atomic worker;
	int poll_fd; /* -1 when the poll is stopped */
	struct vqs_ksim_work *poll_work;
};

struct vqs_ksim_dev {
	struct vqs_ksim_dev_opts opts;
	pthread_mutex_t lock; /* control operations */
	struct ksim_worker *workers[VQS_KSIM_MAX_WORKERS];
	struct ksim_vq vqs[VQS_KSIM_MAX_VQS];
};

const char *vqs_ksim_fork_name(enum vqs_ksim_fork f)
{
	return f == VQS_KSIM_FORK_TASK ? "task" : "kthread";
}

void vqs_ksim_work_init(struct vqs_ksim_work *w, vqs_ksim_work_fn fn, void *opaque)
{
	atomic_init(&w->next, NULL);
	atomic_init(&w->flags, 0);
	w->fn = fn;
	w->opaque = opaque;
}

void vqs_ksim_dev_opts_init(struct vqs_ksim_dev_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->fork = VQS_KSIM_FORK_KTHREAD;
	o->nvqs = 2;
	o->wait = VQS_KSIM_WAIT_BLOCK;
}

static bool worker_queue(struct ksim_worker *wk, struct vqs_ksim_work *w)
{
	if (atomic_fetch_or(&w->flags, WORK_QUEUED) & WORK_QUEUED)
		return false;
	struct vqs_ksim_work *first = atomic_load_explicit(&wk->head, memory_order_relaxed);
	do
		atomic_store_explicit(&w->next, first, memory_order_relaxed);
	/* release: pairs with the worker's acquire exchange of head; w's fields are visible. */
	while (!atomic_compare_exchange_weak_explicit(&wk->head, &first, w, memory_order_release,
						      memory_order_relaxed));
	/* seq_cst fence then load: pairs with the worker's seq_cst store of `sleeping` and its
	 * re-load of head before it sleeps, so one of the two sees the other (no missed wake-up). */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load(&wk->sleeping) && atomic_exchange(&wk->sleeping, 0))
		ksim_efd_signal(wk->wake_fd);
	return true;
}

bool vqs_ksim_vq_work_queue(struct vqs_ksim_dev *d, unsigned vq, struct vqs_ksim_work *w)
{
	if (vq >= d->opts.nvqs)
		return false;
	/* acquire: pairs with the release store in attach; the worker is fully set up. */
	struct ksim_worker *wk = atomic_load_explicit(&d->vqs[vq].worker, memory_order_acquire);
	return wk ? worker_queue(wk, w) : false;
}

/* Read ready kick fds without sleeping (timeout 0) or until one is ready; queue their works. */
static void harvest(struct ksim_worker *wk)
{
	struct epoll_event ev[16];
	int n = epoll_wait(wk->ep_fd, ev, 16, 0);
	for (int i = 0; i < n; i++) {
		struct ksim_vq *kvq = ev[i].data.ptr;
		if (!kvq) {
			ksim_efd_clear(wk->wake_fd);
			continue;
		}
		ksim_efd_clear(kvq->poll_fd);
		struct ksim_worker *cur =
			atomic_load_explicit(&kvq->worker, memory_order_acquire); /* pairs with attach */
		worker_queue(cur, kvq->poll_work);
	}
}

static void run_list(struct vqs_ksim_work *node)
{
	/* The list is newest first: reverse it so work runs in queueing order. */
	struct vqs_ksim_work *fifo = NULL;
	while (node) {
		struct vqs_ksim_work *next = atomic_load_explicit(&node->next, memory_order_relaxed);
		atomic_store_explicit(&node->next, fifo, memory_order_relaxed);
		fifo = node;
		node = next;
	}
	while (fifo) {
		/* Read next before clearing QUEUED: once cleared, another thread may requeue the
		 * item and rewrite next. */
		struct vqs_ksim_work *next = atomic_load_explicit(&fifo->next, memory_order_relaxed);
		/* seq_cst: a queue after this point must see the bit clear and queue again; pairs
		 * with the fetch_or in worker_queue. */
		atomic_fetch_and(&fifo->flags, ~WORK_QUEUED);
		fifo->fn(fifo);
		fifo = next;
	}
}

static void *worker_main(void *p)
{
	struct ksim_worker *wk = p;
	atomic_store(&wk->tid, (int)syscall(SYS_gettid));
	const struct vqs_ksim_dev_opts *o = &wk->dev->opts;
	for (;;) {
		/* acquire: pairs with the release CAS in worker_queue. */
		struct vqs_ksim_work *list =
			atomic_exchange_explicit(&wk->head, NULL, memory_order_acquire);
		if (list) {
			run_list(list);
			harvest(wk); /* kicks must not starve behind a stream of requeued work */
			continue;
		}
		harvest(wk);
		if (atomic_load_explicit(&wk->head, memory_order_relaxed))
			continue;
		if (atomic_load(&wk->stop))
			break;
		atomic_store(&wk->sleeping, 1); /* seq_cst: pairs with the fence in worker_queue */
		if (atomic_load(&wk->head) || atomic_load(&wk->stop)) {
			atomic_store(&wk->sleeping, 0);
			continue;
		}
		ksim_fd_wait(wk->ep_fd, o->wait, UINT64_MAX, o->wake_ns);
		atomic_store(&wk->sleeping, 0);
	}
	return NULL;
}

static void worker_destroy(struct ksim_worker *wk)
{
	if (wk->wake_fd >= 0)
		close(wk->wake_fd);
	if (wk->ep_fd >= 0)
		close(wk->ep_fd);
	free(wk);
}

static int worker_create(struct vqs_ksim_dev *d, struct ksim_worker **out)
{
	struct ksim_worker *wk = calloc(1, sizeof(*wk));
	if (!wk)
		return -ENOMEM;
	wk->dev = d;
	wk->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	wk->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	int rc = 0;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	if (wk->wake_fd < 0 || wk->ep_fd < 0 ||
	    epoll_ctl(wk->ep_fd, EPOLL_CTL_ADD, wk->wake_fd, &ev))
		rc = -errno;
	if (!rc)
		rc = ksim_fork(d->opts.fork, worker_main, wk, &wk->thread);
	if (rc) {
		worker_destroy(wk);
		return rc;
	}
	*out = wk;
	return 0;
}

static void worker_stop(struct ksim_worker *wk)
{
	atomic_store(&wk->stop, true);
	ksim_efd_signal(wk->wake_fd);
	pthread_join(wk->thread, NULL);
	worker_destroy(wk);
}

struct flush_work {
	struct vqs_ksim_work work;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool done;
};

static void flush_fn(struct vqs_ksim_work *w)
{
	struct flush_work *f = w->opaque;
	pthread_mutex_lock(&f->lock);
	f->done = true;
	pthread_cond_signal(&f->cond);
	pthread_mutex_unlock(&f->lock);
}

static void worker_flush(struct ksim_worker *wk)
{
	struct flush_work f = {.lock = PTHREAD_MUTEX_INITIALIZER,
			       .cond = PTHREAD_COND_INITIALIZER,
			       .done = false};
	vqs_ksim_work_init(&f.work, flush_fn, &f);
	worker_queue(wk, &f.work);
	pthread_mutex_lock(&f.lock);
	while (!f.done)
		pthread_cond_wait(&f.cond, &f.lock);
	pthread_mutex_unlock(&f.lock);
	pthread_mutex_destroy(&f.lock);
	pthread_cond_destroy(&f.cond);
}

int vqs_ksim_dev_create(struct vqs_ksim_dev **out, const struct vqs_ksim_dev_opts *o)
{
	struct vqs_ksim_dev_opts opts;
	vqs_ksim_dev_opts_init(&opts);
	if (o) {
		if (o->size < sizeof(uint32_t) || o->size > sizeof(opts))
			return -EINVAL;
		memcpy(&opts, o, o->size);
		opts.size = sizeof(opts);
	}
	if (opts.nvqs < 1 || opts.nvqs > VQS_KSIM_MAX_VQS ||
	    (opts.fork != VQS_KSIM_FORK_KTHREAD && opts.fork != VQS_KSIM_FORK_TASK))
		return -EINVAL;
	struct vqs_ksim_dev *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->opts = opts;
	pthread_mutex_init(&d->lock, NULL);
	for (unsigned i = 0; i < VQS_KSIM_MAX_VQS; i++)
		d->vqs[i].poll_fd = -1;
	int rc = worker_create(d, &d->workers[0]);
	if (rc) {
		pthread_mutex_destroy(&d->lock);
		free(d);
		return rc;
	}
	for (unsigned i = 0; i < opts.nvqs; i++) {
		atomic_init(&d->vqs[i].worker, d->workers[0]);
		d->workers[0]->attached++;
	}
	*out = d;
	return 0;
}

void vqs_ksim_dev_destroy(struct vqs_ksim_dev *d)
{
	if (!d)
		return;
	for (unsigned i = 0; i < d->opts.nvqs; i++)
		vqs_ksim_poll_stop(d, i);
	for (unsigned i = 0; i < VQS_KSIM_MAX_WORKERS; i++)
		if (d->workers[i])
			worker_stop(d->workers[i]);
	pthread_mutex_destroy(&d->lock);
	free(d);
}

int vqs_ksim_worker_new(struct vqs_ksim_dev *d, unsigned *id)
{
	pthread_mutex_lock(&d->lock);
	int rc = -ENOSPC;
	for (unsigned i = 0; i < VQS_KSIM_MAX_WORKERS; i++) {
		if (d->workers[i])
			continue;
		rc = worker_create(d, &d->workers[i]);
		if (!rc)
			*id = i;
		break;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

int vqs_ksim_worker_free(struct vqs_ksim_dev *d, unsigned id)
{
	pthread_mutex_lock(&d->lock);
	struct ksim_worker *wk = id < VQS_KSIM_MAX_WORKERS ? d->workers[id] : NULL;
	int rc = !wk ? -ENOENT : wk->attached ? -EBUSY : 0;
	if (!rc)
		d->workers[id] = NULL;
	pthread_mutex_unlock(&d->lock);
	if (!rc)
		worker_stop(wk);
	return rc;
}

static void poll_move(struct ksim_vq *kvq, struct ksim_worker *from, struct ksim_worker *to)
{
	if (kvq->poll_fd < 0)
		return;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = kvq};
	if (from)
		epoll_ctl(from->ep_fd, EPOLL_CTL_DEL, kvq->poll_fd, NULL);
	if (to && epoll_ctl(to->ep_fd, EPOLL_CTL_ADD, kvq->poll_fd, &ev))
		vqs_err("ksim: cannot watch kick fd %d: %s", kvq->poll_fd, strerror(errno));
}

int vqs_ksim_vring_attach_worker(struct vqs_ksim_dev *d, unsigned vq, unsigned id)
{
	pthread_mutex_lock(&d->lock);
	struct ksim_worker *to = id < VQS_KSIM_MAX_WORKERS ? d->workers[id] : NULL;
	if (vq >= d->opts.nvqs || !to) {
		pthread_mutex_unlock(&d->lock);
		return -ENOENT;
	}
	struct ksim_vq *kvq = &d->vqs[vq];
	struct ksim_worker *from = atomic_load_explicit(&kvq->worker, memory_order_relaxed);
	if (from != to) {
		poll_move(kvq, from, to);
		/* release: pairs with the acquire loads in vqs_ksim_vq_work_queue and harvest. */
		atomic_store_explicit(&kvq->worker, to, memory_order_release);
		from->attached--;
		to->attached++;
		/* Work queued on the old worker before the switch has run when this returns. */
		worker_flush(from);
	}
	pthread_mutex_unlock(&d->lock);
	return 0;
}

int vqs_ksim_vring_get_worker(struct vqs_ksim_dev *d, unsigned vq, unsigned *id)
{
	if (vq >= d->opts.nvqs)
		return -ENOENT;
	pthread_mutex_lock(&d->lock);
	struct ksim_worker *wk = atomic_load_explicit(&d->vqs[vq].worker, memory_order_relaxed);
	int rc = -ENOENT;
	for (unsigned i = 0; i < VQS_KSIM_MAX_WORKERS; i++)
		if (d->workers[i] && d->workers[i] == wk) {
			*id = i;
			rc = 0;
		}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static struct ksim_worker *worker_get(struct vqs_ksim_dev *d, unsigned id)
{
	pthread_mutex_lock(&d->lock);
	struct ksim_worker *wk = id < VQS_KSIM_MAX_WORKERS ? d->workers[id] : NULL;
	pthread_mutex_unlock(&d->lock);
	return wk;
}

int vqs_ksim_worker_tid(struct vqs_ksim_dev *d, unsigned id)
{
	struct ksim_worker *wk = worker_get(d, id);
	if (!wk)
		return -ENOENT;
	/* The worker publishes its tid first thing; wait for it without sleeping long. */
	for (int i = 0; i < 100000 && !atomic_load(&wk->tid); i++)
		sched_yield();
	int tid = atomic_load(&wk->tid);
	return tid ? tid : -ETIMEDOUT;
}

int vqs_ksim_worker_cpus(struct vqs_ksim_dev *d, unsigned id, cpu_set_t *cpus)
{
	struct ksim_worker *wk = worker_get(d, id);
	if (!wk)
		return -ENOENT;
	return -pthread_getaffinity_np(wk->thread, sizeof(*cpus), cpus);
}

int vqs_ksim_dev_flush(struct vqs_ksim_dev *d)
{
	pthread_mutex_lock(&d->lock);
	for (unsigned i = 0; i < VQS_KSIM_MAX_WORKERS; i++)
		if (d->workers[i])
			worker_flush(d->workers[i]);
	pthread_mutex_unlock(&d->lock);
	return 0;
}

int vqs_ksim_poll_start(struct vqs_ksim_dev *d, unsigned vq, int fd, struct vqs_ksim_work *w)
{
	if (vq >= d->opts.nvqs || fd < 0 || !w)
		return -EINVAL;
	pthread_mutex_lock(&d->lock);
	struct ksim_vq *kvq = &d->vqs[vq];
	int rc = 0;
	if (kvq->poll_fd >= 0) {
		rc = -EBUSY;
	} else {
		kvq->poll_fd = fd;
		kvq->poll_work = w;
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = kvq};
		struct ksim_worker *wk = atomic_load_explicit(&kvq->worker, memory_order_relaxed);
		if (epoll_ctl(wk->ep_fd, EPOLL_CTL_ADD, fd, &ev)) {
			rc = -errno;
			kvq->poll_fd = -1;
		}
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

void vqs_ksim_poll_stop(struct vqs_ksim_dev *d, unsigned vq)
{
	if (vq >= d->opts.nvqs)
		return;
	pthread_mutex_lock(&d->lock);
	struct ksim_vq *kvq = &d->vqs[vq];
	if (kvq->poll_fd >= 0) {
		struct ksim_worker *wk = atomic_load_explicit(&kvq->worker, memory_order_relaxed);
		poll_move(kvq, wk, NULL);
		/* A harvest that already saw the fd finishes before the flush work runs. */
		worker_flush(wk);
		kvq->poll_fd = -1;
		kvq->poll_work = NULL;
	}
	pthread_mutex_unlock(&d->lock);
}
