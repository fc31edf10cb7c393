/* SPDX-License-Identifier: MIT */
#include "ksim/flow.h"

#include <string.h>

#define INITIAL_CWND 10.0

void ksim_flow_init(struct ksim_flow *f, uint32_t rwnd, uint32_t recovery_us, uint32_t rto_us,
		    struct ksim_park *sender)
{
	memset(f, 0, sizeof(*f));
	f->rwnd = rwnd ? rwnd : 1;
	f->cwnd = INITIAL_CWND < f->rwnd ? INITIAL_CWND : f->rwnd;
	f->ssthresh = f->rwnd;
	f->recovery_ns = (uint64_t)recovery_us * 1000u;
	f->rto_ns = (uint64_t)rto_us * 1000u;
	atomic_init(&f->delivered, 0);
	atomic_init(&f->lost, 0);
	atomic_init(&f->lost_retx, 0);
	atomic_init(&f->lost_hang, 0);
	atomic_init(&f->retx_lo, 0);
	atomic_init(&f->retx_hi, 0);
	f->sender = sender;
}

bool ksim_flow_can_send(struct ksim_flow *f, uint64_t now, uint64_t *wake_at)
{
	/* acquire: pairs with the release increments; nothing is read through them, but the
	 * counts must not run behind what the wake-up promised. */
	uint64_t delivered = atomic_load_explicit(&f->delivered, memory_order_acquire);
	for (; f->delivered_seen < delivered; f->delivered_seen++) {
		f->cwnd += f->cwnd < f->ssthresh ? 1.0 : 1.0 / f->cwnd;
		if (f->cwnd > f->rwnd)
			f->cwnd = f->rwnd;
	}
	uint64_t lost = atomic_load_explicit(&f->lost, memory_order_acquire);
	if (lost > f->lost_seen) {
		if (!f->loss_t0)
			f->loss_t0 = now ? now : 1;
		uint64_t retx = atomic_load_explicit(&f->lost_retx, memory_order_relaxed);
		uint64_t hang = atomic_load_explicit(&f->lost_hang, memory_order_relaxed);
		bool timeout = retx > f->rto_seen || hang > f->hang_seen;
		uint64_t due = f->loss_t0 + (timeout ? f->rto_ns : f->recovery_ns);
		if (now < due) {
			/* The hole holds the window's left edge: nothing new until it is repaired. */
			if (due < *wake_at)
				*wake_at = due;
			return false;
		}
		uint64_t n = lost - f->lost_seen;
		f->lost_freed += n;
		f->retransmits += n;
		f->lost_seen = lost;
		f->rto_seen = retx;
		f->hang_seen = hang;
		f->timeouts += timeout;
		/* Half the window is where slow start ends: after a timeout from 2 (RFC 5681's loss
		 * window), after fast recovery right there. */
		double half = f->cwnd / 2 < 2.0 ? 2.0 : f->cwnd / 2;
		f->cwnd = timeout ? 2.0 : half;
		f->ssthresh = half;
		f->loss_t0 = 0;
		/* The next n sends resend what was lost. */
		atomic_store_explicit(&f->retx_lo, (uint32_t)f->sent, memory_order_relaxed);
		atomic_store_explicit(&f->retx_hi, (uint32_t)(f->sent + n), memory_order_relaxed);
	}
	uint64_t inflight = f->sent - f->delivered_seen - f->lost_freed;
	return (double)inflight < f->cwnd;
}

uint32_t ksim_flow_sent(struct ksim_flow *f) { return (uint32_t)f->sent++; }

void ksim_flow_delivered(struct ksim_flow *f)
{
	atomic_fetch_add_explicit(&f->delivered, 1, memory_order_release); /* pairs with can_send */
	ksim_unpark(f->sender);
}

void ksim_flow_lost(struct ksim_flow *f, uint32_t seq, bool hang)
{
	if (hang)
		atomic_fetch_add_explicit(&f->lost_hang, 1, memory_order_relaxed);
	uint32_t lo = atomic_load_explicit(&f->retx_lo, memory_order_relaxed);
	uint32_t hi = atomic_load_explicit(&f->retx_hi, memory_order_relaxed);
	if ((uint32_t)(seq - lo) < (uint32_t)(hi - lo))
		atomic_fetch_add_explicit(&f->lost_retx, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&f->lost, 1, memory_order_release); /* pairs with can_send */
	ksim_unpark(f->sender);
}
