/* SPDX-License-Identifier: MIT */
/* Open addressing with linear probing; removal shifts later entries back so no tombstones build
 * up and every probe stops at the first empty slot. */
#include <string.h>

#include "mac_table.h"

#define VALID (1ull << 63)
#define PORT_SHIFT 48
#define MAC_MASK ((1ull << 48) - 1)
#define MASK (SW_MAC_SLOTS - 1)

static uint64_t mac_key(const uint8_t *mac)
{
	uint64_t k = 0;
	for (int i = 0; i < 6; i++)
		k = k << 8 | mac[i];
	return k;
}

static unsigned home(uint64_t key)
{
	return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 52) & MASK;
}

static uint64_t load(struct sw_mac_table *t, unsigned i)
{
	/* acquire pairs with the release stores below: a reader that sees an entry sees it whole. */
	return atomic_load_explicit(&t->entry[i], memory_order_acquire);
}

static void store(struct sw_mac_table *t, unsigned i, uint64_t e)
{
	atomic_store_explicit(&t->entry[i], e, memory_order_release); /* pairs with load() */
}

void sw_mac_init(struct sw_mac_table *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
}

void sw_mac_fini(struct sw_mac_table *t)
{
	pthread_mutex_destroy(&t->lock);
}

/* Slot holding key, or the empty slot where its probe ends. */
static unsigned find(struct sw_mac_table *t, uint64_t key, uint64_t *entry)
{
	unsigned i = home(key);
	for (unsigned n = 0; n < SW_MAC_SLOTS; n++, i = (i + 1) & MASK) {
		uint64_t e = load(t, i);
		if (!e || (e & MAC_MASK) == key) {
			*entry = e;
			return i;
		}
	}
	*entry = 0;
	return SW_MAC_SLOTS; /* never: the table is kept at most 3/4 full */
}

int sw_mac_lookup(struct sw_mac_table *t, const uint8_t *mac)
{
	uint64_t e;
	find(t, mac_key(mac), &e);
	return e ? (int)((e >> PORT_SHIFT) & 0xff) : -1;
}

void sw_mac_learn(struct sw_mac_table *t, const uint8_t *mac, unsigned port, uint64_t now)
{
	uint64_t key = mac_key(mac), want = VALID | (uint64_t)port << PORT_SHIFT | key, e;
	unsigned i = find(t, key, &e);
	if (e == want) {
		/* The common case, lock-free: refresh the age at most every few ms, so a busy
		 * address does not bounce the cache line between workers on every frame. */
		uint64_t seen = atomic_load_explicit(&t->seen_ns[i], memory_order_relaxed);
		if (now - seen > 10000000ull)
			atomic_store_explicit(&t->seen_ns[i], now, memory_order_relaxed);
		return;
	}
	pthread_mutex_lock(&t->lock);
	i = find(t, key, &e);
	if (!e && t->used >= SW_MAC_SLOTS / 4 * 3) {
		atomic_fetch_add_explicit(&t->full_misses, 1, memory_order_relaxed);
	} else if (i < SW_MAC_SLOTS) {
		if (!e)
			t->used++;
		atomic_store_explicit(&t->seen_ns[i], now, memory_order_relaxed);
		store(t, i, want);
	}
	pthread_mutex_unlock(&t->lock);
}

/* Empty slot i and move back the entries after it whose probe would otherwise cross the gap. */
static void remove_at(struct sw_mac_table *t, unsigned i)
{
	unsigned gap = i;
	for (unsigned j = (i + 1) & MASK;; j = (j + 1) & MASK) {
		uint64_t e = load(t, j);
		if (!e)
			break;
		unsigned h = home(e & MAC_MASK);
		/* Entry j may fill the gap when its home is not cyclically within (gap, j]. */
		if (((j - h) & MASK) >= ((j - gap) & MASK)) {
			atomic_store_explicit(&t->seen_ns[gap],
					      atomic_load_explicit(&t->seen_ns[j], memory_order_relaxed),
					      memory_order_relaxed);
			store(t, gap, e);
			gap = j;
		}
	}
	store(t, gap, 0);
	t->used--;
}

/* Remove every entry for which drop() says so; a removal may pull a later entry into the slot
 * just checked, so that slot is checked again. */
static unsigned remove_if(struct sw_mac_table *t, bool (*drop)(uint64_t e, uint64_t seen, uint64_t arg),
			  uint64_t arg)
{
	unsigned removed = 0;
	pthread_mutex_lock(&t->lock);
	for (unsigned i = 0; i < SW_MAC_SLOTS;) {
		uint64_t e = load(t, i);
		if (e && drop(e, atomic_load_explicit(&t->seen_ns[i], memory_order_relaxed), arg)) {
			remove_at(t, i);
			removed++;
			continue;
		}
		i++;
	}
	pthread_mutex_unlock(&t->lock);
	return removed;
}

static bool too_old(uint64_t e, uint64_t seen, uint64_t older_than)
{
	return seen < older_than;
}

static bool on_port(uint64_t e, uint64_t seen, uint64_t port)
{
	return ((e >> PORT_SHIFT) & 0xff) == port;
}

unsigned sw_mac_age(struct sw_mac_table *t, uint64_t older_than)
{
	return remove_if(t, too_old, older_than);
}

unsigned sw_mac_flush_port(struct sw_mac_table *t, unsigned port)
{
	return remove_if(t, on_port, port);
}

unsigned sw_mac_count(struct sw_mac_table *t)
{
	pthread_mutex_lock(&t->lock);
	unsigned n = t->used;
	pthread_mutex_unlock(&t->lock);
	return n;
}
