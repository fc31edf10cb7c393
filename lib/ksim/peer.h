/* SPDX-License-Identifier: MIT */
/*
 * The external host of a host-to-guest test (netperf on another machine): a thread that sends
 * straight into the guest's tun ring and reads the guest's TX from a ring of its own.
 * STREAM: sends stream 0 of the world (TCP-like window, acked by the guest's receiver).
 * RR: one request at a time, waits for the response; counts transactions.
 */
#ifndef VQS_KSIM_PEER_H
#define VQS_KSIM_PEER_H

#include <pthread.h>
#include "ksim/nic.h"

enum ksim_peer_mode { KSIM_PEER_STREAM = 0, KSIM_PEER_RR = 1 };

struct ksim_peer {
	struct ksim_nic *nic; /* the guest's nic */
	enum ksim_peer_mode mode;
	int cpu;              /* -1: float */
	struct ksim_tun in;   /* the guest's TX lands here (nic->tx_dst) */
	struct ksim_tun_notify in_ready; /* in's readiness: unparks the peer */
	struct ksim_park park;
	pthread_t thread;
	_Atomic uint64_t transactions;
};

/* Set up the ring and parking spot and point the guest's TX at them (before traffic). */
int ksim_peer_init(struct ksim_peer *p, struct ksim_nic *nic, enum ksim_peer_mode mode, int cpu);
int ksim_peer_start(struct ksim_peer *p);
/* After world->stop: wake and join. */
void ksim_peer_join(struct ksim_peer *p);
void ksim_peer_fini(struct ksim_peer *p);

#endif
