/* SPDX-License-Identifier: MIT */
/*
 * Inflight tracking on packed rings (QEMU docs/interop/vhost-user.rst, "Inflight I/O tracking",
 * packed layout): a backend with chains in flight crashes, a new queue on the same ring and
 * region resubmits exactly the chains that never completed, in their pop order, and resumes the
 * ring after them. Torn completions are repaired both ways: published ones are not resubmitted,
 * unpublished ones are.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "packed_fixture.h"
#include "pair.h"

#define NUM 8
#define BASE 0x20000000ull
#define F_IND VQS_BIT(VQS_F_INDIRECT_DESC)

/* The documented layout, to play a crash at a chosen step (QueueRegionPacked). */
struct desc_state {
	uint8_t inflight, padding;
	uint16_t next, last, num;
	uint64_t counter;
	uint16_t id, flags;
	uint32_t len;
	uint64_t addr;
};
struct region {
	uint64_t features;
	uint16_t version, desc_num, free_head, old_free_head, used_idx, old_used_idx;
	uint8_t used_wrap_counter, old_used_wrap_counter, padding[7];
	struct desc_state desc[];
};

struct ctx {
	struct vqs_pair p;
	struct region *reg;
	size_t len;
	uint64_t bufs;
	int toks[32];
	unsigned back[32];
	struct vqs_elem e[16];
	struct iovec iov[16][4];
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));
	uint64_t f = PFX_PACKED | F_IND | VQS_BIT(VQS_F_VERSION_1);
	assert_int_equal(vqs_pair_init(&c->p, NUM, f, BASE, 1u << 20), 0);
	c->len = vqs_vq_inflight_size(NUM, true);
	assert_true(c->len >= sizeof(struct region) + NUM * sizeof(struct desc_state));
	c->reg = aligned_alloc(64, c->len);
	memset(c->reg, 0, c->len);
	assert_int_equal(vqs_vq_set_inflight(c->p.dev, c->reg, c->len, false), 0);
	c->bufs = vqs_gmem_alloc(c->p.gmem, 4096, 64);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	vqs_pair_fini(&c->p);
	free(c->reg);
	free(c);
	return 0;
}

/* Driver: add chain k (shape by k: 1 or 2 descriptors, or indirect) and publish it. */
static void add(struct ctx *c, unsigned k)
{
	struct vqs_drv_buf b[2] = {{c->bufs + 64u * k, 16}, {c->bufs + 64u * k + 32, 16}};
	unsigned shape = k % 3;
	assert_int_equal(vqs_drv_add(c->p.drv, b, 1, shape == 0 ? 0 : 1,
				     &c->toks[k], shape == 2),
			 0);
	vqs_drv_kick_prepare(c->p.drv);
}

static struct vqs_elem *pop(struct ctx *c, unsigned i)
{
	struct vqs_elem *e = &c->e[i];
	assert_int_equal(pfx_pop(c->p.dev, e, c->iov[i], 4), 0);
	return e;
}

/* Driver: take every completion, count tokens. */
static void drain(struct ctx *c)
{
	uint32_t len;
	int *t;
	while ((t = vqs_drv_get_used(c->p.drv, &len)))
		c->back[t - c->toks]++;
}

/* The backend dies: its queue goes away with whatever it had popped, staged or flushed. */
static void crash_and_restart(struct ctx *c, int expect)
{
	struct vqs_vq_config cfg = {.size = sizeof(cfg), .num = NUM, .features = c->p.features,
				    .addr_space = VQS_ADDR_GPA, .mem = c->p.mem};
	vqs_drv_vq_addrs(c->p.drv, &cfg.desc_addr, &cfg.driver_addr, &cfg.device_addr);
	vqs_vq_destroy(c->p.dev);
	assert_int_equal(vqs_vq_create(&c->p.dev), 0);
	assert_int_equal(vqs_vq_configure(c->p.dev, &cfg), 0);
	assert_int_equal(vqs_vq_set_inflight(c->p.dev, c->reg, c->len, true), expect);
}

static void complete(struct ctx *c, struct vqs_elem *e)
{
	assert_int_equal(vqs_vq_fill(c->p.dev, e, 0), 0);
	assert_int_equal(vqs_vq_flush(c->p.dev), 1);
}

static void inflight_crash_resubmits_uncompleted_chains_exactly_once_in_order(void **state)
{
	struct ctx *c = *state;
	for (unsigned k = 0; k < 5; k++)
		add(c, k);
	uint16_t ids[5];
	for (unsigned k = 0; k < 5; k++)
		ids[k] = pop(c, k)->id;
	complete(c, &c->e[3]);
	complete(c, &c->e[1]);
	assert_int_equal(vqs_vq_fill(c->p.dev, &c->e[4], 0), 0); /* staged, never flushed */
	drain(c);
	crash_and_restart(c, 0);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 3);
	/* The driver goes on adding meanwhile. */
	add(c, 5);
	add(c, 6);
	const unsigned order[5] = {0, 2, 4, 5, 6};
	for (unsigned i = 0; i < 5; i++) {
		struct vqs_elem *e = pop(c, 8 + i);
		if (i < 3)
			assert_int_equal(e->id, ids[order[i]]);
		complete(c, e);
	}
	struct vqs_elem none;
	assert_int_equal(pfx_pop(c->p.dev, &none, c->iov[15], 4), -EAGAIN);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 0);
	drain(c);
	for (unsigned k = 0; k < 7; k++)
		assert_int_equal(c->back[k], 1);
	assert_false(vqs_vq_is_broken(c->p.dev));
	/* And once more: nothing left in flight, nothing resubmitted. */
	crash_and_restart(c, 0);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 0);
}

/* Crash after the used descriptors reached the ring but before the region committed the step:
 * the restore sees them published, commits, and does not resubmit (no duplicate). */
static void inflight_torn_completion_that_reached_the_ring_is_not_resubmitted(void **state)
{
	struct ctx *c = *state;
	add(c, 0);
	add(c, 1);
	pop(c, 0);
	pop(c, 1);
	struct region *before = malloc(c->len);
	memcpy(before, c->reg, c->len);
	complete(c, &c->e[0]);
	/* Undo the commit step only: old_* and the inflight marks as before the flush. */
	c->reg->old_free_head = before->old_free_head;
	c->reg->old_used_idx = before->old_used_idx;
	c->reg->old_used_wrap_counter = before->old_used_wrap_counter;
	for (unsigned i = 0; i < NUM; i++)
		c->reg->desc[i].inflight = before->desc[i].inflight;
	free(before);
	drain(c);
	crash_and_restart(c, 0);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 1);
	complete(c, pop(c, 2));
	drain(c);
	assert_int_equal(c->back[0], 1);
	assert_int_equal(c->back[1], 1);
}

/* Crash after the region recorded the completion but before the used descriptor was written:
 * the restore rolls back and resubmits it (not lost). */
static void inflight_torn_completion_not_on_the_ring_is_resubmitted(void **state)
{
	struct ctx *c = *state;
	add(c, 0);
	pop(c, 0);
	uint64_t d, drv, dev;
	vqs_drv_vq_addrs(c->p.drv, &d, &drv, &dev);
	struct vqs_vring_packed_desc *ring = vqs_gmem_host(c->p.gmem, d, 16 * NUM);
	uint16_t avail_flags = ring[0].flags;
	struct region *before = malloc(c->len);
	memcpy(before, c->reg, c->len);
	complete(c, &c->e[0]);
	/* Take the publication back (the crash came first), and the commit step after it. */
	ring[0].flags = avail_flags;
	c->reg->old_free_head = before->old_free_head;
	c->reg->old_used_idx = before->old_used_idx;
	c->reg->old_used_wrap_counter = before->old_used_wrap_counter;
	c->reg->desc[0].inflight = before->desc[0].inflight;
	free(before);
	crash_and_restart(c, 0);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 1);
	complete(c, pop(c, 1));
	drain(c);
	assert_int_equal(c->back[0], 1);
}

/* Crash with two completions staged and not flushed: fill has already stored the second used
 * descriptor's flags (only the batch's first waits for flush). The restored backend publishes
 * the resubmitted chains one at a time; the driver, reading on, must not take that stale
 * descriptor for a completion of a chain still in flight (it would reuse its id while the
 * backend runs it: seen as a broken ring, buffer-id, after a SIGKILL in blk_crash). */
static void inflight_crash_leaves_no_stale_used_descriptor_for_the_driver(void **state)
{
	struct ctx *c = *state;
	for (unsigned k = 0; k < 3; k++)
		add(c, k);
	for (unsigned k = 0; k < 3; k++)
		pop(c, k);
	assert_int_equal(vqs_vq_fill(c->p.dev, &c->e[0], 0), 0);
	assert_int_equal(vqs_vq_fill(c->p.dev, &c->e[1], 0), 0); /* its flags are on the ring */
	crash_and_restart(c, 0);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 3);
	drain(c);
	for (unsigned k = 0; k < 3; k++)
		assert_int_equal(c->back[k], 0);
	for (unsigned i = 0; i < 3; i++) {
		complete(c, pop(c, 3 + i));
		drain(c);
		for (unsigned k = 0; k < 3; k++)
			assert_int_equal(c->back[k], k <= i); /* chain i just now, none ahead of it */
	}
	assert_false(vqs_vq_is_broken(c->p.dev));
}

/* A resubmitted chain given back by unpop is resubmitted again, not lost and not doubled. */
static void inflight_resubmitted_chain_can_be_unpopped(void **state)
{
	struct ctx *c = *state;
	add(c, 0);
	add(c, 1);
	uint16_t id0 = pop(c, 0)->id;
	pop(c, 1);
	crash_and_restart(c, 0);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 2);
	struct vqs_elem *e = pop(c, 2);
	assert_int_equal(e->id, id0);
	assert_int_equal(vqs_vq_unpop(c->p.dev, e, 1), 0);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 2);
	for (unsigned i = 0; i < 2; i++)
		complete(c, pop(c, 3 + i));
	assert_int_equal(c->e[3].id, id0);
	drain(c);
	assert_int_equal(c->back[0], 1);
	assert_int_equal(c->back[1], 1);
}

/* Unpop of a ring chain gives its region entries back: a crash then resubmits nothing of it. */
static void inflight_unpopped_ring_chain_is_not_resubmitted(void **state)
{
	struct ctx *c = *state;
	add(c, 1);
	struct vqs_elem *e = pop(c, 0);
	assert_int_equal(vqs_vq_unpop(c->p.dev, e, 1), 0);
	crash_and_restart(c, 0);
	assert_int_equal(vqs_vq_inflight_pending(c->p.dev), 0);
	complete(c, pop(c, 1)); /* from the ring, once */
	drain(c);
	assert_int_equal(c->back[1], 1);
}

static void inflight_rejects_short_misaligned_or_foreign_region(void **state)
{
	struct ctx *c = *state;
	assert_int_equal(vqs_vq_set_inflight(c->p.dev, c->reg, c->len - 1, false), -EINVAL);
	assert_int_equal(vqs_vq_set_inflight(c->p.dev, (char *)c->reg + 4, c->len - 8, false),
			 -EINVAL);
	c->reg->desc_num = NUM * 2;
	crash_and_restart(c, -EINVAL);
	c->reg->desc_num = NUM;
	c->reg->version = 2;
	crash_and_restart(c, -EINVAL);
	c->reg->version = 1;
	c->reg->free_head = 0; /* a free list that loops: entry 0 -> 0 */
	c->reg->old_free_head = 0;
	c->reg->desc[0].next = 0;
	crash_and_restart(c, -EINVAL);
}

/* With EVENT_IDX, the driver asked for a call at a slot the previous backend's completions
 * passed before it crashed (maybe before its call): the restored device's first call decision
 * is unconditional, so the driver waiting for it is woken. */
static void inflight_restore_calls_the_driver_whatever_its_event(void **state)
{
	struct ctx *c = *state;
	c->p.features |= VQS_BIT(VQS_F_EVENT_IDX);
	crash_and_restart(c, 0);
	for (unsigned k = 0; k < 3; k++) {
		add(c, k);
		pop(c, k);
	}
	complete(c, &c->e[0]);
	crash_and_restart(c, 0);
	uint64_t desc, driver, device;
	vqs_drv_vq_addrs(c->p.drv, &desc, &driver, &device);
	uint32_t ev = (0u | 1u << VQS_VRING_PACKED_EVENT_F_WRAP_CTR) |
		      (uint32_t)VQS_RING_EVENT_FLAGS_DESC << 16;
	memcpy(vqs_gmem_host(c->p.gmem, driver, 4), &ev, 4);
	complete(c, pop(c, 8));
	assert_true(vqs_vq_need_call(c->p.dev));
	complete(c, pop(c, 9));
	assert_false(vqs_vq_need_call(c->p.dev));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(inflight_crash_resubmits_uncompleted_chains_exactly_once_in_order),
		T(inflight_torn_completion_that_reached_the_ring_is_not_resubmitted),
		T(inflight_torn_completion_not_on_the_ring_is_resubmitted),
		T(inflight_crash_leaves_no_stale_used_descriptor_for_the_driver),
		T(inflight_resubmitted_chain_can_be_unpopped),
		T(inflight_unpopped_ring_chain_is_not_resubmitted),
		T(inflight_rejects_short_misaligned_or_foreign_region),
		T(inflight_restore_calls_the_driver_whatever_its_event),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
