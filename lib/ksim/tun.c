/* SPDX-License-Identifier: MIT */
#include "ksim/tun.h"

#include <errno.h>
#include <stdlib.h>
#include "ksim/wait.h"

int ksim_tun_init(struct ksim_tun *t, unsigned size, uint32_t lock_ns)
{
	t->slots = calloc(size, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->size = size;
	t->prod = t->cons = 0;
	t->lock_ns = lock_ns;
	atomic_init(&t->armed, 0);
	atomic_init(&t->notify, NULL);
	pthread_mutex_init(&t->prod_lock, NULL);
	pthread_mutex_init(&t->cons_lock, NULL);
	return 0;
}

void ksim_tun_fini(struct ksim_tun *t)
{
	if (!t->slots)
		return;
	for (unsigned i = 0; i < t->size; i++)
		ksim_skb_free(atomic_load_explicit(&t->slots[i], memory_order_relaxed));
	free(t->slots);
	t->slots = NULL;
	pthread_mutex_destroy(&t->prod_lock);
	pthread_mutex_destroy(&t->cons_lock);
}

void ksim_tun_set_notify(struct ksim_tun *t, const struct ksim_tun_notify *n)
{
	/* release: pairs with ksim_tun_produce's acquire load; the callback's fields are set. */
	atomic_store_explicit(&t->notify, n, memory_order_release);
}

int ksim_tun_produce(struct ksim_tun *t, struct ksim_skb *skb)
{
	pthread_mutex_lock(&t->prod_lock);
	/* acquire: pairs with the consumer's release store of NULL; the slot is really free. */
	if (atomic_load_explicit(&t->slots[t->prod], memory_order_acquire)) {
		pthread_mutex_unlock(&t->prod_lock);
		return -ENOSPC;
	}
	/* release: pairs with the consumer's acquire load; the packet's bytes are visible. */
	atomic_store_explicit(&t->slots[t->prod], skb, memory_order_release);
	t->prod = (t->prod + 1) % t->size;
	pthread_mutex_unlock(&t->prod_lock);
	/* seq_cst fence then load of armed: pairs with ksim_tun_arm's seq_cst store and the
	 * consumer's re-check, so either it sees this packet or this sees it armed. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&t->armed, memory_order_relaxed) &&
	    atomic_exchange(&t->armed, 0)) {
		const struct ksim_tun_notify *n =
			atomic_load_explicit(&t->notify, memory_order_acquire);
		if (n)
			n->fn(n->opaque);
	}
	return 0;
}

unsigned ksim_tun_consume(struct ksim_tun *t, struct ksim_skb **out, unsigned max)
{
	pthread_mutex_lock(&t->cons_lock);
	ksim_burn_ns(t->lock_ns);
	unsigned n = 0;
	while (n < max) {
		/* acquire: pairs with the producer's release store. */
		struct ksim_skb *skb =
			atomic_load_explicit(&t->slots[t->cons], memory_order_acquire);
		if (!skb)
			break;
		/* release: pairs with the producer's acquire check of the slot. */
		atomic_store_explicit(&t->slots[t->cons], NULL, memory_order_release);
		t->cons = (t->cons + 1) % t->size;
		out[n++] = skb;
	}
	pthread_mutex_unlock(&t->cons_lock);
	return n;
}

bool ksim_tun_empty(struct ksim_tun *t)
{
	pthread_mutex_lock(&t->cons_lock);
	/* seq_cst: the re-check after ksim_tun_arm (pairs with the producer's fence). */
	bool empty = !atomic_load(&t->slots[t->cons]);
	pthread_mutex_unlock(&t->cons_lock);
	return empty;
}

void ksim_tun_arm(struct ksim_tun *t)
{
	atomic_store(&t->armed, 1); /* seq_cst: pairs with the fence in ksim_tun_produce */
}

struct ksim_skb *ksim_skb_alloc(uint32_t len)
{
	struct ksim_skb *skb = malloc(sizeof(*skb) + len);
	if (skb)
		skb->len = len;
	return skb;
}

void ksim_skb_free(struct ksim_skb *skb) { free(skb); }
