/* SPDX-License-Identifier: MIT */
/*
 * The adapter that lets vqsched serve a nic: the same queues and the same per-packet work as the
 * kernel model (ksim_net_xmit / ksim_net_receive), driven by a vqs_sched of any policy and
 * placement. RX never takes a packet it has no buffer for: the handler is given popped RX
 * buffers and takes at most that many packets from the tun ring, giving the rest back.
 */
#ifndef VQS_KSIM_SCHED_NET_H
#define VQS_KSIM_SCHED_NET_H

#include <vqsched/sched.h>
#include "ksim/nic.h"

/* Create the scheduler from `opts` (the calling thread creates it) and attach both queues, in
 * one group / on worker 0, like the one worker of a vhost device. */
int ksim_snet_start(struct ksim_nic *n, const struct vqs_sched_opts *opts);
/* Detach and destroy. Whatever produces into n->rx_tun must have stopped before. */
void ksim_snet_stop(struct ksim_nic *n);
/* Stop serving the nic, keeping the scheduler and what its workers learned (its queues pause,
 * their kick fds detached; returns once no handler runs), and serve it again (each queue gets a
 * turn): a world whose queues are handed between this backend and the kernel model's
 * (ksim_vnet_park). n->backend must be this one's. Threads: control. */
int ksim_snet_park(struct ksim_nic *n);
int ksim_snet_unpark(struct ksim_nic *n);
/* CPU mask of the worker serving the nic. */
int ksim_snet_worker_cpus(struct ksim_nic *n, cpu_set_t *cpus);

#endif
