/* SPDX-License-Identifier: MIT */
/*
 * An intrusive multi-producer list: producers push with one CAS (lock-free, never blocks on
 * another thread), the consumer takes everything at once with one exchange and gets it back in
 * push order. Used for a group's incoming ready queues and a queue's remote completions.
 * Pushing and taking only (no single pop), so there is no ABA hazard.
 */
#ifndef VQS_SCHED_LFLIST_H
#define VQS_SCHED_LFLIST_H

#include <stdatomic.h>
#include <stddef.h>

struct lf_node {
	struct lf_node *next;
};

struct lf_list {
	_Atomic(struct lf_node *) head;
};

/* Push a chain linked newest to oldest through next, as if its nodes were pushed one by one
 * from oldest to newest, with one CAS. True when the list was empty before. Threads: any. */
static inline bool lf_push_chain(struct lf_list *l, struct lf_node *newest, struct lf_node *oldest)
{
	struct lf_node *old = atomic_load_explicit(&l->head, memory_order_relaxed);
	do
		oldest->next = old;
	/* release: the chain and whatever the pusher wrote before are visible to the taker (pairs
	 * with the acquire exchange in lf_take_all). */
	while (!atomic_compare_exchange_weak_explicit(&l->head, &old, newest, memory_order_release,
						      memory_order_relaxed));
	return old == NULL;
}

/* Push n. True when the list was empty before. Threads: any. */
static inline bool lf_push(struct lf_list *l, struct lf_node *n)
{
	return lf_push_chain(l, n, n);
}

/* Take every node, oldest first (NULL when empty). Threads: the list's consumer. */
static inline struct lf_node *lf_take_all(struct lf_list *l)
{
	/* acquire pairs with the release CAS in lf_push. */
	struct lf_node *n = atomic_exchange_explicit(&l->head, NULL, memory_order_acquire);
	struct lf_node *fifo = NULL;
	while (n) {
		struct lf_node *next = n->next;
		n->next = fifo;
		fifo = n;
		n = next;
	}
	return fifo;
}

static inline bool lf_empty(struct lf_list *l)
{
	return atomic_load_explicit(&l->head, memory_order_relaxed) == NULL;
}

#endif
