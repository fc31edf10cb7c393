/* SPDX-License-Identifier: MIT */
/*
 * Learned MAC addresses: which port a source address was last seen on, forgotten after an aging
 * time without traffic. Lookups run on every forwarded frame from any worker, lock-free: an entry
 * is one 64-bit word (valid bit, port, address), so a reader sees an entry whole or not at all.
 * Changes (learning a new or moved address, aging, flushing a port) are serialised by a mutex.
 * A reader racing a removal may miss an entry: the frame is then flooded, which is always safe.
 */
#ifndef VQS_SWITCH_MAC_TABLE_H
#define VQS_SWITCH_MAC_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define SW_MAC_SLOTS 4096u /* power of two; at most 3/4 of it is filled */

struct sw_mac_table {
	pthread_mutex_t lock;
	unsigned used;                        /* under lock */
	_Atomic uint64_t entry[SW_MAC_SLOTS]; /* 0 = empty */
	_Atomic uint64_t seen_ns[SW_MAC_SLOTS];
	_Atomic uint64_t full_misses;         /* addresses not learned: table full */
};

void sw_mac_init(struct sw_mac_table *t);
void sw_mac_fini(struct sw_mac_table *t);
/* Record that `mac` (6 bytes, unicast) was seen on `port` at `now`. Threads: any. */
void sw_mac_learn(struct sw_mac_table *t, const uint8_t *mac, unsigned port, uint64_t now);
/* Port `mac` was learned on, or -1. Threads: any. */
int sw_mac_lookup(struct sw_mac_table *t, const uint8_t *mac);
/* Forget entries not seen since `older_than` (ns, vqs_now_ns clock). Returns how many. */
unsigned sw_mac_age(struct sw_mac_table *t, uint64_t older_than);
/* Forget every entry on `port` (its frontend went away). Returns how many. */
unsigned sw_mac_flush_port(struct sw_mac_table *t, unsigned port);
unsigned sw_mac_count(struct sw_mac_table *t);

#endif
