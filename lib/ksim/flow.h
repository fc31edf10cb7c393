/* SPDX-License-Identifier: MIT */
/*
 * A TCP-like stream: the sender keeps at most min(cwnd, rwnd) packets in flight; acknowledgements
 * are the receiver's delivered count (an out-of-band ack channel: the reverse path is not
 * modelled). A drop anywhere is reported to the stream, which then sends nothing new (the hole
 * holds the window's left edge) until loss_recovery_us later it retransmits (the lost packets'
 * window slots are freed) and halves cwnd (one halving per recovery). When a retransmission is
 * lost again, or when the loss leaves the sender nothing to detect it by (a packet leaked on the
 * host, never freed: ksim_flow_lost's `hang`), fast recovery cannot repair it: the stall lasts
 * rto_us (a retransmission timeout) and cwnd restarts from 2. Slow start (to half the window
 * before the loss, or rwnd), then +1/cwnd per ack. So drops cost throughput as they do TCP.
 */
#ifndef VQS_KSIM_FLOW_H
#define VQS_KSIM_FLOW_H

#include <stdatomic.h>
#include "ksim/wait.h"

struct ksim_flow {
	/* sender only */
	uint64_t sent, delivered_seen, lost_seen, lost_freed, loss_t0, retransmits;
	double cwnd, ssthresh;
	uint32_t rwnd;
	uint64_t recovery_ns, rto_ns;
	uint64_t rto_seen, hang_seen;
	uint64_t timeouts;
	/* shared */
	_Atomic uint64_t delivered; /* receiver: packets that reached the application */
	_Atomic uint64_t lost;      /* whoever dropped a packet of this stream */
	_Atomic uint64_t lost_retx; /* of those, retransmissions */
	_Atomic uint64_t lost_hang; /* of those, losses only a timeout repairs */
	/* Sequence numbers [retx_lo, retx_hi) are retransmissions; the sender writes, droppers
	 * read (a hint: a drop racing the update may count either way). */
	_Atomic uint32_t retx_lo, retx_hi;
	struct ksim_park *sender;   /* woken on acks and losses */
};

void ksim_flow_init(struct ksim_flow *f, uint32_t rwnd, uint32_t recovery_us, uint32_t rto_us,
		    struct ksim_park *sender);
/*
 * Sender: account acks and losses up to now; true when one more packet may go. *wake_at gets the
 * time a pending recovery is due (unchanged when none).
 */
bool ksim_flow_can_send(struct ksim_flow *f, uint64_t now, uint64_t *wake_at);
/* Sender: one packet sent; returns its sequence number. */
uint32_t ksim_flow_sent(struct ksim_flow *f);
/* Receiver / dropper side. Threads: any. */
void ksim_flow_delivered(struct ksim_flow *f);
/* A packet of the stream was lost; `hang` when only a retransmission timeout can repair it. */
void ksim_flow_lost(struct ksim_flow *f, uint32_t seq, bool hang);

#endif
