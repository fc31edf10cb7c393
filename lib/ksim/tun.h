/* SPDX-License-Identifier: MIT */
/*
 * A tun-like producer ring (ptr_ring under tun's tx_array): producers and the consumer take
 * separate locks, a slot is empty when NULL, and the consumer can take a batch in one lock round,
 * which is what batching saves (ring_lock_ns is charged once per round).
 *
 * Readiness: a consumer that found the ring empty arms it (ksim_tun_arm, then re-checks); the
 * next produce calls notify once, as tun's sk_data_ready wakes the vhost poll.
 */
#ifndef VQS_KSIM_TUN_H
#define VQS_KSIM_TUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <vqsched/ksim.h>

/* A packet in flight on the host: what tun carries (no virtio-net header). */
struct ksim_skb {
	uint32_t len;
	uint8_t data[];
};
/* What a packet's payload starts with. */
enum ksim_pkt_kind { KSIM_PKT_DATA = 1, KSIM_PKT_REQ = 2, KSIM_PKT_RESP = 3 };
struct ksim_pkt_tag {
	uint16_t flow;
	uint16_t kind;
	uint32_t seq;
};

/* A consumer's readiness callback (its owner keeps it alive while set). */
struct ksim_tun_notify {
	void (*fn)(void *opaque);
	void *opaque;
};

struct ksim_tun {
	unsigned size;
	struct ksim_skb *_Atomic *slots;
	pthread_mutex_t prod_lock;
	pthread_mutex_t cons_lock;
	unsigned prod, cons; /* under their locks */
	uint32_t lock_ns;    /* modelled cost of one consumer lock round */
	atomic_int armed;
	_Atomic(const struct ksim_tun_notify *) notify;
};

int ksim_tun_init(struct ksim_tun *t, unsigned size, uint32_t lock_ns);
/* Frees packets still queued. */
void ksim_tun_fini(struct ksim_tun *t);
/* Set the readiness callback (NULL: none). Threads: any, also while packets flow (a world
 * whose consumer is switched between two backends); a produce calls the one it loads. */
void ksim_tun_set_notify(struct ksim_tun *t, const struct ksim_tun_notify *n);
/* 0, or -ENOSPC when full (the caller drops). Threads: any producer. */
int ksim_tun_produce(struct ksim_tun *t, struct ksim_skb *skb);
/* Take up to max packets in one lock round. Threads: any consumer. */
unsigned ksim_tun_consume(struct ksim_tun *t, struct ksim_skb **out, unsigned max);
bool ksim_tun_empty(struct ksim_tun *t);
/* Ask for a notify on the next produce; the caller re-checks ksim_tun_empty afterwards. */
void ksim_tun_arm(struct ksim_tun *t);

struct ksim_skb *ksim_skb_alloc(uint32_t len);
void ksim_skb_free(struct ksim_skb *skb);

#endif
