/* SPDX-License-Identifier: MIT */
/*
 * The four policies as decision modules for the one worker loop: how many chains per handler
 * call, and whether to keep polling a ring found empty. (Which worker serves a queue is decided at
 * attach, in control.c; when to sleep follows: a worker sleeps when its ready list is empty.)
 *
 * dedicated, pool: batch_max per call, never poll: drain, re-arm notifications, sleep.
 * poll: batch_max per call, keep polling an empty ring until it has been empty for
 *   poll_timeout_us (0: forever), then re-arm and sleep (Linux's busyloop_timeout).
 *
 * adaptive: a per-queue controller fed by every pop (chains found, backlog left, time).
 *   Batch: starts at 1, so a lightly loaded queue hands each request over the moment it is seen.
 *   When a pop fills the batch and chains are still waiting (backlog), the batch doubles, up to
 *   batch_max; when a pop finds less than half a batch and no backlog, it halves (down to 1).
 *   Multiplicative steps reach batch_max from 1 in log2(batch_max) turns under a burst and
 *   return as fast when it ends.
 *   Polling: the controller keeps gap, the smoothed time between pops that found requests,
 *   however many (EWMA, weight 1/8; each sample clamped to ADAPT_GAP_SAMPLE_MAX_NS so one stall
 *   of the driver, e.g. a descheduled guest, cannot turn a steady stream into "idle" for dozens
 *   of requests). It is the time the ring stays empty between two arrivals of work, which is what
 *   polling has to ride out: a driver that sends 64 requests at once every 50 us has a gap of
 *   50 us, not under 1 us per request. After an empty pop it keeps polling only while
 *   (a) gap < ADAPT_POLL_GAP_MAX_NS: a request that finds its worker asleep pays a wake-up
 *       (ADAPT_WAKE_NS round trip: about 50 us on a 2-core VM, 50-110 us as the bench's eventfd
 *       floor measures, plus some 10 us of worker CPU for the sleep/wake itself), so while
 *       requests come at most two wake-ups apart, polling through the gap buys a wake-up's
 *       latency for at most two wake-ups' CPU; sparser traffic sleeps and costs what dedicated
 *       costs (the light-load CPU/op goal); and
 *   (b) the ring has been empty for less than window = 4 * gap, at least ADAPT_POLL_MIN_NS and at
 *       most ADAPT_POLL_MAX_NS. Four gaps ride out jitter of a steady stream; the floor keeps a
 *       very fast stream (rr: gap ~1 us) from sleeping on a hiccup of a few microseconds, which
 *       would cost a wake-up (spinning as long as a wake-up costs before blocking is the classic
 *       2-competitive choice); the cap bounds what an idle queue burns: a queue with no traffic
 *       leaves polling within ADAPT_POLL_MAX_NS and then costs no CPU until its next kick.
 *   (c) or for less than hold, a sixteenth of its worker's awake span up to the queue's last
 *       arrival, at most ADAPT_HOLD_MAX_NS: the time the worker has been awake less the time it
 *       slept meanwhile (it starts over once a sleep outlasts it). A worker kept busy by
 *       sustained load finds its rings dry when the drivers pause (their CPU taken by the
 *       hypervisor, or a driver serving its queues in turns), not when the traffic ends, and a
 *       sleep then costs far more than the wake-up: a halted vCPU hands its physical CPU to
 *       other guests and gets less of it back. vqs-switch between DPDK's virtio-user ports at
 *       heavy load (scripts/bench-vhost-user.sh QSIZE=1024 BURSTS=2) slept every 4-6 ms, when
 *       both its transmit queues had waited 160-300 us (each sees its sender's bursts
 *       alternate with the other port's, so a queue's own stream lasts ~300 us), and its CPU
 *       lost 36-45% of its time to steal, against 6-25% for testpmd, which never sleeps, in the
 *       runs between (Mpps 0.67 of testpmd's, where the same switch spinning made 1.11); with
 *       the hold, steal 2-4% and 4.2-4.8 Mpps where it had made 2.5-3.9, interleaved. The
 *       worker, not the queue, measures the load: the longer it stays awake, the longer the
 *       pauses it rides out. A sleep shortens the span rather than ending it, as one outlier
 *       moves an average: where the drivers stall every few milliseconds, a span that ended at
 *       every sleep could not grow past the first stall longer than its hold. Holding costs at
 *       most a sixteenth of the time the worker was awake, once, when the traffic ends; sparse
 *       traffic is left to (a).
 *   The gap estimate survives the sleep, so a queue that goes quiet briefly and resumes at the
 *   same rate polls again from its first request.
 *   Rejected: the previous 20 us gap limit slept at 20k-100k requests/s (gaps 10-50 us, and a
 *   single stall pushed a 10 us EWMA over 20 us), so each request paid a ~25-50 us wake-up: p99
 *   in milliseconds where busy-poll had microseconds. And a gap per request (the time between
 *   pops divided by the requests found): a bursty driver (DPDK's virtio-user sending 256 frames
 *   every 50-100 us through vqs-switch) then looked like a sub-microsecond stream, its queues gave
 *   up polling after the 25 us floor between bursts, and its worker slept and woke once per
 *   burst (5 interleaved runs of scripts/bench-vhost-user.sh: median 2.78 Mpps per request,
 *   3.35 per pop).
 */
#include <errno.h>
#include <string.h>

#include "sched/internal.h"

/* One sleep/wake round trip through an eventfd between two CPUs: what a request pays when its
 * worker sleeps (the bench's eventfd floor: ~48 us on the 2-core development VM). */
#define ADAPT_WAKE_NS 50000u
/* Poll only while requests are expected within two wake-ups (see (a) above). */
#define ADAPT_POLL_GAP_MAX_NS (2u * ADAPT_WAKE_NS)
/* Poll window bounds (see (b) above): at least half a wake-up round trip (the sleeping side's
 * share), at most two of them. */
#define ADAPT_POLL_MIN_NS (ADAPT_WAKE_NS / 2u)
#define ADAPT_POLL_MAX_NS (2u * ADAPT_WAKE_NS)
/* Give up polling after this many expected gaps without an arrival. */
#define ADAPT_POLL_GAPS 4u
/* A gap sample larger than this says "stall", not "rate": clamp it (twice the polling limit, so
 * a queue that really slows down still crosses the limit after a few samples). */
#define ADAPT_GAP_SAMPLE_MAX_NS (2u * ADAPT_POLL_GAP_MAX_NS)
/* EWMA: gap += (sample - gap) >> ADAPT_EWMA_SHIFT (weight 1/8). */
#define ADAPT_EWMA_SHIFT 3
/* A worker with an awake span t holds its queues for t/2^ADAPT_HOLD_SHIFT after their last
 * arrival, up to ADAPT_HOLD_MAX_NS (see (c) above). */
#define ADAPT_HOLD_SHIFT 4
#define ADAPT_HOLD_MAX_NS 10000000u

static const char *const policy_names[] = {"dedicated", "pool", "poll", "adaptive"};
static const char *const placement_names[] = {"float", "inherit", "pin", "auto"};

static int parse_name(const char *const *names, unsigned n, const char *s)
{
	for (unsigned i = 0; s && i < n; i++)
		if (!strcmp(names[i], s))
			return (int)i;
	return -EINVAL;
}

const char *vqs_policy_name(enum vqs_policy p)
{
	return (unsigned)p < 4 ? policy_names[p] : "unknown";
}

int vqs_policy_parse(const char *s, enum vqs_policy *out)
{
	int i = parse_name(policy_names, 4, s);
	if (i < 0)
		return i;
	*out = (enum vqs_policy)i;
	return 0;
}

const char *vqs_placement_name(enum vqs_placement p)
{
	return (unsigned)p < 4 ? placement_names[p] : "unknown";
}

int vqs_placement_parse(const char *s, enum vqs_placement *out)
{
	int i = parse_name(placement_names, 4, s);
	if (i < 0)
		return i;
	*out = (enum vqs_placement)i;
	return 0;
}

static unsigned batch_max(const struct vqs_sched *s, struct vqs_queue *q) { return s->o.batch_max; }

static void observe_none(const struct vqs_sched *s, struct vqs_queue *q, unsigned n,
			 unsigned backlog, uint64_t now)
{
}

static bool never_poll(const struct vqs_sched *s, struct vqs_queue *q, uint64_t now) { return false; }

static bool poll_until_timeout(const struct vqs_sched *s, struct vqs_queue *q, uint64_t now)
{
	uint64_t timeout = (uint64_t)s->o.poll_timeout_us * 1000u;
	return !timeout || now - q->last_work_ns < timeout;
}

static unsigned adapt_batch(const struct vqs_sched *s, struct vqs_queue *q)
{
	if (!q->ad.batch)
		q->ad.batch = 1;
	return q->ad.batch;
}

/* How long after its last arrival the queue keeps polling an empty ring: (b) and (c) above. */
static uint64_t adapt_window(const struct vqs_queue *q)
{
	const struct adapt_state *a = &q->ad;
	uint64_t window = ADAPT_POLL_GAPS * a->gap_ewma_ns;
	if (window < ADAPT_POLL_MIN_NS)
		window = ADAPT_POLL_MIN_NS;
	if (window > ADAPT_POLL_MAX_NS)
		window = ADAPT_POLL_MAX_NS;
	/* Its worker runs it (home is set for every policy but pool's). */
	uint64_t awake = q->home ? q->home->awake_ns : a->last_arrival_ns;
	uint64_t span = a->last_arrival_ns > awake ? a->last_arrival_ns - awake : 0;
	uint64_t hold = span >> ADAPT_HOLD_SHIFT;
	if (hold > ADAPT_HOLD_MAX_NS)
		hold = ADAPT_HOLD_MAX_NS;
	return window > hold ? window : hold;
}

static void adapt_observe(const struct vqs_sched *s, struct vqs_queue *q, unsigned n,
			  unsigned backlog, uint64_t now)
{
	struct adapt_state *a = &q->ad;
	if (a->last_arrival_ns) {
		uint64_t sample = now - a->last_arrival_ns;
		if (sample > ADAPT_GAP_SAMPLE_MAX_NS)
			sample = ADAPT_GAP_SAMPLE_MAX_NS;
		int64_t diff = (int64_t)(sample - a->gap_ewma_ns);
		a->gap_ewma_ns = (uint64_t)((int64_t)a->gap_ewma_ns + diff / (1 << ADAPT_EWMA_SHIFT));
	} else {
		a->gap_ewma_ns = ADAPT_POLL_GAP_MAX_NS; /* unknown rate: not worth polling yet */
	}
	a->last_arrival_ns = now;
	if (backlog && n >= a->batch)
		a->batch = a->batch * 2 < s->o.batch_max ? a->batch * 2 : s->o.batch_max;
	else if (!backlog && n < a->batch / 2)
		a->batch = a->batch / 2 ? a->batch / 2 : 1;
}

static bool adapt_keep_polling(const struct vqs_sched *s, struct vqs_queue *q, uint64_t now)
{
	const struct adapt_state *a = &q->ad;
	return a->last_arrival_ns && a->gap_ewma_ns < ADAPT_POLL_GAP_MAX_NS &&
	       now - a->last_arrival_ns < adapt_window(q);
}

static const struct sched_policy policies[] = {
	{VQS_POLICY_DEDICATED, batch_max, observe_none, never_poll},
	{VQS_POLICY_POOL, batch_max, observe_none, never_poll},
	{VQS_POLICY_POLL, batch_max, observe_none, poll_until_timeout},
	{VQS_POLICY_ADAPTIVE, adapt_batch, adapt_observe, adapt_keep_polling},
};

const struct sched_policy *sched_policy_get(enum vqs_policy p)
{
	return (unsigned)p < 4 ? &policies[p] : NULL;
}
