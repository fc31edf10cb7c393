/* SPDX-License-Identifier: MIT */
/*
 * VIRTIO_F_IN_ORDER on the device side of the split ring with vqs_vq_config.in_order_fold
 * (virtio 1.2 2.7.9): a run of chains the device wrote whole is answered by one used entry, at
 * the run's first position, naming its last chain; a chain written in part ends a run (its len
 * must be in the ring). Through the session API, with the library's driver ring reading the
 * answers, and the used ring checked for the entries that were left alone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"

#define NUM 16u
#define IN 32u
#define F_BASE (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define F_IN_ORDER (F_BASE | VQS_BIT(VQS_F_IN_ORDER))
#define POISON 0xa5a5a5a5u

struct rig {
	struct vqs_pair p;
	struct vqs_vring_used *used;
	uint64_t out, in;
	int tokens[NUM];
	struct vqs_elem elems[NUM];
	struct iovec iov[NUM][2];
	struct vqs_elem *pop[NUM];
	const struct vqs_elem *fill[NUM];
};

static void rig_init(struct rig *r, uint64_t features, bool fold)
{
	assert_int_equal(vqs_pair_init(&r->p, NUM, features, 0x200000, 1 << 20), 0);
	struct vqs_vq_config cfg;
	assert_int_equal(vqs_vq_get_config(r->p.dev, &cfg), 0);
	cfg.in_order_fold = fold;
	assert_int_equal(vqs_vq_configure(r->p.dev, &cfg), 0);
	uint64_t desc, avail, used;
	vqs_drv_vq_addrs(r->p.drv, &desc, &avail, &used);
	r->used = vqs_gmem_host(r->p.gmem, used, vqs_vring_used_size(NUM));
	assert_non_null(r->used);
	r->out = vqs_gmem_alloc(r->p.gmem, 16, 8);
	r->in = vqs_gmem_alloc(r->p.gmem, IN, 8);
	for (unsigned i = 0; i < NUM; i++) {
		r->pop[i] = &r->elems[i];
		r->fill[i] = &r->elems[i];
	}
}

/* The driver offers n chains (16 readable bytes, IN writable ones); the device pops them in one
 * session, with the used entries it may write poisoned first. */
static void offer_and_pop(struct rig *r, unsigned n, struct vqs_vq_session *ss)
{
	struct vqs_drv_buf bufs[2] = {{r->out, 16}, {r->in, IN}};
	for (unsigned i = 0; i < n; i++)
		assert_int_equal(vqs_drv_add(r->p.drv, bufs, 1, 1, &r->tokens[i], false), 0);
	vqs_drv_kick_prepare(r->p.drv);
	for (unsigned i = 0; i < NUM; i++) {
		r->elems[i] = (struct vqs_elem){.iov = r->iov[i], .iov_cap = 2};
		r->used->ring[i] = (struct vqs_vring_used_elem){POISON, POISON};
	}
	assert_int_equal(vqs_vq_session_begin(r->p.dev, ss), (int)n);
	assert_int_equal(vqs_vq_session_pop(
			 ss, &(struct vqs_pop_to){.base = r->elems, .stride = sizeof(r->elems[0])}, n), (int)n);
}

/* The driver gets chains 0..n-1 back in order with these lengths. */
static void driver_gets(struct rig *r, const uint32_t *len, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		uint32_t got = 0;
		assert_ptr_equal(vqs_drv_get_used(r->p.drv, &got), &r->tokens[i]);
		assert_int_equal(got, len[i]);
	}
	uint32_t got;
	assert_null(vqs_drv_get_used(r->p.drv, &got));
}

/* The used entry at ring position pos: the id of elems[k] and len, or poisoned (k < 0). */
static void entry_is(const struct rig *r, unsigned pos, int k, uint32_t len)
{
	const struct vqs_vring_used_elem *u = &r->used->ring[pos % NUM];
	assert_int_equal(u->id, k < 0 ? POISON : r->elems[k].id);
	assert_int_equal(u->len, k < 0 ? POISON : len);
}

/* Runs of whole chains, each ended by a partly written one or by the batch: one entry each, at
 * the run's first position; the used lines between are not written. Rounds go round the ring,
 * so the runs start at every position and wrap. */
static void test_in_order_run_of_whole_chains_is_one_used_entry(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, F_IN_ORDER, true);
	const uint32_t written[7] = {IN, IN, IN, 10, IN, IN, IN};
	for (unsigned round = 0, pos = 0; round < 9; round++, pos += 7) {
		struct vqs_vq_session ss;
		bool call;
		offer_and_pop(&r, 7, &ss);
		assert_int_equal(vqs_vq_session_fill(&ss, r.fill, written, 7), 7);
		assert_int_equal(vqs_vq_session_end(&ss, &call), 7);
		entry_is(&r, pos, 3, 10); /* chains 0-3, the last written in part */
		for (unsigned i = 1; i < 4; i++)
			entry_is(&r, pos + i, -1, 0);
		entry_is(&r, pos + 4, 6, IN); /* chains 4-6, ended by the batch */
		entry_is(&r, pos + 5, -1, 0);
		entry_is(&r, pos + 6, -1, 0);
		assert_int_equal(r.used->idx, (uint16_t)(pos + 7));
		driver_gets(&r, written, 7);
	}
	vqs_pair_fini(&r.p);
}

/* A refused chain ends the fill: the run before it is answered by the last chain accepted, and
 * the next fill starts a run of its own at the next position. A partly written chain is never
 * folded: a run of one partly written chain is its own entry. */
static void test_in_order_refused_chain_closes_the_run(void **state)
{
	(void)state;
	struct rig r;
	rig_init(&r, F_IN_ORDER, true);
	struct vqs_vq_session ss;
	bool call;
	offer_and_pop(&r, 5, &ss);
	const uint32_t first[3] = {IN, IN, IN + 1};
	assert_int_equal(vqs_vq_session_fill(&ss, r.fill, first, 3), 2);
	entry_is(&r, 0, 1, IN);
	entry_is(&r, 1, -1, 0);
	const uint32_t rest[3] = {7, IN, 0};
	assert_int_equal(vqs_vq_session_fill(&ss, r.fill + 2, rest, 3), 3);
	assert_int_equal(vqs_vq_session_end(&ss, &call), 5);
	entry_is(&r, 2, 2, 7);
	entry_is(&r, 3, 4, 0);
	entry_is(&r, 4, -1, 0);
	const uint32_t len[5] = {IN, IN, 7, IN, 0};
	driver_gets(&r, len, 5);
	vqs_pair_fini(&r.p);
}

/* Without IN_ORDER (the driver may take them in any order), or without the queue's consent
 * (its driver may read every entry), every chain has its entry. */
static void every_chain_has_its_entry(uint64_t features, bool fold)
{
	struct rig r;
	rig_init(&r, features, fold);
	struct vqs_vq_session ss;
	bool call;
	offer_and_pop(&r, 4, &ss);
	const uint32_t written[4] = {IN, IN, IN, IN};
	assert_int_equal(vqs_vq_session_fill(&ss, r.fill, written, 4), 4);
	assert_int_equal(vqs_vq_session_end(&ss, &call), 4);
	for (unsigned i = 0; i < 4; i++)
		entry_is(&r, i, (int)i, IN);
	driver_gets(&r, written, 4);
	vqs_pair_fini(&r.p);
}

static void test_without_in_order_or_fold_every_chain_has_its_entry(void **state)
{
	(void)state;
	every_chain_has_its_entry(F_BASE, true);
	every_chain_has_its_entry(F_IN_ORDER, false);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order_run_of_whole_chains_is_one_used_entry),
		cmocka_unit_test(test_in_order_refused_chain_closes_the_run),
		cmocka_unit_test(test_without_in_order_or_fold_every_chain_has_its_entry),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
