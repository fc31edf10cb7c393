/* SPDX-License-Identifier: MIT */
/*
 * The switch: ports (one vhost-user backend each, all on one scheduler), the MAC table, and the
 * housekeeping the main thread runs between signals (MAC aging, waking transmit queues whose
 * destination stalled). The forwarding itself is in forward.c.
 */
#ifndef VQS_SWITCH_SWITCH_H
#define VQS_SWITCH_SWITCH_H

#include <stdio.h>
#include <vqsched/vqsched.h>

#include "mac_table.h"
#include "port.h"

#define SW_MAX_PORTS 64

struct sw_opts {
	uint32_t size;
	unsigned nports;
	const char *const *paths; /* nports socket paths */
	bool client;              /* connect to the frontends instead of listening */
	bool packed;              /* offer VIRTIO_F_RING_PACKED */
	bool mrg_rxbuf;           /* offer VIRTIO_NET_F_MRG_RXBUF */
	uint64_t mac_age_ns;      /* forget addresses silent this long */
	uint64_t stall_ns;        /* a destination without receive buffers this long drops */
	unsigned stage_slots;     /* frames staged per port, a power of two (sw_stage_slots) */
	struct vqs_sched *sched;  /* not owned */
};
void sw_opts_init(struct sw_opts *o);

struct sw_switch {
	struct sw_opts o;
	struct vqs_vu_device_ops ops;
	struct sw_mac_table mac;
	uint64_t all_ports; /* bit per port */
	uint64_t next_age_ns;
	_Atomic bool attention; /* a port has waiters or a starved receive queue: tick fast */
	unsigned nports;
	struct sw_port *ports[SW_MAX_PORTS];
};

/* Create every port and its backend (listening or connecting). Threads: main. */
int sw_create(struct sw_switch **out, const struct sw_opts *o);
/* Stop every backend: no handler runs after it, so the counters are final. Threads: main. */
void sw_stop(struct sw_switch *sw);
/* sw_stop, then free. Threads: main. */
void sw_destroy(struct sw_switch *sw);
/* Periodic work; returns milliseconds until it wants to run again. Threads: main. */
unsigned sw_housekeep(struct sw_switch *sw, uint64_t now);
/* Every port's counters, one line each, prefixed. Threads: any. */
void sw_print(struct sw_switch *sw, FILE *f, const char *prefix);

/* Has p's staging made no progress for stall_ns? Under p->lock. `now` may predate the last
 * drain (taken before the lock by another thread), hence the signed difference. */
static inline bool sw_stalled(const struct sw_port *p, uint64_t now)
{
	return (int64_t)(now - p->last_drain_ns) > (int64_t)p->sw->o.stall_ns;
}

/* forward.c: the queue handlers and the step between them. */
unsigned sw_tx_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque);
unsigned sw_rx_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque);
/* The receive queue's demand (vqs_demand_fn): buffers for the frames waiting. */
unsigned sw_rx_demand(struct vqs_queue *q, void *opaque);
/* Wake the transmit queues of the ports in mask. */
void sw_wake_senders(struct sw_switch *sw, uint64_t mask);
/* A frame of len bytes (Ethernet header included, at most SW_FRAME_MAX) the switch sends as if
 * port from's guest had: its source is learned on from and it goes where that guest's would,
 * except that a destination without room drops it (counted) instead of making anyone wait.
 * Threads: any but a queue handler of the switch. */
void sw_inject(struct sw_switch *sw, struct sw_port *from, const uint8_t *frame, uint32_t len);
/* Announce that mac is now behind port p (a migrated guest, vhost-user SEND_RARP): a broadcast
 * RARP frame from mac, as QEMU sends for guests that cannot announce themselves, which the
 * switch learns from and floods to every other port. Threads: as sw_inject. */
void sw_announce(struct sw_switch *sw, struct sw_port *p, const uint8_t mac[6]);

#endif
