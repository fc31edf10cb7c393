/* SPDX-License-Identifier: MIT */
/*
 * One modelled guest network interface: guest memory, the virtio-net RX/TX queue pair seen from
 * both sides (the guest's vqs_drv_vq, the host's vqs_vq), kick eventfds, the interrupt line, the
 * tun ring packets for this guest arrive on, and where its TX packets go. The per-packet work
 * of vhost-net (copy a TX chain into a packet, copy a packet into an RX chain, drop) lives here so
 * that the kernel-model handlers and the vqsched handlers do exactly the same work.
 */
#ifndef VQS_KSIM_NIC_H
#define VQS_KSIM_NIC_H

#include <vqsched/driver.h>
#include <vqsched/vring.h>
#include "ksim/flow.h"
#include "ksim/tun.h"

#define KSIM_RXQ 0 /* vhost-net's queue order */
#define KSIM_TXQ 1
#define KSIM_QUEUE_NUM 256u
#define KSIM_VNET_HDR 12u
#define KSIM_TUN_SIZE 1024u

/* What the whole modelled setup shares: costs, streams, counters, the stop flag. */
struct ksim_world {
	struct vqs_ksim_costs costs;
	struct ksim_flow *flows;
	unsigned nflows;
	atomic_bool stop;
	_Atomic uint64_t drops_batch, drops_ring, kicks;
};

struct ksim_nic {
	struct ksim_world *world;
	struct vqs_gmem *gmem;
	struct vqs_mem *mem;
	struct vqs_drv_vq *drv[2];
	struct vqs_vq *vq[2];
	int kick[2];
	struct ksim_park irq;     /* the guest's interrupt line; irq.efd is both queues' call fd */
	struct ksim_tun rx_tun;   /* packets for this guest */
	struct ksim_tun *tx_dst;  /* where this guest's TX goes (another nic's rx_tun or a peer) */
	uint64_t buf_gpa[2];      /* first buffer of each queue's buffer pool */
	uint32_t buf_size;
	void *backend;            /* the kernel-model or vqsched backend serving this nic */
};

int ksim_nic_init(struct ksim_nic *n, struct ksim_world *w);
void ksim_nic_fini(struct ksim_nic *n);
/* Host pointer of buffer i of queue q. */
void *ksim_nic_buf(struct ksim_nic *n, unsigned q, unsigned i);

/* vhost side, shared by every backend. Inside vqs_mem_read_lock(). */
/* Copy a TX chain into a packet and hand it to tx_dst (a full ring drops it). */
void ksim_net_xmit(struct ksim_nic *n, const struct vqs_elem *e);
/* Copy skb into an RX chain and free it; returns the bytes written. */
uint32_t ksim_net_receive(struct ksim_nic *n, struct ksim_skb *skb, const struct vqs_elem *e);
/* Drop a packet taken from a ring: count it, tell its stream. */
void ksim_net_drop(struct ksim_world *w, struct ksim_skb *skb, _Atomic uint64_t *counter);
/* Lose a packet the way 4.13's handle_rx leaked one (drops_batch): its stream learns of it only
 * by a retransmission timeout. */
void ksim_net_leak(struct ksim_world *w, struct ksim_skb *skb);
/* Interrupt the guest when the ring says so. */
void ksim_net_signal(struct ksim_nic *n, unsigned q);

/* A packet with this tag and the world's payload size; NULL on allocation failure. */
struct ksim_skb *ksim_pkt_new(struct ksim_world *w, uint16_t flow, uint16_t kind, uint32_t seq);
/* Read a packet's tag (a copy: the bytes may live in guest memory). */
void ksim_pkt_tag(const void *data, struct ksim_pkt_tag *tag);

#endif
