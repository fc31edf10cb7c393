/* SPDX-License-Identifier: MIT */
/*
 * Kick events: the group's epoll set turned into wakes, either after a sleep in epoll_wait (a
 * worker with nothing ready) or by a look without blocking between turns.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <urcu-bp.h>

#include "sched/internal.h"
#include "util/log.h"
#include "util/tsan.h"

static struct vqs_queue *lookup(struct vqs_sched *s, uint64_t key)
{
	uint32_t idx = (uint32_t)key;
	if (idx >= SCHED_MAX_QUEUES)
		return NULL;
	/* acquire pairs with the release store in control.c's attach. */
	struct vqs_queue *q = atomic_load_explicit(&s->table[idx], memory_order_acquire);
	return q && q->key == key ? q : NULL;
}

/* Turn kick edges into wakes. Queues are looked up by key inside a read-side section: a queue
 * detached after epoll_wait returned its event is gone from the table, or alive until we leave. */
static void dispatch(struct sched_worker *w, const struct epoll_event *ev, int n, uint64_t now)
{
	urcu_bp_read_lock();
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u64 == SCHED_BELL_KEY) {
			uint64_t v;
			if (read(w->g->bell_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				vqs_warn("sched: doorbell read failed: %d", errno);
			continue;
		}
		struct vqs_queue *q = lookup(w->s, ev[i].data.u64);
		if (!q)
			continue;
		atomic_fetch_add_explicit(&q->c.kicks, 1, memory_order_relaxed);
		sched_queue_wake(q, now);
	}
	vqs_tsan_release(&sched_tsan_grace);
	urcu_bp_read_unlock();
}

/* Nothing ready: sleep until a kick, a doorbell (wake, completion, stop) or a signal. */
void sched_worker_sleep(struct sched_worker *w)
{
	struct sched_group *g = w->g;
	struct epoll_event ev[64];
	/* seq_cst pair with group_push: announce, then re-check the list. */
	atomic_fetch_add(&g->sleepers, 1);
	if (atomic_load(&g->nready) > 0 || atomic_load(&g->stop)) {
		atomic_fetch_sub(&g->sleepers, 1);
		return;
	}
	uint64_t t = w->now_ns;
	int n = epoll_wait(g->epfd, ev, 64, -1);
	uint64_t now = vqs_now_ns();
	w->now_ns = now;
	uint64_t slept = now - t;
	w->awake_ns = sched_awake_after_sleep(w->awake_ns, t, now);
	atomic_fetch_sub(&g->sleepers, 1);
	stat_add(&w->c.idle_ns, slept);
	stat_add(&w->c.wakeups, 1);
	if (n < 0 && errno != EINTR)
		vqs_err("sched: epoll_wait failed: %d", errno);
	if (n > 0)
		dispatch(w, ev, n, now);
}

void sched_check_events(struct sched_worker *w, uint64_t now)
{
	struct epoll_event ev[64];
	int n = epoll_wait(w->g->epfd, ev, 64, 0);
	if (n > 0)
		dispatch(w, ev, n, now);
}
