/* SPDX-License-Identifier: MIT */
/*
 * The four policies as decision modules for the one worker loop: how many chains per handler
 * call, and whether to keep polling a ring found empty. (Which worker serves a queue is decided at
 * attach, in control.c; when to sleep follows: a worker sleeps when its ready list is empty.)
 *
 * dedicated, pool: batch_max per call, never spin: drain, re-arm notifications, sleep.
 * poll: batch_max per call, keep polling an empty ring until it has been empty for
 *   poll_timeout_us (0: forever), then re-arm and sleep (Linux's busyloop_timeout).
 *
 * Deferral (dedicated, pool): a ring found empty while its worker has other work
 *   stays polled (notifications off) through SCHED_DEFER_LOOKS empty turns before it re-arms,
 *   as NAPI's napi_defer_hard_irqs counts empty polls before it re-enables the interrupt. The
 *   worker is not going to sleep, so a look at the empty ring costs it one trip of the queue
 *   through its rounds (a requeue, ~220 ns here, or 64 light looks of a held queue, about the
 *   same), where a re-arm costs a full barrier, lets the driver kick (an eventfd write, a VM
 *   exit for a real guest: 1-5 us of the driver's CPU here) and the worker an epoll event.
 *   Sixteen looks are a few microseconds of the worker's, less than what the kick they avoid
 *   costs the two sides. dedicated and pool never spin: "other work" is another queue on the
 *   list (a queue of a dedicated worker of its own never has one). Before, pool over 10 queues
 *   fed one request at a time (batch 1) re-armed each queue the moment its worker caught up,
 *   and the driver kicked for nearly every request (0.92 kicks per request, 0.26x dedicated's
 *   throughput, whose time-shared threads caught up less often).
 *
 * adaptive: a per-queue controller fed by every pop (chains found, backlog left, time).
 *   Batch: starts at 1, so a lightly loaded queue hands each request over the moment it is seen.
 *   When a pop fills the batch and chains are still waiting (backlog), the batch doubles, up to
 *   batch_max; when a pop finds less than half a batch and no backlog, it halves (down to 1).
 *   Multiplicative steps reach batch_max from 1 in log2(batch_max) turns under a burst and
 *   return as fast when it ends.
 *   Polling is decided at two levels. The worker decides whether to stay awake, from the
 *   arrivals of all its queues together (a gap and last arrival like a queue's, below): while
 *   they earn polling by (a)-(d), it spins or naps. Its queues stay polled while it does, each
 *   as long as it is still part of the worker's traffic (it had the worker's last arrival, or
 *   fewer than ADAPT_POLL_GAPS of its own gaps passed from its last arrival to the worker's:
 *   a queue that went quiet among busy ones re-arms, a silence of them all re-arms none); when the worker's arrivals stop earning polling, every queue
 *   re-arms at its next empty turn and the worker sleeps. With one queue the two levels see
 *   the same arrivals and decide as one. The split is what many queues on one worker need:
 *   rr over 50 queues gives each queue its next request a whole worker round after its last
 *   (the worker serves 49 others meanwhile), 100-200 us when the worker slows down, so a
 *   queue's own gap read "too sparse to poll" while the worker was saturated; queues re-armed
 *   (0.07 re-arms and kicks per request), each re-arm made the round slower, and adaptive made
 *   0.14x busy-poll's transactions with 8x its p50. A queue's gap says how often that queue has
 *   work, not whether its worker has; and a queue its polling worker lets re-arm makes the
 *   poll pay for nothing (adapt_keep_polling).
 *   Of its worker's arrivals the controller keeps gap, the smoothed time between pops that found
 *   requests, however many (EWMA, weight 1/8; each sample clamped to twice the limit of (a), so
 *   one stall of the driver, e.g. a descheduled guest, cannot turn a steady stream into "idle"
 *   for dozens of requests). It is the time the ring stays empty between two arrivals of work, which is what
 *   polling has to ride out: a driver that sends 64 requests at once every 50 us has a gap of
 *   50 us, not under 1 us per request, and work found together (the rest of a burst, the queues
 *   a wake-up finds after the first: adapt_observe) is one arrival. After an empty pop it
 *   keeps polling only while
 *   (a) the cost model finds polling cheaper than sleeping through gap. Cost model: per gap g,
 *       in ns of CPU, latency priced at k = spin_pct / 100 (default 2): spinning costs g
 *       and the wait k S of a request that arrives while the spinning worker is preempted (S:
 *       "The stall" below, learned); sleeping k W / 2 + c + K, with W / 2 what a request
 *       that finds its worker asleep waits (one wake-up: W is a sleep/wake round trip,
 *       measured at creation, cost.c, and learned from the run queue waits after the worker's
 *       wake-ups, kicked or timed: learn_queued; not from its naps' overshoot, their timer
 *       wake-ups came later), c the CPU of a sleep/wake (measured with it, and learned from the worker's
 *       sleeps: sched_cost_woke), K the driver's kick (kick_ns);
 *       napping (Deferred re-poll below) k (P / 2 + V / (2 P)) + c_n g / P (a random
 *       arrival's wait, V the variance of the timer's overshoot: nap_cost), at its best period
 *       P = sqrt(V + 2 c_n g / k) and never under the timer's mean overshoot O. The cheapest
 *       wins: spin below spin_max, nap below poll_max, else sleep (the worker's thresholds,
 *       cost_update), with hysteresis: the worker changes mode only when its gap estimate is
 *       past a threshold by two spreads of the estimate, and 8 gaps after its last change
 *       (rate_mode_update).
 *       Sparse traffic sleeps and costs what dedicated costs (the light-load CPU/op goal); and
 *   (b) spinning: the ring has been empty for less than window = 4 * gap, at least W / 2 and at
 *       most spin_max. Four gaps ride out jitter of a steady stream; the floor keeps a
 *       very fast stream (rr: gap ~1 us) from sleeping on a hiccup of a few microseconds, which
 *       would cost a wake-up (spinning as long as a wake-up costs before blocking is the classic
 *       2-competitive choice); the cap bounds what an idle queue burns: a queue with no traffic
 *       leaves polling within spin_max and then costs no CPU until its next kick. Napping: for
 *       less than 4 * gap.
 *   (c) or for less than hold, a sixteenth of its worker's awake span up to the process's last
 *       arrival, at most ADAPT_HOLD_MAX_NS: the time the worker has been awake less the time it
 *       slept meanwhile (it starts over once a sleep outlasts it; its naps count as awake:
 *       sched_awake_after_sleep). A worker kept busy by
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
 *   (d) or, napping, for less than the rent: a worker that stops polling re-arms each of the n
 *       queues sharing its arrivals, and each one's next request pays a kick and a wake-up
 *       (a sleep's cost, k W / 2 + c + K); the windows above priced one. So it naps on while
 *       its naps, c_n per period P, have cost less than the n - 1 others:
 *       (n - 1) (k W / 2 + c + K) P / c_n, at most ADAPT_HOLD_MAX_NS (the ski rental's
 *       2-competitive rule). n is an EWMA over the worker's arrivals of how many it had since
 *       the arriving queue's last one. Without it a driver stall longer than the windows (a
 *       loaded machine's driver: every ~5 ms) re-armed all 50 queues of the sweep at 5k/s, and
 *       kicks per request matched dedicated's (docs/sched.md).
 *   Deferred re-poll (NAPI's gro_flush_timeout / irq_suspend_timeout): while napping is
 *   cheapest, a queue found empty stays with notifications off (no kick from the driver) and
 *   its worker, once every queue it keeps polled naps and nothing is listed, sleeps P - O on its
 *   epoll set with a 1 ns timer slack, then polls them again (poll.c, events.c); each nap
 *   teaches the worker O and c_n. A timed wake-up here costs about an eventfd wake-up
 *   (~33 us late), so a nap saves the kick and the spin, not the wake-up latency.
 *   The gap estimates survive the sleep, so a queue that goes quiet briefly and resumes at the
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

/* Costs of the model ("Cost model" above), in ns, with latency priced at spin_pct/100 ns of CPU
 * per ns. A request that finds its worker asleep waits one wake-up, half the learned round trip
 * W (w->wake_ns; the call back to a halted guest is the other half, and the guest pays it
 * whether the worker slept or polled); c (w->sleep_cpu_ns, learned: sched_cost_woke) is what
 * a sleep/wake costs the worker's CPU, K (kick_ns) what the kick costs the driver. Sleeping
 * through a gap costs k W / 2 + c + K; spinning through it costs the gap; napping, see nap_cost. */
static uint64_t price(const struct vqs_sched *s, uint64_t latency_ns)
{
	return latency_ns * s->o.spin_pct / 100u;
}

static uint64_t sleep_cost(const struct vqs_sched *s, const struct sched_worker *w)
{
	return price(s, w->wake_ns / 2u) + w->sleep_cpu_ns + s->o.kick_ns;
}

static uint64_t isqrt(uint64_t v)
{
	uint64_t r = 0;
	for (uint64_t b = 1ull << 62; b; b >>= 2) {
		if (v >= r + b) {
			v -= r + b;
			r = (r >> 1) + b;
		} else {
			r >>= 1;
		}
	}
	return r;
}

/* Napping through a gap g with period P (asked interval a plus the timer's overshoot o, learned:
 * mean O, second moment O2): a request arrives independently of the timer, so it lands in a long
 * nap more often than in a short one and waits E[P^2] / (2 E[P]) = P / 2 + V / (2 P), with V the
 * overshoot's variance, not P / 2. Timer wake-ups here are ~33 us late at p50 with a tail to
 * 140-210 us at p99 (vqs-timer-cost), and a napping worker's p50 was 52 us beside a busy loop
 * where P / 2 said 14-27. Each nap costs the worker c_n (learned). Cheapest at
 * P = sqrt(V + 2 c_n g / k), never shorter than O + ADAPT_NAP_MIN_NS. */
#define ADAPT_NAP_MIN_NS 1000u
static uint64_t timer_var(const struct sched_worker *w)
{
	uint64_t m2 = w->timer_ns * w->timer_ns;
	return w->timer_sq > m2 ? w->timer_sq - m2 : 0;
}

static uint64_t nap_period(const struct vqs_sched *s, const struct sched_worker *w, uint64_t g)
{
	uint64_t p = isqrt(timer_var(w) + 2u * w->nap_cpu_ns * g * 100u / s->o.spin_pct);
	return p > w->timer_ns + ADAPT_NAP_MIN_NS ? p : w->timer_ns + ADAPT_NAP_MIN_NS;
}

static uint64_t nap_cost(const struct vqs_sched *s, const struct sched_worker *w, uint64_t g)
{
	uint64_t p = nap_period(s, w, g);
	return price(s, p / 2u + timer_var(w) / (2u * p)) + w->nap_cpu_ns * g / p;
}

/* nap_cost where the worker may nap: it does not without a price for latency (spin_pct 0) or a
 * nap's CPU known. */
static uint64_t nap_price(const struct vqs_sched *s, const struct sched_worker *w, uint64_t g)
{
	return s->o.spin_pct && w->nap_cpu_ns ? nap_cost(s, w, g) : 0;
}

/* The largest g in [lo, hi) with below(g) (true up to some g, false after), lo if none. */
static uint64_t last_below(const struct vqs_sched *s, const struct sched_worker *w, uint64_t lo,
			   uint64_t hi, bool (*below)(const struct vqs_sched *, const struct sched_worker *,
						      uint64_t))
{
	while (hi - lo > 100u) { /* 0.1 us is resolution enough */
		uint64_t mid = lo + (hi - lo) / 2u;
		if (below(s, w, mid))
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* The stall's tail over one horizon (sched_cost_awake): the share f of requests a stall catches
 * (in 1/STALL_SHARE_ONE) each wait uniformly up to the stall's length L = 2 S / f (S = f L / 2,
 * the wait, is the mean over all requests), so the p99 of a spinning worker's requests is
 * L (1 - 1% / f) once f passes the p99's 1%, and no stall at all below it. */
#define STALL_SHARE_ONE 65536u
static uint64_t tail_of(const struct sched_stall_avg *a)
{
	uint64_t f100 = 100u * a->share;
	if (f100 <= STALL_SHARE_ONE)
		return 0;
	uint64_t len = 2u * a->wait_ns * STALL_SHARE_ONE / a->share;
	return len * (f100 - STALL_SHARE_ONE) / f100;
}

/* The stall's tail where stalls catch over 1% of the requests of the last second (they recur:
 * one scheduler slice is 0.1-0.3% of it) and of the last 75 ms (they still do), the lesser of
 * the two. A p99 is a figure of many requests: the second holds the 10^4 a p99 is read from at
 * 10k requests/s, about the slowest rate spinning pays at. Judged over 75 ms alone, one
 * preemption of 1 ms at 100k requests/s was 1.3% of the horizon's requests, its tail was priced
 * above a sleep, and the worker slept until the horizon forgot it, every request of the spell
 * paying a wake-up (adaptive_one_stall_is_no_tail); judged over the second alone, it would
 * sleep for seconds after the stalls ended. */
static uint64_t stall_tail(const struct sched_worker *w)
{
	uint64_t recent = tail_of(&w->stall), lasting = tail_of(&w->tail);
	return recent < lasting ? recent : lasting;
}

/* What the stall costs a request of a spinning worker, as the goal judges latency: its p99
 * (stall_tail) where stalls catch more than 1% of the requests, the mean wait S otherwise. The
 * mean alone priced 8 queues at 100k requests/s on a quiet machine at ~1 us (preemptions of
 * ~80 us in 1-2.5% of the time), and the worker spun: its p99 was 3.4x pool's at 2.6x its CPU
 * per request (docs/sched.md). A sleep is priced by its mean wake-up still: its tail is not
 * learned. */
static uint64_t stall_wait(const struct sched_worker *w)
{
	uint64_t t = stall_tail(w);
	return t > w->stall.wait_ns ? t : w->stall.wait_ns;
}

/* Spinning through a gap g costs g of CPU, and the wait of a request that arrives while the
 * spinning worker is preempted (stall_wait, learned: sched_cost_awake). */
static uint64_t spin_cost(const struct vqs_sched *s, const struct sched_worker *w, uint64_t g)
{
	return g + price(s, stall_wait(w));
}

static bool spin_cheapest(const struct vqs_sched *s, const struct sched_worker *w, uint64_t g)
{
	uint64_t c = spin_cost(s, w, g);
	return c < sleep_cost(s, w) && (!s->o.spin_pct || c <= nap_cost(s, w, g));
}

static bool nap_beats_sleep(const struct vqs_sched *s, const struct sched_worker *w, uint64_t g)
{
	return nap_cost(s, w, g) < sleep_cost(s, w);
}

/* The thresholds follow the learned costs: recomputed when they change, not per decision. */
static void cost_maybe_update(struct sched_worker *w);
static void cost_update(struct sched_worker *w)
{
	const struct vqs_sched *s = w->s;
	uint64_t sc = sleep_cost(s, w);
	atomic_store_explicit(&w->c.wake_ns, w->wake_ns, memory_order_relaxed);
	w->stall_priced_ns = stall_wait(w);
	atomic_store_explicit(&w->c.stall_tail_ns, stall_tail(w), memory_order_relaxed);
	w->sleep_priced_ns = sc;
	w->nap_priced_ns = nap_price(s, w, sc);
	w->spin_max_ns = last_below(s, w, 0, sc, spin_cheapest);
	w->poll_max_ns = w->spin_max_ns;
	/* no price for latency (spin_pct 0) or no CPU measured: never nap */
	if (s->o.spin_pct && w->nap_cpu_ns && nap_beats_sleep(s, w, w->spin_max_ns))
		w->poll_max_ns = last_below(s, w, w->spin_max_ns, 64u * sc, nap_beats_sleep);
	atomic_store_explicit(&w->c.timer_ns, w->timer_ns, memory_order_relaxed);
	atomic_store_explicit(&w->c.nap_cpu_ns, w->nap_cpu_ns, memory_order_relaxed);
	atomic_store_explicit(&w->c.spin_max_ns, w->spin_max_ns, memory_order_relaxed);
	atomic_store_explicit(&w->c.poll_max_ns, w->poll_max_ns, memory_order_relaxed);
	atomic_store_explicit(&w->c.sleep_cpu_ns, w->sleep_cpu_ns, memory_order_relaxed);
}

void sched_cost_init(struct sched_worker *w)
{
	w->wake_ns = w->s->wake_ns;
	w->timer_ns = w->s->timer_ns;
	w->timer_sq = w->timer_ns * w->timer_ns; /* no spread known yet */
	w->nap_cpu_ns = w->s->timer_cpu_ns;
	w->sleep_cpu_ns = w->s->wake_cpu_ns;
	w->stall = w->tail = (struct sched_stall_avg){0, 0, 0};
	cost_update(w);
}

/* EWMA weight of a learned cost sample: 1/2^ADAPT_COST_SHIFT; of the square of a timer's
 * overshoot 1/2^ADAPT_TAIL_SHIFT, so that a tail of one nap in 16 is averaged over twice that
 * many rather than forgotten between two of its samples. */
#define ADAPT_COST_SHIFT 3
#define ADAPT_TAIL_SHIFT 5
static uint64_t ewma(uint64_t avg, uint64_t sample, unsigned shift)
{
	return (uint64_t)((int64_t)avg + ((int64_t)(sample - avg) / (1 << shift)));
}

/* A CPU price from one more sample, which counts at most 4 times the price: a sleep or a nap
 * of milliseconds (the thread preempted or its vCPU stolen meanwhile) moves it by at most 3/8,
 * where at full weight such samples made a sleep look dearer than napping through 200 us gaps
 * (adaptive_one_stolen_sample_is_not_a_price); a lasting rise is learned at 3/8 a sample. */
static uint64_t learn_cpu(uint64_t price, uint64_t sample)
{
	uint64_t cap = 4u * price;
	return ewma(price, sample < cap || !price ? sample : cap, ADAPT_COST_SHIFT);
}

/* W from one wake-up's run queue wait (SCHED_QUEUED_UNKNOWN: not read): the path outside the run
 * queue measured at creation (vqs_sched.wake_path_ns) plus queued_ns. The wait is the CPU's, not
 * the wake-up's: a timer's wake-up queues behind the same threads as a kick's, so both teach it.
 * Learned from kicked wake-ups alone, a run of stalls met while sleeping kept W high for as long
 * as the worker then napped (its naps taught W nothing), and it napped through 1 ms gaps: two
 * quiet sweeps, 8 and 50 queues at 1k requests/s, 1.2-2.3 wake-ups and 45-112 us of CPU per
 * request against dedicated's 1.0 and 22-28 us, p99 1.4-2.4 ms. */
static void learn_queued(struct sched_worker *w, uint64_t queued_ns)
{
	if (queued_ns == SCHED_QUEUED_UNKNOWN)
		return;
	uint64_t one = w->s->wake_path_ns + queued_ns;
	if (one > SCHED_WAKE_MAX_NS / 2u)
		one = SCHED_WAKE_MAX_NS / 2u; /* preempted meanwhile: a stall, not a wake-up */
	uint64_t rt = ewma(w->wake_ns, 2u * one, ADAPT_COST_SHIFT);
	w->wake_ns = rt < SCHED_WAKE_MIN_NS ? SCHED_WAKE_MIN_NS : rt;
	atomic_store_explicit(&w->c.wake_ns, w->wake_ns, memory_order_relaxed);
}

/* A nap's timer wake-up teaches the nap's price: how late it wakes (O), and W only its run
 * queue wait (learn_queued). Not W from the overshoot: here
 * a timer wake-up came 27-52 us late beside a busy loop where a kicked one (dedicated's whole
 * request, p50) took 26-28 us, and W learned as two of them priced a sleep about twice too
 * dear; the worker then napped where sleeping cost less CPU and latency (sched_cost_woke). */
void sched_cost_timed_wake(struct sched_worker *w, uint64_t asked_ns, uint64_t slept_ns,
			   uint64_t queued_ns)
{
	if (slept_ns < asked_ns)
		return; /* an event ended it: no timer wake-up to learn from */
	w->nap_timed = true;
	learn_queued(w, queued_ns);
	uint64_t over = slept_ns - asked_ns;
	if (over > SCHED_NAP_LATE_NS)
		stat_add(&w->c.late_naps, 1);
	if (over > SCHED_WAKE_MAX_NS)
		over = SCHED_WAKE_MAX_NS; /* preempted meanwhile: a stall, not a wake-up */
	w->timer_ns = ewma(w->timer_ns, over, ADAPT_COST_SHIFT);
	w->timer_sq = ewma(w->timer_sq, over * over, ADAPT_TAIL_SHIFT);
	atomic_store_explicit(&w->c.timer_ns, w->timer_ns, memory_order_relaxed);
	cost_maybe_update(w);
}

/* c_n, a nap's CPU, is what the worker spends from one nap's start to the next's when the nap
 * found nothing: the sleep and its timer wake-up, and the re-poll after it, a full turn of each
 * queue it keeps polled (a ring look, a clock read and a decision each), which grows with the
 * queues kept polled. Learned from the sleep alone (13-15 us here, quiet), a nap was priced the
 * same over 1 queue and over 50. A nap an event ended, or one after which requests were served,
 * is not a sample. */
void sched_cost_nap_start(struct sched_worker *w, uint64_t cpu_ns)
{
	if (w->nap_timed && w->reqs == w->nap_start_reqs)
		w->nap_cpu_ns = learn_cpu(w->nap_cpu_ns, cpu_ns - w->nap_start_cpu_ns);
	/* the counters show what was learned, not what the thresholds were last searched with */
	atomic_store_explicit(&w->c.nap_cpu_ns, w->nap_cpu_ns, memory_order_relaxed);
	w->nap_start_cpu_ns = cpu_ns;
	w->nap_start_reqs = w->reqs;
}

/* The stall: a spinning worker keeps its CPU only while nothing else wants it. On a shared
 * machine the kernel preempts it (its runtime is ahead of the sleepers'), and a request that
 * arrives meanwhile waits until it runs again: a scheduler slice, milliseconds, where a worker
 * that sleeps is woken ahead of the others (its runtime is behind) and waits a wake-up. The
 * worker learns what its preemption costs a request from samples of its thread's CPU time
 * against the wall time it was awake: the difference is the time it was runnable and not
 * running (or its vCPU was stolen). A sample's lost time L in an awake time A, taken as one
 * stall, is waited through by the requests that arrived in it, n L / A of the n the sample
 * served (arrivals spread over time: the sweep's offered load, a guest's open-loop traffic),
 * each L / 2 on average: n L^2 / (2 A) in all. stall.wait_ns is that wait per request,
 * averaged over the requests of the last ADAPT_STALL_HORIZON_NS of wall time (by_time: the
 * older requests fade with the time between samples, asleep or not, and the averages with the
 * time the samples did not see, so that a sleeping worker forgets a stall in that time and
 * tries spinning again: sched_cost_awake). A closed loop (rr: the driver waits for each response)
 * has one request per stream in the stall, not n L / A: the estimate then runs high by the
 * requests of the sample's awake time, which a fast loop's many requests dilute.
 * Measured before this input existed (1 queue, 20k requests/s offered, load average 1-2): the
 * spinning worker was runnable and not running for 185-296 ms of 284-424 ms it ran, in 70-133
 * involuntary switches (1.4-4 ms each), and its p99 was 1.6-6.2x the sleeping dedicated worker's,
 * whose wake-ups waited 21-39 us for the CPU. */
/* The horizon is time, not a count of requests: 1024 requests were 2.5 ms at 400k requests/s,
 * less than one preemption's slice, and a second at 1k/s, so the estimate saw no stall at all
 * under load and kept one for seconds when traffic thinned. A stall is a scheduler slice (the
 * kernel's base slice, 0.75 ms per CPU doubling, up to a few ms), and the p99 it is priced for
 * moves with a share of 1% (stall_tail): the horizon holds a hundred slices of 0.75 ms, so that
 * one stall in it reads as the 1% it is, whatever the request rate. */
#define ADAPT_STALL_HORIZON_NS 75000000u
#define ADAPT_TAIL_HORIZON_NS 1000000000u /* the tail's (stall_tail) */
/* How often a spinning worker samples its CPU clock for the stall. The estimate does not depend
 * on it: a sample of awake time A that lost L serves ~n A requests, of which a share L / A waited
 * L / 2, so each sample adds ~n L^2 / 2 however long A is. Its cost does: each sample is a system
 * call (1.2-1.3 us here) and, one in a few, a search of the thresholds (~5000 instructions,
 * callgrind). At W / 2 (30-60 us), as before, a worker busy over 50 rr queues, which finds one
 * of them empty after nearly every request, took one every 50-70 requests (cost_reads_per_op
 * 0.014-0.022, vqs-bench JSON). A millisecond is shorter than a scheduler slice, the stall it
 * looks for, and 75 of them fill the horizon. */
#define ADAPT_SPIN_SAMPLE_NS 1000000u
#define ADAPT_STALL_MAX_NS 1000000000u /* a lost second is as bad as any: keeps L^2 in range */

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

/* An average by requests over the last ADAPT_STALL_HORIZON_NS: the requests seen before count
 * for what is left of the horizon after span_ns (weight, decayed in place), the sample for its
 * reqs. By requests, because a stall's wait and share are per request (a closed loop's stall
 * catches one in hundreds however long it lasts); over time, so that what a worker forgets
 * does not depend on its rate. Products fit: avg is at most ADAPT_STALL_MAX_NS, *weight a
 * horizon's requests. */
static uint64_t by_time(uint64_t avg, uint64_t sample, uint64_t reqs, uint64_t keep)
{
	return keep + reqs ? (avg * keep + sample * reqs) / (keep + reqs) : avg;
}

/* A weight (or an average, faded towards 0) span_ns later, over a horizon. */
static uint64_t faded(uint64_t weight, uint64_t span_ns, uint64_t horizon_ns)
{
	return span_ns < horizon_ns ? weight * (horizon_ns - span_ns) / horizon_ns : 0;
}

/* One horizon's averages after a sample: the time not seen (unseen_ns) fades them, the requests
 * seen before fade from their weight over span_ns, and the sample's reqs join with their wait
 * and their caught share. */
static void stall_avg_add(struct sched_stall_avg *a, uint64_t horizon_ns, uint64_t span_ns,
			  uint64_t unseen_ns, uint64_t each, uint64_t share, uint64_t reqs)
{
	uint64_t keep = faded(a->reqs, span_ns, horizon_ns);
	a->wait_ns = by_time(faded(a->wait_ns, unseen_ns, horizon_ns), each, reqs, keep);
	a->share = by_time(faded(a->share, unseen_ns, horizon_ns), share, reqs, keep);
	a->reqs = keep + reqs;
}

/* The thresholds move when the prices of the three modes through a gap of one sleep's cost (the
 * stall's for a spin, a sleep's, a nap's) moved by an eighth of a sleep's cost since they were
 * computed, not per sample: recomputing them is a search of ~7000 instructions (callgrind), a
 * few microseconds, and the learned costs are EWMAs of noisy samples (a sleep's CPU 3-20 us
 * here, the run queue waits 0-40 us, the timer's overshoot) that wander by a microsecond or
 * two around a steady price. At a 32nd, and at every nap's timer wake-up, the noise set the
 * search off at 12-34% of the wake-ups of a worker sleeping at 1k requests/s and 56-99% at
 * 20k/s (uprobe counts, load average 8), and nap_period was the top user-space symbol of that
 * worker's profile at 1k/s (adaptive_thresholds_ignore_the_noise_of_their_inputs); with an
 * eighth 10-12% and 25-51% in the same runs, the rest from the stall's price, which a loaded
 * machine moves by more. An eighth (7.5 us of a 60 us sleep) leaves a threshold off by about
 * as much until the next search. */
static void cost_maybe_update(struct sched_worker *w)
{
	const struct vqs_sched *s = w->s;
	uint64_t sc = sleep_cost(s, w);
	if ((absdiff(price(s, stall_wait(w)), price(s, w->stall_priced_ns)) +
	     absdiff(sc, w->sleep_priced_ns) + absdiff(nap_price(s, w, sc), w->nap_priced_ns)) * 8u >
	    sc)
		cost_update(w);
}

/* One sample of the stall: the share of its reqs a stall caught (in 1/STALL_SHARE_ONE) and the
 * wait that makes a request's on average, from awake_ns of wall time of which the thread ran
 * cpu_ns, at most found_max found by one pop. */
static void stall_sample(const struct sched_worker *w, uint64_t awake_ns, uint64_t cpu_ns,
			 uint64_t reqs, uint64_t found_max, uint64_t *share_out, uint64_t *each_out)
{
	uint64_t lost = awake_ns > cpu_ns ? awake_ns - cpu_ns : 0;
	if (lost > ADAPT_STALL_MAX_NS)
		lost = ADAPT_STALL_MAX_NS;
	if (lost > awake_ns)
		awake_ns = lost;
	/* The requests that arrived in the stall, reqs L / A for arrivals spread over time, are
	 * found together by the first pops after it: no more than the most one pop found, on each
	 * of the queues that share the worker's arrivals (queues_x16). A closed
	 * loop (rr) has one request per stream in flight, so its stall catches that many, not
	 * reqs L / A: without the cap its caught share read 1-2.5% where it was a request in
	 * hundreds, priced the tail of a stall that no p99 saw, and rr over one queue stopped
	 * spinning (adaptive's p50 20x busy-poll's in the default run, load average 5-9). */
	/* Each queue sharing the worker's arrivals has its own: a pop finds one queue's. */
	uint64_t caught_max = found_max * (w->queues_x16 > 16u ? w->queues_x16 : 16u) / 16u;
	uint64_t share = lost * STALL_SHARE_ONE / awake_ns; /* of the sample's requests, caught */
	if (caught_max < reqs && share > caught_max * STALL_SHARE_ONE / reqs)
		share = caught_max * STALL_SHARE_ONE / reqs;
	*share_out = share;
	*each_out = share * (lost / 2u) / STALL_SHARE_ONE; /* a request's wait in this sample */
}

void sched_cost_awake(struct sched_worker *w, uint64_t now_ns, uint64_t awake_ns, uint64_t cpu_ns,
		      uint64_t reqs, uint64_t found_max)
{
	/* the time since the last sample, sleeps included, and of it what the sample did not see */
	uint64_t span = w->stall_at_ns && now_ns > w->stall_at_ns ? now_ns - w->stall_at_ns : 0;
	uint64_t unseen = span > awake_ns ? span - awake_ns : 0;
	if (!reqs && !unseen)
		return; /* nothing waited, no time passed unseen */
	w->stall_at_ns = now_ns;
	/* What the worker did not see it forgets in time: over the time it slept (or was awake
	 * between an unmeasured wake-up and its first poll), the averages fade towards no stall, as
	 * the requests seen before fade from their weight. A worker reads its CPU after a
	 * measured wake-up (every nap, one sleep in 256) once the wake-up's requests are served,
	 * so the spans of its samples between wake-ups hold no request: faded only by the
	 * requests of their spans, a stall's price stayed where the last spin left it, and a
	 * worker whose stall's tail stopped its spin at 100k requests/s slept to the end of the
	 * run (adaptive_sleeping_worker_forgets_the_stall). The requests served unseen say
	 * nothing of the stall (a sleeping worker is woken ahead of the thread that would preempt
	 * a spinning one): counted as requests no stall caught, they forgot it within a few
	 * milliseconds at that rate, and under lasting preemption the worker went back to spinning
	 * into it every 8 ms (170-290 mode changes in 2 s). */
	uint64_t share = 0, each = 0;
	if (reqs && awake_ns)
		stall_sample(w, awake_ns, cpu_ns, reqs, found_max, &share, &each);
	stall_avg_add(&w->stall, ADAPT_STALL_HORIZON_NS, span, unseen, each, share, reqs);
	stall_avg_add(&w->tail, ADAPT_TAIL_HORIZON_NS, span, unseen, each, share, reqs);
	atomic_store_explicit(&w->c.stall_ns, w->stall.wait_ns, memory_order_relaxed);
	cost_maybe_update(w);
}

/* A sample from the mark (mark_ns 0: none, the thread's CPU was not read at the last wake-up:
 * this read only sets it). */
void sched_cost_sample(struct sched_worker *w, uint64_t now_ns, uint64_t cpu_ns)
{
	if (w->mark_ns)
		sched_cost_awake(w, now_ns, now_ns - w->mark_ns, cpu_ns - w->mark_cpu_ns,
				 w->reqs - w->mark_reqs, w->found_max);
	w->found_max = 0;
	w->mark_ns = now_ns;
	w->mark_cpu_ns = cpu_ns;
	w->mark_reqs = w->reqs;
}

void sched_cost_wake(struct sched_worker *w)
{
	w->mark_ns = 0; /* no mark until a measurement sets one: sched_cost_woke */
	w->nap_timed = false; /* sched_cost_timed_wake says when a timer ended it */
	w->wakes++;
	w->woken = true;
	w->woken_found = 0;
}

/* c was measured once, at creation, by two threads ping-ponging on otherwise idle CPUs, where
 * each wake-up takes a halted vCPU's exits: 28-81 us on the development VM under load, or the
 * 10 us default when a busy CPU kept the measurement from finishing in its 5 ms. The workers'
 * own sleeps cost less where the machine is busy (adaptive at 1 queue, 20k requests/s beside a
 * busy loop: dedicated's whole CPU per request was 18 us), and a c priced 2-4x too high made
 * sleeping look dearer than spinning or napping. Each sleep that an event ends (a kick, a
 * doorbell) teaches c, and W: the event's wake-up took the path outside the run queue measured
 * at creation (vqs_sched.wake_path_ns) and then queued_ns on the run queue, which the worker
 * reads from its schedstat (SCHED_QUEUED_UNKNOWN: not known, W stays). A nap that an event
 * ended early teaches W its wait too (its CPU is a cut nap's, not a sleep's: c stays): its
 * schedstat was read before the nap, and that read went unused. A sleep is priced by the
 * wake-up a kick makes, not by a timer's (sched_cost_timed_wake). */
void sched_cost_woke(struct sched_worker *w, uint64_t now_ns, uint64_t cpu_ns, bool event,
		     uint64_t slept_cpu_ns, uint64_t queued_ns)
{
	w->mark_ns = now_ns;
	w->mark_cpu_ns = cpu_ns;
	w->mark_reqs = w->reqs;
	w->found_max = 0;
	learn_queued(w, queued_ns);
	if (event) {
		w->sleep_cpu_ns = learn_cpu(w->sleep_cpu_ns, slept_cpu_ns);
		atomic_store_explicit(&w->c.sleep_cpu_ns, w->sleep_cpu_ns, memory_order_relaxed);
	}
	if (event || queued_ns != SCHED_QUEUED_UNKNOWN)
		cost_maybe_update(w);
}

static uint64_t window_min(const struct sched_worker *w) { return w->wake_ns / 2u; }
/* Give up polling after this many expected gaps without an arrival. */
#define ADAPT_POLL_GAPS 4u
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

/* Keeping an empty ring polled while its worker has other work: see SCHED_DEFER_LOOKS. */
static void note_work(const struct vqs_sched *s, struct vqs_queue *q, unsigned n, unsigned backlog,
		      uint64_t now)
{
	q->ad.looks = 0;
}

/* Count an empty turn of q; whether q has had no more than SCHED_DEFER_LOOKS of them since it last
 * found work. */
static bool looked_little(struct vqs_queue *q)
{
	return ++q->ad.looks <= SCHED_DEFER_LOOKS;
}

/* dedicated, pool: never spin; while other queues are listed, the worker is not going to sleep
 * anyway, and the queue rides out SCHED_DEFER_LOOKS trips through the list before it re-arms. */
static bool defer_while_listed(const struct vqs_sched *s, struct vqs_queue *q, uint64_t now)
{
	const struct sched_group *g = atomic_load_explicit(&q->group, memory_order_relaxed);
	return looked_little(q) && atomic_load_explicit(&g->nready, memory_order_relaxed) > 0;
}

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

/* One arrival of work at now: a gap sample, clamped to `cap` (each process's reason below); the
 * first one, of a rate not known yet, is taken as `first`. */
static void arrivals_observe(struct adapt_arrivals *a, uint64_t now, uint64_t cap, uint64_t first)
{
	if (a->last_arrival_ns) {
		uint64_t sample = now - a->last_arrival_ns;
		a->gap_ewma_ns = ewma(a->gap_ewma_ns, sample < cap ? sample : cap, ADAPT_EWMA_SHIFT);
	} else {
		a->gap_ewma_ns = first;
	}
	a->last_arrival_ns = now;
}

enum poll_mode { MODE_SLEEP, MODE_NAP, MODE_SPIN };

/* The mode the cost model picks for a gap g: spin below spin_max, nap below poll_max, else sleep
 * ((a) above). */
static enum poll_mode mode_of(const struct sched_worker *w, uint64_t g)
{
	return g < w->spin_max_ns ? MODE_SPIN : g < w->poll_max_ns ? MODE_NAP : MODE_SLEEP;
}

/* The spread of the gap estimate: an EWMA of weight a = 2^-ADAPT_EWMA_SHIFT over samples of
 * variance V varies by V a / (2 - a), V / 15 at an eighth (for exponential gaps, V = gap^2:
 * about gap / 4). */
static uint64_t gap_spread(const struct sched_worker *w)
{
	return isqrt(w->gap_var / ((2u << ADAPT_EWMA_SHIFT) - 1u));
}

/* Hysteresis at the break-evens ((a) above): the worker leaves its mode only when
 * the gap estimate, less or plus ADAPT_FLIP_SPREADS of its spread, is outside that mode's range
 * (each mode's cost is linear in the gap near a threshold, so a margin in the gap is a margin
 * in the expected-cost difference: the spread times the slope), and not before the estimate has
 * renewed its samples since the last change, 2^ADAPT_EWMA_SHIFT gaps: a decision rests on
 * samples the previous one did not see. Two spreads: noise alone puts the estimate beyond the
 * margin on one side in ~2% of its samples, where at the bare threshold a stream at the
 * break-even rate crossed it every few requests. */
#define ADAPT_FLIP_SPREADS 2u
static void rate_mode_update(struct sched_worker *w, uint64_t now)
{
	uint64_t g = w->ad.gap_ewma_ns;
	enum poll_mode cur = (enum poll_mode)w->rate_mode, want = mode_of(w, g);
	/* the spread (a square root) only where the mode would change: this runs per arrival */
	if (want == cur)
		return;
	uint64_t m = ADAPT_FLIP_SPREADS * gap_spread(w);
	if (mode_of(w, g > m ? g - m : 0) == cur || mode_of(w, g + m) == cur)
		return;
	if (w->mode_since_ns && now - w->mode_since_ns < (g << ADAPT_EWMA_SHIFT))
		return;
	w->rate_mode = want;
	w->mode_since_ns = now;
	stat_add(&w->c.mode_changes, 1);
}

/* What the worker measures around a sleep or nap (events.c): the thread's CPU clock before and
 * after (c from a sleep an event ends, c_n from naps, and the stall's sample of the awake time
 * before it) and, one in SCHED_QUEUED_EVERY of those, its schedstat (W). Each is a system call:
 * ~1.3 us of the worker's CPU for a CPU clock read here (clock_gettime of
 * CLOCK_THREAD_CPUTIME_ID has no vDSO path), 1-4 us for a schedstat pread. Naps, and sleeps
 * while the gap earns polling, are measured every time: their prices decide the worker's next
 * spin or nap, and the poll before them costs it more. A worker whose gap picks sleeping
 * (rate_mode) sleeps between requests as dedicated does, and measuring every sleep put two or
 * three system calls on each request that dedicated does not pay: 1 queue at 5k requests/s,
 * 1.11-2.58x dedicated's worker CPU per request in 6 alternating rounds, median 1.64; with one
 * sleep in 32 measured, 0.82-1.23, median 1.08 (docs/sched.md, "Measured (the sleep's own
 * cost)"). Its prices only say when to leave sleeping, and change over many sleeps, so it
 * measures one sleep in ADAPT_SLEEP_MEASURE_EVERY, with its run queue wait
 * (adaptive_sleeping_worker_measures_few_sleeps). One in 32 still cost 1 queue at 1k
 * requests/s 1.12-1.15x dedicated's CPU per request and 1.61-1.65x its p99 (medians of 8
 * repeat pairs, three runs alternating with one in 256: 1.03-1.08x and 1.12-1.42x). */
#define ADAPT_SLEEP_MEASURE_EVERY 256u
enum sched_sleep_reads sched_cost_sleep_reads(struct sched_worker *w, bool nap)
{
	if (!nap && w->rate_mode == MODE_SLEEP)
		return ++w->sleep_mode_sleeps % ADAPT_SLEEP_MEASURE_EVERY ? SCHED_READS_NONE
									 : SCHED_READS_CPU_QUEUED;
	return ++w->queued_sleeps % SCHED_QUEUED_EVERY ? SCHED_READS_CPU : SCHED_READS_CPU_QUEUED;
}

/* (d) The rent: how long past its windows a worker keeps its queues polled by naps ((d) above):
 * while its naps have cost less than the n - 1 more sleeps that re-arming n queues buys, at most
 * ADAPT_HOLD_MAX_NS. 0 where the worker does not nap (no price for latency, no nap CPU known). */
static uint64_t rent(const struct vqs_sched *s, const struct sched_worker *w)
{
	if (!s->o.spin_pct || !w->nap_cpu_ns || w->queues_x16 < 32u)
		return 0;
	uint64_t r = (w->queues_x16 - 16u) * sleep_cost(s, w) / 16u;
	if (r >= ADAPT_HOLD_MAX_NS)
		return ADAPT_HOLD_MAX_NS;
	r = r * nap_period(s, w, w->ad.gap_ewma_ns) / w->nap_cpu_ns;
	return r < ADAPT_HOLD_MAX_NS ? r : ADAPT_HOLD_MAX_NS;
}

/* How the worker's arrivals are best kept polled at `now`, by (a) the cost model and (b), (c),
 * (d) its windows; *rented: by (d). */
static enum poll_mode worker_mode(const struct vqs_sched *s, const struct sched_worker *w,
				  uint64_t now, bool *rented)
{
	*rented = false;
	const struct adapt_arrivals *a = &w->ad;
	uint64_t awake = w->awake_ns;
	if (!a->last_arrival_ns)
		return MODE_SLEEP;
	enum poll_mode m = (enum poll_mode)w->rate_mode;
	if (m == MODE_SLEEP)
		return MODE_SLEEP;
	uint64_t window = ADAPT_POLL_GAPS * a->gap_ewma_ns;
	if (window < window_min(w))
		window = window_min(w);
	if (m == MODE_SPIN && window > w->spin_max_ns)
		window = w->spin_max_ns;
	uint64_t span = a->last_arrival_ns > awake ? a->last_arrival_ns - awake : 0;
	uint64_t hold = span >> ADAPT_HOLD_SHIFT;
	if (hold > ADAPT_HOLD_MAX_NS)
		hold = ADAPT_HOLD_MAX_NS;
	uint64_t silent = now - a->last_arrival_ns;
	if (silent < (window > hold ? window : hold))
		return m;
	*rented = silent < rent(s, w);
	return *rented ? MODE_NAP : MODE_SLEEP;
}

/* The awake span so far less the time slept, so that one stall of the drivers shortens it
 * instead of starting over ((c) above); a sleep that outlasts the span starts it over. A nap
 * leaves it as it was: its queues stay polled, it is how a worker rides out a silence, not
 * the end of its load. Were naps taken off the span as sleeps are, a worker that naps longer
 * than it spins between them (a nap lasts at least the timer's overshoot, 14-30 us in the
 * sweeps of 2026-12-06, against the 10 us gaps of 100k requests/s) would shrink its hold by
 * napping and nap on. */
uint64_t sched_awake_after_sleep(uint64_t awake_ns, uint64_t asleep_ns, uint64_t now_ns,
				 bool nap)
{
	if (nap)
		return awake_ns;
	uint64_t slept = now_ns - asleep_ns;
	return now_ns - awake_ns > 2 * slept ? awake_ns + 2 * slept : now_ns;
}

static void adapt_observe(const struct vqs_sched *s, struct vqs_queue *q, unsigned n,
			  unsigned backlog, uint64_t now)
{
	struct adapt_state *a = &q->ad;
	struct sched_worker *w = q->home;
	if (n + backlog > w->found_max)
		w->found_max = n + backlog;
	/* A pop after one that left chains in the ring found those: the ring was not empty in
	 * between, so it is no arrival and no gap, only a later end of the work ((a) above: a gap
	 * is how long the rings stay empty). Likewise the queues a wake-up finds with work after
	 * the first: the worker was asleep, not idle between them, while they came. Counted as
	 * arrivals, the pops of a burst served in doubling batches (1, 2, 4, ...) after a driver's
	 * hiccup, and the queues found together by a wake-up that waited on a busy run queue, put
	 * gaps of a handler call into a sparse stream's estimate, and the worker spun or napped
	 * through the next silence (adaptive_work_found_together_is_one_arrival). */
	bool more = a->backlog;
	if (!more && w->woken && a->wake_seen != w->wakes)
		more = w->woken_found++ > 0; /* the first queue a wake-up finds is its arrival */
	a->backlog = backlog != 0;
	a->wake_seen = w->wakes;
	if (more) {
		a->q.last_arrival_ns = now;
		w->ad.last_arrival_ns = now;
	} else {
		/* How many queues share the worker's arrivals ((d) above): over the worker's
		 * arrivals, how many it had since the arriving queue's last one, this one included
		 * (each queue's 1 / share, weighted by its share, sums to the queues); a silence
		 * longer than a worker has queues says nothing more. */
		w->arrivals++;
		if (a->q.last_arrival_ns) {
			uint64_t k = w->arrivals - a->seen;
			k = k < SCHED_MAX_QUEUES ? k : SCHED_MAX_QUEUES;
			w->queues_x16 = ewma(w->queues_x16, 16u * k, ADAPT_EWMA_SHIFT);
		}
		a->seen = w->arrivals;
		/* The worker's gap decides whether to poll: a driver's stall is not a rate ((a)
		 * above), and an unknown rate is not worth polling yet. A queue's gap only says
		 * whether it is still part of its worker's traffic: clamped to the longest its
		 * worker polls after an arrival, and a queue's first arrival taken as that sparse,
		 * so that it belongs from the start. */
		arrivals_observe(&a->q, now, ADAPT_HOLD_MAX_NS, ADAPT_HOLD_MAX_NS);
		uint64_t before = w->ad.gap_ewma_ns;
		bool known = w->ad.last_arrival_ns;
		arrivals_observe(&w->ad, now, 2 * w->poll_max_ns, w->poll_max_ns);
		if (known) {
			uint64_t d = absdiff(w->ad.gap_ewma_ns, before) << ADAPT_EWMA_SHIFT;
			w->gap_var = ewma(w->gap_var, d * d, ADAPT_EWMA_SHIFT);
		}
		rate_mode_update(w, now);
	}
	if (backlog && n >= a->batch)
		a->batch = a->batch * 2 < s->o.batch_max ? a->batch * 2 : s->o.batch_max;
	else if (!backlog && n < a->batch / 2)
		a->batch = a->batch / 2 ? a->batch / 2 : 1;
}

/* The worker decides how it stays awake, from the arrivals of all its queues: spinning, napping
 * (then every queue it keeps polled naps, and the worker's nap_ns says for how long), or not at
 * all. Its queues stay polled while it does, each as long as it is still part of the worker's
 * traffic: it had the worker's last arrival, or fewer than ADAPT_POLL_GAPS of its own gaps
 * passed from its last arrival to the worker's. The model priced the spin or the nap as sparing the requests a kick and a
 * wake-up; a queue that re-arms while its worker polls gets neither: its driver kicks, and the
 * worker pays the poll and the kick. That was the rule before (a queue re-armed after
 * SCHED_DEFER_LOOKS empty turns, or 16 naps, unless its own gap earned polling): 50 queues
 * at 20k requests/s, one request every 2.5 ms on each, the worker spinning through its 50 us
 * gaps, made 1.00 kicks and 0.65 wake-ups per request at 36.7 us of worker CPU where pool
 * made 10.2 (vqs-bench --preset sweep, quiet VM); napping at 5k/s, each queue re-armed after
 * ~1 ms of its 10 ms gap. (adaptive sets home for every queue.) */
static bool adapt_keep_polling(const struct vqs_sched *s, struct vqs_queue *q, uint64_t now)
{
	struct adapt_state *a = &q->ad;
	struct sched_worker *w = q->home;
	/* While it spins, the worker samples its CPU once requests were served since the last
	 * sample, at most every ADAPT_SPIN_SAMPLE_NS (see there). */
	if (w->mark_ns && w->reqs != w->mark_reqs && now - w->mark_ns >= ADAPT_SPIN_SAMPLE_NS)
		sched_cost_sample(w, now, sched_worker_cpu_ns(w));
	a->backlog = false; /* found empty: what it finds next arrived */
	/* the queues the wake-up listed are served: what the worker finds next arrived */
	const struct sched_group *g = atomic_load_explicit(&q->group, memory_order_relaxed);
	if (!atomic_load_explicit(&g->nready, memory_order_relaxed))
		w->woken = false;
	bool rented;
	enum poll_mode m = worker_mode(s, w, now, &rented);
	w->renting = rented;
	/* a silence outlasted what its rate earned: its queues re-arm, and it sleeps */
	if (m == MODE_SLEEP && w->poll_mode != MODE_SLEEP && w->rate_mode != MODE_SLEEP)
		stat_add(&w->c.polling_ends, 1);
	w->poll_mode = m;
	/* Awake after a sleep it did not measure: the stall's samples start here, once it polls. */
	if (m != MODE_SLEEP && !w->mark_ns)
		sched_cost_sample(w, now, sched_worker_cpu_ns(w));
	a->nap = m == MODE_NAP;
	if (m == MODE_SLEEP || !a->q.last_arrival_ns ||
	    w->ad.last_arrival_ns - a->q.last_arrival_ns >= ADAPT_POLL_GAPS * a->q.gap_ewma_ns)
		return false;
	if (a->nap)
		w->nap_ns = nap_period(s, w, w->ad.gap_ewma_ns) - w->timer_ns;
	return true;
}

static const struct sched_policy policies[] = {
	{VQS_POLICY_DEDICATED, batch_max, note_work, defer_while_listed},
	{VQS_POLICY_POOL, batch_max, note_work, defer_while_listed},
	{VQS_POLICY_POLL, batch_max, note_work, poll_until_timeout},
	{VQS_POLICY_ADAPTIVE, adapt_batch, adapt_observe, adapt_keep_polling},
};

const struct sched_policy *sched_policy_get(enum vqs_policy p)
{
	return (unsigned)p < 4 ? &policies[p] : NULL;
}
