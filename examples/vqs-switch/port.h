/* SPDX-License-Identifier: MIT */
/*
 * One switch port: a vhost-user net device (queue 0 receive, queue 1 transmit, as virtio-net
 * numbers them), the frames waiting for its guest's receive buffers, and its counters.
 *
 * Frames forwarded to a port are copied out of the sender's transmit buffers into the port's
 * staging ring (so the sender's buffers go back at once, and the frame is a snapshot the guest can
 * no longer change), and from there into receive buffers when the port's receive queue runs.
 * A full staging ring pushes back on the sender; see forward.c.
 */
#ifndef VQS_SWITCH_PORT_H
#define VQS_SWITCH_PORT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <vqsched/vqsched.h>

#include "net_hdr.h"

#define SW_RXQ 0
#define SW_TXQ 1
#define SW_FRAME_MAX 2046u  /* Ethernet frame bytes, header excluded: MTU 1500 plus VLAN tags */
/* Staging ring sizes (powers of two); see sw_stage_slots. */
#define SW_STAGE_MIN 256u
#define SW_STAGE_MAX 4096u
#define SW_RX_SHORT_RETRIES 16u /* immediate retries for a frame larger than the batch */

enum sw_drop {
	SW_DROP_RUNT,       /* sender: frame shorter than an Ethernet header */
	SW_DROP_OVERSIZE,   /* sender: frame longer than SW_FRAME_MAX */
	SW_DROP_BAD_CHAIN,  /* own ring: transmit chain with writable or receive chain with readable
			     * buffers, or shorter than the net header */
	SW_DROP_FILTERED,   /* sender: destination learned on the sender's own port */
	SW_DROP_LINK_DOWN,  /* destination: its receive queue is not running */
	SW_DROP_NO_BUFFERS, /* destination: staging full and no receive buffers for stall_ms */
	SW_DROP_RX_SMALL,   /* destination: its receive buffers cannot hold the frame */
	SW_DROP__COUNT
};
const char *sw_drop_name(enum sw_drop d);

struct sw_counters {
	_Atomic uint64_t rx_frames, rx_bytes; /* taken from the guest's transmit queue */
	_Atomic uint64_t tx_frames, tx_bytes; /* written into the guest's receive queue */
	_Atomic uint64_t drop[SW_DROP__COUNT];
	_Atomic uint64_t announces; /* SEND_RARP: the guest was announced from this port */
};

/* Room for a staged frame: the frame at SW_NET_HDR_MAX, and room before it for the receiver's net
 * header, so header and frame go into the receive buffers as one run of bytes. */
#define SW_SLOT_BYTES (SW_NET_HDR_MAX + SW_FRAME_MAX)
/* Frames that fit this much room (with the header room) are staged in a dense array: the whole
 * ring's small frames then span a few pages and lines, which staging and delivering touch at the
 * rate frames go through; only larger frames use their slot's full-size room. */
#define SW_SLOT_SMALL 128u

/* A staged frame: len bytes at buf + SW_NET_HDR_MAX (buf: the slot's small or full-size room). */
struct sw_slot {
	uint32_t len;
	uint8_t *buf;
};

struct sw_switch;

struct sw_port {
	struct sw_switch *sw;
	unsigned id;
	char path[108];
	struct vqs_vu_backend *backend;

	/* Negotiated by this port's frontend; written by the backend's control thread before its
	 * queues start (relaxed: attach publishes it to the workers). */
	_Atomic uint32_t hdr_len;
	_Atomic bool mrg_rxbuf;

	pthread_mutex_t lock; /* everything below, up to the counters */
	struct vqs_queue *rxq, *txq; /* running queues, NULL when stopped */
	struct sw_slot *slots;
	unsigned stage_mask;    /* staging slots - 1 */
	uint8_t (*small)[SW_SLOT_SMALL]; /* per slot: room for a small frame */
	uint8_t (*large)[SW_SLOT_BYTES]; /* per slot: room for any frame */
	unsigned head, count;
	bool rx_parked;         /* receive handler gave its buffers back for lack of frames */
	bool rx_starved;        /* a frame needs more receive buffers than the ring offers */
	unsigned rx_short_turns; /* turns in a row that could not place the first frame */
	unsigned rx_bufs_per_frame; /* most receive buffers one frame took in the last turn (0 = 1) */
	uint64_t waiters;       /* ports whose transmit queue waits for room here (bit = port id) */
	uint64_t last_drain_ns; /* last time the receive queue took frames (or started) */

	/* Bumped when the transmit queue stops (the backend says so before the handler's last
	 * call has ended): a frame half delivered in an earlier session is forgotten, not matched
	 * by id against a new session's chain. */
	_Atomic uint32_t tx_gen;
	/* Owned by this port's transmit handler: the frame it gave back half delivered. */
	bool partial;
	uint16_t partial_id;
	uint32_t partial_gen;
	uint64_t partial_done;

	struct sw_counters c;
};

/*
 * Staging slots per port for a scheduler turn budget of budget_pkts: four turns' worth, within
 * [SW_STAGE_MIN, SW_STAGE_MAX]. A transmit turn stages up to a budget of frames; when its
 * destination still holds frames its guest had no buffers for, a ring of one or two turns fills
 * and the sender gives the rest of its batch back, to pop it again later. vqs-switch between two
 * DPDK virtio-user ports with 1024 frames each circling (scripts/bench-vhost-user.sh, QSIZE=1024
 * BURSTS=2) gave back 20% of what it popped with 256 slots, 1-3% with 512 and none with 1024.
 */
unsigned sw_stage_slots(uint32_t budget_pkts);
/* Is p's staging ring full? Under p->lock. */
static inline bool sw_stage_full(const struct sw_port *p)
{
	return p->count > p->stage_mask;
}
/* slots: a power of two. */
int sw_port_init(struct sw_port *p, struct sw_switch *sw, unsigned id, unsigned slots);
void sw_port_fini(struct sw_port *p);
static inline void sw_count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}
/* One line "port=N path=... rx_frames=... drop_runt=..." into buf. */
int sw_port_format(struct sw_port *p, char *buf, size_t len);

#endif
