/* SPDX-License-Identifier: MIT */
/*
 * A guest: one vCPU thread running a virtio-net-like driver on the nic's driver-side rings. It
 * sends the world's streams (SENDER), receives them and acknowledges what reaches the
 * application (RECEIVER), or answers each request with a response (RR_SERVER). When it has
 * nothing to do it halts on its interrupt line until a call, an ack or a recovery timer.
 */
#ifndef VQS_KSIM_GUEST_H
#define VQS_KSIM_GUEST_H

#include <pthread.h>
#include "ksim/nic.h"

enum ksim_guest_role { KSIM_GUEST_SENDER = 1, KSIM_GUEST_RECEIVER = 2, KSIM_GUEST_RR_SERVER = 4 };

struct ksim_guest {
	struct ksim_nic *nic;
	unsigned role;
	int cpu; /* pin the vCPU here; -1 = leave the inherited mask */
	pthread_t thread;
	unsigned tx_free[KSIM_QUEUE_NUM];
	unsigned ntx_free;
	unsigned rx_refill[KSIM_QUEUE_NUM]; /* received, not yet reposted */
	unsigned nrx_refill;
	unsigned resp_pending;
	uint32_t resp_seq;
	unsigned next_flow;
};

/* Start the vCPU thread (created by the caller, so it inherits the caller's mask unless cpu >= 0). */
int ksim_guest_start(struct ksim_guest *g, struct ksim_nic *nic, unsigned role, int cpu);
/* After world->stop is set: wake and join the vCPU. */
void ksim_guest_join(struct ksim_guest *g);

/* Pin the calling thread to one CPU. 0 or -errno. */
int ksim_pin_self(int cpu);

#endif
