/* SPDX-License-Identifier: MIT */
/*
 * The kernel model serving a nic: a vqs_ksim_dev whose worker runs vhost-net's handle_tx and
 * handle_rx (drivers/vhost/net.c) with VHOST_NET_WEIGHT / VHOST_NET_PKT_WEIGHT budgets and
 * requeue, the busyloop timeout, and RX batch consumption from the tun ring in the 4.13 or the
 * fixed variant.
 */
#ifndef VQS_KSIM_VHOST_NET_H
#define VQS_KSIM_VHOST_NET_H

#include "ksim/nic.h"

struct ksim_vnet_cfg {
	enum vqs_ksim_fork fork;
	enum vqs_ksim_rx_variant variant;
	unsigned batch; /* 1..VQS_KSIM_NET_BATCH */
};

/* Create the device (the calling thread is its owner), start the polls; traffic may flow. */
int ksim_vnet_start(struct ksim_nic *n, const struct ksim_vnet_cfg *cfg);
/* Stop polls and workers. Whatever produces into n->rx_tun must have stopped before. */
void ksim_vnet_stop(struct ksim_nic *n);
/* Stop serving the nic without tearing the device down (its kicks and its tun ring's readiness
 * go unheeded; returns once no handler runs), and serve it again, first looking at both queues:
 * a world whose queues are handed between this backend and another (ksim_snet_park). Only one
 * backend of a nic may be unparked; n->backend must be this one's. Threads: control. */
void ksim_vnet_park(struct ksim_nic *n);
int ksim_vnet_unpark(struct ksim_nic *n);
/* Switch the RX handler to variant and batch (1..VQS_KSIM_NET_BATCH) while traffic flows: the
 * worker takes the change at its next round with no packet held in a 4.13 batch. -EINVAL for a
 * bad batch or a nic without a kernel-model backend. Threads: control. */
int ksim_vnet_set_rx(struct ksim_nic *n, enum vqs_ksim_rx_variant variant, unsigned batch);
/* CPU mask of the worker serving the nic. */
int ksim_vnet_worker_cpus(struct ksim_nic *n, cpu_set_t *cpus);
/* Linux tid of that worker (-errno): for sched_setaffinity from outside. */
int ksim_vnet_worker_tid(struct ksim_nic *n);

#endif
