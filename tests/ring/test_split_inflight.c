/* SPDX-License-Identifier: MIT */
/*
 * Inflight I/O tracking for split queues (QEMU docs/interop/vhost-user.rst): a backend that dies
 * with chains in flight is replaced by a new queue on the same ring and region, which resubmits
 * exactly the missing chains, once each, in their original order.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "ring_fixture.h"

#define NUM 8

/* The region layout, as the vhost-user document gives it. */
struct infl_desc {
	uint8_t inflight;
	uint8_t padding[5];
	uint16_t next;
	uint64_t counter;
};
struct infl_region {
	uint64_t features;
	uint16_t version;
	uint16_t desc_num;
	uint16_t last_batch_head;
	uint16_t used_idx;
	struct infl_desc desc[];
};

struct ctx {
	struct tmem m;
	struct fx_ring r;
	struct infl_region *reg;
	size_t len;
};

static int setup(void **state)
{
	static struct ctx c;
	memset(&c, 0, sizeof(c));
	tmem_init(&c.m, FX_GPA_BASE, FX_ARENA);
	fx_ring_init(&c.r, &c.m, NUM, 0);
	c.len = vqs_vq_inflight_size(NUM, false);
	c.reg = aligned_alloc(64, c.len);
	assert_non_null(c.reg);
	memset(c.reg, 0, c.len);
	assert_int_equal(vqs_vq_set_inflight(c.r.vq, c.reg, c.len, false), 0);
	*state = &c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	fx_ring_fini(&c->r);
	tmem_fini(&c->m);
	free(c->reg);
	return 0;
}

static struct vqs_elem pop(struct vqs_vq *vq)
{
	static struct iovec iov[NUM][2];
	static unsigned n;
	struct vqs_elem e;
	assert_int_equal(fx_pop(vq, &e, iov[n++ % NUM], 2), 0);
	return e;
}

static void complete(struct vqs_vq *vq, const struct vqs_elem *e)
{
	assert_int_equal(vqs_vq_fill(vq, e, 0), 0);
	assert_int_equal(vqs_vq_flush(vq), 1);
}

/* The backend "crashes": its queue goes away without completing anything more; a new one is
 * configured on the same ring and restores from the same region. */
static struct vqs_vq *restart(struct ctx *c)
{
	vqs_vq_destroy(c->r.vq);
	struct vqs_vq_config cfg;
	fx_ring_config(&c->r, &cfg);
	assert_int_equal(vqs_vq_create(&c->r.vq), 0);
	assert_int_equal(vqs_vq_configure(c->r.vq, &cfg), 0);
	assert_int_equal(vqs_vq_set_inflight(c->r.vq, c->reg, c->len, true), 0);
	return c->r.vq;
}

/* How often each head appears in the used ring [0, used idx). */
static void used_counts(struct ctx *c, unsigned counts[NUM])
{
	memset(counts, 0, NUM * sizeof(counts[0]));
	uint16_t n = fx_used_idx(&c->r);
	assert_true(n <= NUM);
	for (unsigned i = 0; i < n; i++)
		counts[c->r.used->ring[i].id]++;
}

static void test_inflight_size_holds_the_documented_layout(void **state)
{
	(void)state;
	for (unsigned num = 1; num <= VQS_VQ_MAX_SIZE; num *= 2) {
		size_t s = vqs_vq_inflight_size(num, false);
		assert_true(s >= sizeof(struct infl_region) + num * sizeof(struct infl_desc));
		assert_int_equal(s % 64, 0);
	}
}

static void test_inflight_attach_initialises_region(void **state)
{
	struct ctx *c = *state;
	assert_int_equal(c->reg->version, 1);
	assert_int_equal(c->reg->desc_num, NUM);
	struct vqs_elem e;
	fx_simple_chain(&c->r, 6, 8, false);
	e = pop(c->r.vq);
	assert_int_equal(c->reg->desc[6].inflight, 1);
	complete(c->r.vq, &e);
	assert_int_equal(c->reg->desc[6].inflight, 0);
	assert_int_equal(c->reg->used_idx, 1);
}

static void test_inflight_crash_resubmits_missing_exactly_once(void **state)
{
	struct ctx *c = *state;
	const uint16_t heads[5] = {4, 0, 3, 2, 1};
	struct vqs_elem e[5];
	for (unsigned i = 0; i < 5; i++)
		fx_simple_chain(&c->r, heads[i], 8, false);
	for (unsigned i = 0; i < 5; i++)
		e[i] = pop(c->r.vq);
	complete(c->r.vq, &e[1]); /* head 0 */
	complete(c->r.vq, &e[3]); /* head 2 */

	struct vqs_vq *vq = restart(c);
	assert_int_equal(vqs_vq_inflight_pending(vq), 3);
	const uint16_t expect[3] = {4, 3, 1}; /* original pop order */
	struct vqs_elem again[3];
	for (unsigned i = 0; i < 3; i++) {
		again[i] = pop(vq);
		assert_int_equal(again[i].id, expect[i]);
		assert_int_equal(again[i].out_len, 8);
	}
	assert_int_equal(vqs_vq_inflight_pending(vq), 0);
	struct iovec iov[1];
	struct vqs_elem x;
	assert_int_equal(fx_pop(vq, &x, iov, 1), -EAGAIN); /* nothing popped twice */
	fx_simple_chain(&c->r, 5, 8, false);
	struct vqs_elem fresh = pop(vq);
	assert_int_equal(fresh.id, 5);
	for (unsigned i = 0; i < 3; i++)
		complete(vq, &again[i]);
	complete(vq, &fresh);

	unsigned counts[NUM];
	used_counts(c, counts);
	for (unsigned h = 0; h < 6; h++)
		assert_int_equal(counts[h], 1);
}

/* Crash after the used idx store, before the region recorded it: the last batch is still marked
 * in flight. The restore must see the driver already got it and not resubmit it. */
static void test_inflight_torn_completion_is_repaired(void **state)
{
	struct ctx *c = *state;
	struct vqs_elem e[3];
	for (unsigned i = 0; i < 3; i++) {
		fx_simple_chain(&c->r, i, 8, false);
		e[i] = pop(c->r.vq);
	}
	assert_int_equal(vqs_vq_fill(c->r.vq, &e[0], 0), 0);
	assert_int_equal(vqs_vq_fill(c->r.vq, &e[2], 0), 0);
	assert_int_equal(vqs_vq_flush(c->r.vq), 2);
	/* Undo what happened after the used idx store. */
	c->reg->desc[0].inflight = 1;
	c->reg->desc[2].inflight = 1;
	c->reg->used_idx = 0;

	struct vqs_vq *vq = restart(c);
	assert_int_equal(vqs_vq_inflight_pending(vq), 1);
	assert_int_equal(c->reg->used_idx, 2);
	assert_int_equal(c->reg->desc[0].inflight, 0);
	struct vqs_vq_state st;
	vqs_vq_get_state(vq, &st);
	assert_int_equal(st.used_idx, 2);
	assert_int_equal(st.last_avail_idx, 3);
	struct vqs_elem r = pop(vq);
	assert_int_equal(r.id, 1);
	complete(vq, &r);
	unsigned counts[NUM];
	used_counts(c, counts);
	for (unsigned h = 0; h < 3; h++)
		assert_int_equal(counts[h], 1);
}

/* A chain given back is no longer in flight: after a crash it comes from the avail ring, once. */
static void test_inflight_unpop_clears_the_mark(void **state)
{
	struct ctx *c = *state;
	struct vqs_elem e[2];
	for (unsigned i = 0; i < 2; i++) {
		fx_simple_chain(&c->r, i, 8, false);
		e[i] = pop(c->r.vq);
	}
	assert_int_equal(vqs_vq_unpop(c->r.vq, &e[1], 1), 0);
	assert_int_equal(c->reg->desc[1].inflight, 0);
	struct vqs_vq *vq = restart(c);
	assert_int_equal(vqs_vq_inflight_pending(vq), 1);
	assert_int_equal(pop(vq).id, 0);
	assert_int_equal(pop(vq).id, 1);
	struct iovec iov[1];
	struct vqs_elem x;
	assert_int_equal(fx_pop(vq, &x, iov, 1), -EAGAIN);
}

/* Resubmitted chains can be given back too, and come again in the same order. */
static void test_inflight_resubmitted_chains_can_be_unpopped(void **state)
{
	struct ctx *c = *state;
	for (unsigned i = 0; i < 2; i++) {
		fx_simple_chain(&c->r, 7 - i, 8, false);
		pop(c->r.vq);
	}
	struct vqs_vq *vq = restart(c);
	struct vqs_elem e[2] = {pop(vq), pop(vq)};
	assert_int_equal(vqs_vq_unpop(vq, e, 2), 0);
	assert_int_equal(vqs_vq_inflight_pending(vq), 2);
	assert_int_equal(pop(vq).id, 7);
	assert_int_equal(pop(vq).id, 6);
}

/* A region nobody initialised (version 0) restores nothing and is initialised. */
static void test_inflight_restore_of_fresh_region_is_empty(void **state)
{
	struct ctx *c = *state;
	memset(c->reg, 0, c->len);
	struct vqs_vq *vq = restart(c);
	assert_int_equal(vqs_vq_inflight_pending(vq), 0);
	assert_int_equal(c->reg->version, 1);
}

/* The region is the peer's memory: sizes, versions and recorded indices are checked. */
static void test_inflight_rejects_malformed_region(void **state)
{
	struct ctx *c = *state;
	struct vqs_vq *vq = c->r.vq;
	size_t need = sizeof(struct infl_region) + NUM * sizeof(struct infl_desc);
	assert_int_equal(vqs_vq_set_inflight(vq, c->reg, need - 1, false), -EINVAL);
	assert_int_equal(vqs_vq_set_inflight(vq, (char *)c->reg + 1, need, false), -EINVAL);
	c->reg->version = 2;
	assert_int_equal(vqs_vq_set_inflight(vq, c->reg, c->len, true), -EINVAL);
	c->reg->version = 1;
	c->reg->desc_num = NUM * 2;
	assert_int_equal(vqs_vq_set_inflight(vq, c->reg, c->len, true), -EINVAL);
	c->reg->desc_num = NUM;
	/* A torn batch larger than the queue, or linking outside it. */
	c->reg->used_idx = (uint16_t)(0 - NUM - 1);
	assert_int_equal(vqs_vq_set_inflight(vq, c->reg, c->len, true), -EINVAL);
	c->reg->used_idx = 65535;
	c->reg->last_batch_head = NUM;
	assert_int_equal(vqs_vq_set_inflight(vq, c->reg, c->len, true), -EINVAL);
	c->reg->used_idx = 0;
	c->reg->last_batch_head = 0;
	assert_int_equal(vqs_vq_set_inflight(vq, c->reg, c->len, true), 0);
	assert_false(vqs_vq_is_broken(vq));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_inflight_size_holds_the_documented_layout),
		T(test_inflight_attach_initialises_region),
		T(test_inflight_crash_resubmits_missing_exactly_once),
		T(test_inflight_torn_completion_is_repaired),
		T(test_inflight_unpop_clears_the_mark),
		T(test_inflight_resubmitted_chains_can_be_unpopped),
		T(test_inflight_restore_of_fresh_region_is_empty),
		T(test_inflight_rejects_malformed_region),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
