/* SPDX-License-Identifier: MIT */
/* Counter snapshots as structs and as JSON. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "sched/internal.h"

#define LOAD(x) atomic_load_explicit(&(x), memory_order_relaxed)

static void queue_snapshot(struct vqs_queue *q, struct vqs_queue_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->kicks = LOAD(q->c.kicks);
	st->calls = LOAD(q->c.calls);
	st->calls_suppressed = LOAD(q->c.calls_suppressed);
	st->polls = LOAD(q->c.polls);
	st->empty_polls = LOAD(q->c.empty_polls);
	st->turns = LOAD(q->c.turns);
	st->budget_exhausted = LOAD(q->c.budget_exhausted);
	st->reqs = LOAD(q->c.reqs);
	st->bytes = LOAD(q->c.bytes);
	st->given_back = LOAD(q->c.given_back);
	st->async_completions = LOAD(q->c.async_completions);
	st->busy_ns = LOAD(q->c.busy_ns);
	st->rearms = LOAD(q->c.rearms);
	st->async_handovers = LOAD(q->c.async_handovers);
	for (unsigned i = 0; i < VQS_STATS_BATCH_BUCKETS; i++)
		st->batch_hist[i] = LOAD(q->c.batch_hist[i]);
	for (unsigned i = 0; i < VQS_STATS_LAT_BUCKETS; i++)
		st->latency_hist[i] = LOAD(q->c.latency_hist[i]);
	st->completed_given_back = LOAD(q->c.completed_given_back);
}

/* Copy the fields the caller's struct has room for (its size), keeping its size. */
static int copy_out(void *dst, const void *src, size_t full)
{
	uint32_t size = *(uint32_t *)dst;
	if (size < sizeof(uint32_t))
		return -EINVAL;
	memcpy((char *)dst + sizeof(uint32_t), (const char *)src + sizeof(uint32_t),
	       (size < full ? size : full) - sizeof(uint32_t));
	return 0;
}

int vqs_queue_stats_get(struct vqs_queue *q, struct vqs_queue_stats *st)
{
	if (!q || !st)
		return -EINVAL;
	struct vqs_queue_stats full;
	queue_snapshot(q, &full);
	return copy_out(st, &full, sizeof(full));
}

static void worker_snapshot(struct sched_worker *w, struct vqs_worker_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->tid = atomic_load(&w->tid);
	st->wakeups = LOAD(w->c.wakeups);
	st->turns = LOAD(w->c.turns);
	st->polls = LOAD(w->c.polls);
	st->empty_polls = LOAD(w->c.empty_polls);
	st->idle_ns = LOAD(w->c.idle_ns);
	st->naps = LOAD(w->c.naps);
	st->wake_ns = LOAD(w->c.wake_ns);
	st->timer_ns = LOAD(w->c.timer_ns);
	st->nap_cpu_ns = LOAD(w->c.nap_cpu_ns);
	st->spin_max_ns = LOAD(w->c.spin_max_ns);
	st->poll_max_ns = LOAD(w->c.poll_max_ns);
	st->stall_ns = LOAD(w->c.stall_ns);
	st->sleep_cpu_ns = LOAD(w->c.sleep_cpu_ns);
	st->stall_tail_ns = LOAD(w->c.stall_tail_ns);
	st->cost_reads = LOAD(w->c.cost_reads);
	st->mode_changes = LOAD(w->c.mode_changes);
	st->polling_ends = LOAD(w->c.polling_ends);
	st->rent_naps = LOAD(w->c.rent_naps);
	st->late_naps = LOAD(w->c.late_naps);
	clockid_t cid;
	struct timespec ts;
	if (!pthread_getcpuclockid(w->th, &cid) && !clock_gettime(cid, &ts))
		st->cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int vqs_worker_stats_get(struct vqs_sched *s, unsigned i, struct vqs_worker_stats *st)
{
	if (!s || !st)
		return -EINVAL;
	struct vqs_worker_stats full;
	pthread_mutex_lock(&s->ctl);
	int rc = i < s->nw ? 0 : -ENOENT;
	if (!rc)
		worker_snapshot(s->w[i], &full);
	pthread_mutex_unlock(&s->ctl);
	return rc ? rc : copy_out(st, &full, sizeof(full));
}

uint64_t vqs_stats_hist_quantile(const uint64_t *hist, unsigned nbuckets, double p)
{
	uint64_t total = 0, seen = 0;
	for (unsigned i = 0; i < nbuckets; i++)
		total += hist[i];
	if (!total || nbuckets > 63)
		return 0;
	for (unsigned i = 0; i < nbuckets; i++) {
		seen += hist[i];
		if ((double)seen >= p * (double)total)
			return (2ull << i) - 1;
	}
	return (2ull << (nbuckets - 1)) - 1;
}

/* snprintf that appends and keeps counting past the end of the buffer. */
struct out {
	char *buf;
	size_t len, pos;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t room = o->pos < o->len ? o->len - o->pos : 0;
	int n = vsnprintf(room ? o->buf + o->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->pos += (size_t)n;
}

static void put_hist(struct out *o, const char *name, const uint64_t *h, unsigned n)
{
	put(o, ",\"%s\":[", name);
	for (unsigned i = 0; i < n; i++)
		put(o, "%s%llu", i ? "," : "", (unsigned long long)h[i]);
	put(o, "]");
}

#define PUT_U64(o, st, f) put(o, ",\"" #f "\":%llu", (unsigned long long)(st)->f)

int vqs_sched_stats_json(struct vqs_sched *s, char *buf, size_t len)
{
	if (!s || (!buf && len))
		return -EINVAL;
	struct out o = {buf, len, 0};
	if (len)
		buf[0] = '\0';
	pthread_mutex_lock(&s->ctl);
	put(&o, "{\"policy\":\"%s\",\"placement\":\"%s\",\"wake_ns\":%llu,\"wake_cpu_ns\":%llu,"
	    "\"timer_ns\":%llu,\"timer_cpu_ns\":%llu,\"spin_pct\":%u,\"kick_ns\":%u,\"workers\":[",
	    vqs_policy_name(s->o.policy), vqs_placement_name(s->o.placement),
	    (unsigned long long)s->wake_ns, (unsigned long long)s->wake_cpu_ns,
	    (unsigned long long)s->timer_ns, (unsigned long long)s->timer_cpu_ns, s->o.spin_pct,
	    s->o.kick_ns);
	for (unsigned i = 0; i < s->nw; i++) {
		struct vqs_worker_stats w;
		worker_snapshot(s->w[i], &w);
		put(&o, "%s{\"index\":%u,\"tid\":%d", i ? "," : "", i, w.tid);
		PUT_U64(&o, &w, wakeups);
		PUT_U64(&o, &w, turns);
		PUT_U64(&o, &w, polls);
		PUT_U64(&o, &w, empty_polls);
		PUT_U64(&o, &w, cpu_ns);
		PUT_U64(&o, &w, idle_ns);
		PUT_U64(&o, &w, naps);
		PUT_U64(&o, &w, wake_ns);
		PUT_U64(&o, &w, timer_ns);
		PUT_U64(&o, &w, nap_cpu_ns);
		PUT_U64(&o, &w, spin_max_ns);
		PUT_U64(&o, &w, poll_max_ns);
		PUT_U64(&o, &w, stall_ns);
		PUT_U64(&o, &w, sleep_cpu_ns);
		PUT_U64(&o, &w, stall_tail_ns);
		PUT_U64(&o, &w, cost_reads);
		PUT_U64(&o, &w, mode_changes);
		PUT_U64(&o, &w, polling_ends);
		PUT_U64(&o, &w, rent_naps);
		PUT_U64(&o, &w, late_naps);
		put(&o, "}");
	}
	put(&o, "],\"queues\":[");
	bool first = true;
	for (struct vqs_queue *q = s->queues; q; q = q->next_attached, first = false) {
		struct vqs_queue_stats st;
		queue_snapshot(q, &st);
		put(&o, "%s{\"id\":%u,\"worker\":%d", first ? "" : ",", (unsigned)(uint32_t)q->key,
		    q->home ? (int)q->home->index : -1);
		PUT_U64(&o, &st, kicks);
		PUT_U64(&o, &st, calls);
		PUT_U64(&o, &st, calls_suppressed);
		PUT_U64(&o, &st, polls);
		PUT_U64(&o, &st, empty_polls);
		PUT_U64(&o, &st, turns);
		PUT_U64(&o, &st, budget_exhausted);
		PUT_U64(&o, &st, reqs);
		PUT_U64(&o, &st, bytes);
		PUT_U64(&o, &st, given_back);
		PUT_U64(&o, &st, completed_given_back);
		PUT_U64(&o, &st, async_completions);
		PUT_U64(&o, &st, async_handovers);
		PUT_U64(&o, &st, busy_ns);
		PUT_U64(&o, &st, rearms);
		put_hist(&o, "batch_hist", st.batch_hist, VQS_STATS_BATCH_BUCKETS);
		put_hist(&o, "latency_hist_ns_log2", st.latency_hist, VQS_STATS_LAT_BUCKETS);
		put(&o, ",\"latency_p50_ns\":%llu,\"latency_p99_ns\":%llu}",
		    (unsigned long long)vqs_stats_hist_quantile(st.latency_hist,
								VQS_STATS_LAT_BUCKETS, 0.5),
		    (unsigned long long)vqs_stats_hist_quantile(st.latency_hist,
								VQS_STATS_LAT_BUCKETS, 0.99));
	}
	put(&o, "]}");
	pthread_mutex_unlock(&s->ctl);
	return o.pos > INT32_MAX ? -EOVERFLOW : (int)o.pos;
}
