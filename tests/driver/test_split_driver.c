/* SPDX-License-Identifier: MIT */
/*
 * Driver-side split ring (virtio 1.x 2.7): the driver's MUST clauses, each a named case, checked
 * by reading the ring memory directly and by playing the device by hand on the wire format.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#include "pair.h"
#include "scale.h"

#define BASE 0x100000ull
#define ARENA (4u << 20)

/* One driver queue plus a hand-played device looking at its ring memory. */
struct fx {
	struct vqs_gmem *g;
	struct vqs_drv_vq *dq;
	unsigned num;
	struct vqs_vring_desc *desc;
	struct vqs_vring_avail *avail;
	struct vqs_vring_used *used;
	uint16_t last_avail; /* device: next avail entry to read */
	uint16_t used_idx;   /* device: next used entry to write */
};

static _Atomic uint16_t *a16(uint16_t *p) { return (_Atomic uint16_t *)(void *)p; }

static int fx_init(struct fx *f, unsigned num, uint64_t features, size_t arena)
{
	memset(f, 0, sizeof(*f));
	f->num = num;
	int rc = vqs_gmem_create(&f->g, BASE, arena);
	if (rc)
		return rc;
	struct vqs_drv_vq_config c = {.size = sizeof(c), .num = num, .features = features,
				      .gmem = f->g};
	if ((rc = vqs_drv_vq_create(&f->dq, &c))) {
		vqs_gmem_destroy(f->g);
		return rc;
	}
	uint64_t d, a, u;
	vqs_drv_vq_addrs(f->dq, &d, &a, &u);
	f->desc = vqs_gmem_host(f->g, d, vqs_vring_desc_size(num));
	f->avail = vqs_gmem_host(f->g, a, vqs_vring_avail_size(num));
	f->used = vqs_gmem_host(f->g, u, vqs_vring_used_size(num));
	return 0;
}

static void fx_fini(struct fx *f)
{
	vqs_drv_vq_destroy(f->dq);
	vqs_gmem_destroy(f->g);
}

static void setup(struct fx *f, unsigned num, uint64_t features)
{
	assert_int_equal(fx_init(f, num, features, ARENA), 0);
}

static uint16_t avail_idx(struct fx *f)
{
	return atomic_load_explicit(a16(&f->avail->idx), memory_order_acquire);
}

static uint16_t *used_event(struct fx *f) { return &f->avail->ring[f->num]; }
static uint16_t *avail_event(struct fx *f) { return (uint16_t *)(void *)&f->used->ring[f->num]; }

/* Device: the next published head, or -1. */
static int dev_pop(struct fx *f)
{
	if (avail_idx(f) == f->last_avail)
		return -1;
	return f->avail->ring[f->last_avail++ % f->num];
}

/* Device: publish one used entry. */
static void dev_use(struct fx *f, uint32_t id, uint32_t len)
{
	f->used->ring[f->used_idx % f->num] = (struct vqs_vring_used_elem){.id = id, .len = len};
	f->used_idx++;
	atomic_store_explicit(a16(&f->used->idx), f->used_idx, memory_order_release);
}

static struct vqs_drv_buf buf(uint64_t gpa, uint32_t len)
{
	return (struct vqs_drv_buf){.gpa = gpa, .len = len};
}

/* Add a one-buffer writable chain, publish it, return its head as the device sees it. */
static int add_one(struct fx *f, void *token)
{
	struct vqs_drv_buf b = buf(BASE + 0x200000, 64);
	int rc = vqs_drv_add(f->dq, &b, 0, 1, token, false);
	if (rc)
		return rc;
	vqs_drv_kick_prepare(f->dq);
	return dev_pop(f);
}

static int log_count;
static void count_log(enum vqs_log_level level, const char *msg, void *opaque)
{
	(void)level;
	(void)msg;
	(void)opaque;
	log_count++;
}

static int tok[4096];

/* ---- configuration and layout ---- */

static void test_create_rejects_bad_config(void **state)
{
	(void)state;
	struct vqs_gmem *g;
	struct vqs_drv_vq *dq;
	assert_int_equal(vqs_gmem_create(&g, BASE, ARENA), 0);
	struct vqs_drv_vq_config c = {.size = sizeof(c), .num = 6, .gmem = g};
	assert_int_equal(vqs_drv_vq_create(&dq, &c), -EINVAL); /* split: power of two */
	c.num = 0;
	assert_int_equal(vqs_drv_vq_create(&dq, &c), -EINVAL);
	c.num = VQS_VQ_MAX_SIZE * 2;
	assert_int_equal(vqs_drv_vq_create(&dq, &c), -EINVAL);
	c.num = 8;
	c.size = 4;
	assert_int_equal(vqs_drv_vq_create(&dq, &c), -EINVAL);
	c.size = sizeof(c);
	c.gmem = NULL;
	assert_int_equal(vqs_drv_vq_create(&dq, &c), -EINVAL);
	vqs_gmem_destroy(g);
}

static void test_create_fails_cleanly_when_arena_too_small(void **state)
{
	(void)state;
	struct fx f;
	assert_int_equal(fx_init(&f, 1024, 0, 4096), -ENOSPC);
}

static void test_ring_areas_have_spec_alignment_and_do_not_overlap(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 256, VQS_BIT(VQS_F_EVENT_IDX));
	uint64_t d, a, u;
	vqs_drv_vq_addrs(f.dq, &d, &a, &u);
	assert_int_equal(d % VQS_VRING_DESC_ALIGN, 0);
	assert_int_equal(a % VQS_VRING_AVAIL_ALIGN, 0);
	assert_int_equal(u % VQS_VRING_USED_ALIGN, 0);
	assert_true(d + vqs_vring_desc_size(256) <= a || a + vqs_vring_avail_size(256) <= d);
	assert_true(a + vqs_vring_avail_size(256) <= u || u + vqs_vring_used_size(256) <= a);
	assert_true(d + vqs_vring_desc_size(256) <= u || u + vqs_vring_used_size(256) <= d);
	/* the EVENT_IDX trailers are inside the areas, and everything starts at zero */
	assert_non_null(vqs_gmem_host(f.g, a, vqs_vring_avail_size(256)));
	assert_non_null(vqs_gmem_host(f.g, u, vqs_vring_used_size(256)));
	assert_int_equal(f.avail->idx, 0);
	assert_int_equal(f.avail->flags, 0);
	assert_int_equal(*used_event(&f), 0);
	assert_int_equal(vqs_drv_free_count(f.dq), 256);
	fx_fini(&f);
}

/* ---- adding chains ---- */

static void test_driver_must_set_next_and_write_flags(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 16, 0);
	struct vqs_drv_buf b[5];
	for (unsigned i = 0; i < 5; i++)
		b[i] = buf(BASE + 0x200000 + i * 0x1000, 100 + i);
	assert_int_equal(vqs_drv_add(f.dq, b, 2, 3, &tok[0], false), 0);
	assert_int_equal(vqs_drv_free_count(f.dq), 11);
	vqs_drv_kick_prepare(f.dq);
	int i = dev_pop(&f);
	assert_in_range(i, 0, 15);
	for (unsigned k = 0; k < 5; k++) {
		struct vqs_vring_desc d = f.desc[i];
		assert_int_equal(d.addr, b[k].gpa);
		assert_int_equal(d.len, b[k].len);
		uint16_t want = (k >= 2 ? VQS_VRING_DESC_F_WRITE : 0) |
				(k < 4 ? VQS_VRING_DESC_F_NEXT : 0);
		assert_int_equal(d.flags, want);
		if (k < 4) {
			assert_in_range(d.next, 0, 15);
			i = d.next;
		}
	}
	fx_fini(&f);
}

static void test_driver_must_not_make_chain_longer_than_queue_size(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	struct vqs_drv_buf b[9];
	for (unsigned i = 0; i < 9; i++)
		b[i] = buf(BASE + 0x200000 + i * 0x100, 16);
	assert_int_equal(vqs_drv_add(f.dq, b, 4, 5, &tok[0], false), -EINVAL);
	assert_int_equal(vqs_drv_add(f.dq, b, 9, 0, &tok[0], false), -EINVAL);
	/* exactly the queue size fits an empty ring, and uses every descriptor once */
	assert_int_equal(vqs_drv_add(f.dq, b, 4, 4, &tok[0], false), 0);
	assert_int_equal(vqs_drv_free_count(f.dq), 0);
	vqs_drv_kick_prepare(f.dq);
	int i = dev_pop(&f);
	unsigned seen = 0, n = 0;
	for (;; n++) {
		assert_in_range(i, 0, 7);
		assert_false(seen & (1u << i));
		seen |= 1u << i;
		if (!(f.desc[i].flags & VQS_VRING_DESC_F_NEXT))
			break;
		i = f.desc[i].next;
	}
	assert_int_equal(n + 1, 8);
	fx_fini(&f);
}

static void test_add_rejects_null_token_empty_chain_and_huge_chain(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	struct vqs_drv_buf b[2] = {buf(BASE + 0x200000, 0xffffffffu), buf(BASE + 0x200000, 1)};
	assert_int_equal(vqs_drv_add(f.dq, b, 1, 0, NULL, false), -EINVAL);
	assert_int_equal(vqs_drv_add(f.dq, b, 0, 0, &tok[0], false), -EINVAL);
	/* a device must refuse a chain of more than 2^32-1 bytes, so the driver never makes one */
	assert_int_equal(vqs_drv_add(f.dq, b, 1, 1, &tok[0], false), -EINVAL);
	assert_int_equal(vqs_drv_free_count(f.dq), 8);
	fx_fini(&f);
}

static void test_free_count_and_enospc_when_full(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	for (unsigned i = 0; i < 8; i++)
		assert_in_range(add_one(&f, &tok[i]), 0, 7);
	assert_int_equal(vqs_drv_free_count(f.dq), 0);
	struct vqs_drv_buf b[3] = {buf(BASE, 1), buf(BASE, 1), buf(BASE, 1)};
	assert_int_equal(vqs_drv_add(f.dq, b, 1, 0, &tok[8], false), -ENOSPC);
	/* two descriptors back are not enough for a chain of three */
	uint32_t len;
	dev_use(&f, f.avail->ring[0], 0);
	dev_use(&f, f.avail->ring[1], 0);
	assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[0]);
	assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[1]);
	assert_int_equal(vqs_drv_free_count(f.dq), 2);
	assert_int_equal(vqs_drv_add(f.dq, b, 1, 2, &tok[8], false), -ENOSPC);
	assert_int_equal(vqs_drv_add(f.dq, b, 1, 1, &tok[8], false), 0);
	assert_int_equal(vqs_drv_free_count(f.dq), 0);
	fx_fini(&f);
}

static void test_avail_idx_published_only_by_kick_prepare(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	struct vqs_drv_buf b = buf(BASE + 0x200000, 64);
	assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[0], false), 0);
	assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[1], false), 0);
	assert_int_equal(avail_idx(&f), 0);
	assert_true(vqs_drv_kick_prepare(f.dq));
	assert_int_equal(avail_idx(&f), 2);
	assert_int_not_equal(f.avail->ring[0], f.avail->ring[1]);
	/* nothing new: no kick */
	assert_false(vqs_drv_kick_prepare(f.dq));
	fx_fini(&f);
}

/* ---- indirect descriptors ---- */

static void test_driver_must_not_set_indirect_and_next_together(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, VQS_BIT(VQS_F_INDIRECT_DESC));
	struct vqs_drv_buf b[4];
	for (unsigned i = 0; i < 4; i++)
		b[i] = buf(BASE + 0x200000 + i * 0x1000, 10 + i);
	assert_int_equal(vqs_drv_add(f.dq, b, 1, 3, &tok[0], true), 0);
	assert_int_equal(vqs_drv_free_count(f.dq), 7); /* one ring descriptor */
	vqs_drv_kick_prepare(f.dq);
	int head = dev_pop(&f);
	assert_in_range(head, 0, 7);
	struct vqs_vring_desc d = f.desc[head];
	assert_int_equal(d.flags, VQS_VRING_DESC_F_INDIRECT);
	assert_int_equal(d.len, 4 * 16);
	assert_int_equal(d.addr % 16, 0);
	struct vqs_vring_desc *t = vqs_gmem_host(f.g, d.addr, d.len);
	assert_non_null(t);
	for (unsigned k = 0; k < 4; k++) {
		assert_int_equal(t[k].addr, b[k].gpa);
		assert_int_equal(t[k].len, b[k].len);
		/* no nested INDIRECT; NEXT links stay inside the table */
		uint16_t want = (k >= 1 ? VQS_VRING_DESC_F_WRITE : 0) |
				(k < 3 ? VQS_VRING_DESC_F_NEXT : 0);
		assert_int_equal(t[k].flags, want);
		if (k < 3)
			assert_int_equal(t[k].next, k + 1);
	}
	fx_fini(&f);
}

static void test_indirect_without_feature_or_too_long_is_einval(void **state)
{
	(void)state;
	struct fx f;
	struct vqs_drv_buf b[9];
	for (unsigned i = 0; i < 9; i++)
		b[i] = buf(BASE + 0x200000, 8);
	setup(&f, 8, 0);
	assert_int_equal(vqs_drv_add(f.dq, b, 1, 1, &tok[0], true), -EINVAL);
	fx_fini(&f);
	/* an indirect chain is still a chain: not longer than the queue size */
	setup(&f, 8, VQS_BIT(VQS_F_INDIRECT_DESC));
	assert_int_equal(vqs_drv_add(f.dq, b, 9, 0, &tok[0], true), -EINVAL);
	assert_int_equal(vqs_drv_add(f.dq, b, 8, 0, &tok[0], true), 0);
	fx_fini(&f);
}

static void test_indirect_tables_are_reused_not_exhausting_the_arena(void **state)
{
	(void)state;
	struct fx f;
	/* room for the rings and one table per slot, not for a table per add */
	assert_int_equal(fx_init(&f, 8, VQS_BIT(VQS_F_INDIRECT_DESC), 16384), 0);
	struct vqs_drv_buf b[8];
	for (unsigned i = 0; i < 8; i++)
		b[i] = buf(BASE, 8);
	uint32_t len;
	for (unsigned round = 0; round < 1000; round++) {
		for (unsigned i = 0; i < 8; i++)
			assert_int_equal(vqs_drv_add(f.dq, b, 4, 4, &tok[i], true), 0);
		assert_int_equal(vqs_drv_add(f.dq, b, 4, 4, &tok[8], true), -ENOSPC);
		vqs_drv_kick_prepare(f.dq);
		for (int h; (h = dev_pop(&f)) >= 0;)
			dev_use(&f, (uint32_t)h, 32);
		for (unsigned i = 0; i < 8; i++) {
			assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[i]);
			assert_int_equal(len, 32);
		}
	}
	fx_fini(&f);
}

/* ---- used ring ---- */

static void test_get_used_returns_tokens_out_of_order_with_len(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	int head[4];
	for (unsigned i = 0; i < 4; i++)
		head[i] = add_one(&f, &tok[i]);
	uint32_t len = 0;
	assert_null(vqs_drv_get_used(f.dq, &len));
	assert_false(vqs_drv_has_used(f.dq));
	dev_use(&f, (uint32_t)head[2], 7);
	dev_use(&f, (uint32_t)head[0], 64);
	assert_true(vqs_drv_has_used(f.dq));
	assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[2]);
	assert_int_equal(len, 7);
	assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[0]);
	assert_int_equal(len, 64);
	assert_null(vqs_drv_get_used(f.dq, &len));
	assert_int_equal(vqs_drv_free_count(f.dq), 6);
	fx_fini(&f);
}

/* A used id the driver never handed out (or already got back) is the device's bug: reported,
 * queue stopped, nothing freed twice. */
static void check_bad_used_id_is_reported(uint32_t bad, bool complete_first)
{
	struct fx f;
	setup(&f, 8, 0);
	int h = add_one(&f, &tok[0]);
	add_one(&f, &tok[1]);
	uint32_t len;
	if (complete_first) {
		dev_use(&f, (uint32_t)h, 0);
		assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[0]);
		bad = (uint32_t)h;
	}
	log_count = 0;
	vqs_set_log(count_log, NULL, VQS_LOG_WARN);
	dev_use(&f, bad, 0);
	assert_null(vqs_drv_get_used(f.dq, &len));
	vqs_set_log(NULL, NULL, VQS_LOG_WARN);
	assert_int_equal(log_count, 1);
	assert_false(vqs_drv_has_used(f.dq));
	struct vqs_drv_buf b = buf(BASE, 8);
	assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[2], false), -EIO);
	fx_fini(&f);
}

static void test_used_id_out_of_range_is_reported_not_crashed(void **state)
{
	(void)state;
	check_bad_used_id_is_reported(8, false);
	check_bad_used_id_is_reported(0xffffffffu, false);
}

static void test_used_id_not_in_flight_is_reported_not_freed_twice(void **state)
{
	(void)state;
	check_bad_used_id_is_reported(0, true);
}

static void test_used_idx_ahead_of_chains_in_flight_is_reported(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	int h = add_one(&f, &tok[0]);
	log_count = 0;
	vqs_set_log(count_log, NULL, VQS_LOG_WARN);
	f.used->ring[0] = (struct vqs_vring_used_elem){.id = (uint32_t)h, .len = 0};
	atomic_store_explicit(a16(&f.used->idx), 2, memory_order_release);
	uint32_t len;
	assert_null(vqs_drv_get_used(f.dq, &len));
	vqs_set_log(NULL, NULL, VQS_LOG_WARN);
	assert_int_equal(log_count, 1);
	fx_fini(&f);
}

static void test_used_len_above_writable_bytes_is_clamped(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	int h = add_one(&f, &tok[0]); /* 64 writable bytes */
	log_count = 0;
	vqs_set_log(count_log, NULL, VQS_LOG_WARN);
	dev_use(&f, (uint32_t)h, 1u << 30);
	uint32_t len;
	assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[0]);
	vqs_set_log(NULL, NULL, VQS_LOG_WARN);
	assert_int_equal(len, 64);
	assert_int_equal(log_count, 1);
	fx_fini(&f);
}

/* ---- notification suppression ---- */

static void test_kick_suppressed_by_used_no_notify(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	struct vqs_drv_buf b = buf(BASE, 8);
	atomic_store(a16(&f.used->flags), VQS_VRING_USED_F_NO_NOTIFY);
	assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[0], false), 0);
	assert_false(vqs_drv_kick_prepare(f.dq));
	assert_int_equal(avail_idx(&f), 1); /* published all the same */
	atomic_store(a16(&f.used->flags), 0);
	assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[1], false), 0);
	assert_true(vqs_drv_kick_prepare(f.dq));
	fx_fini(&f);
}

static void test_event_idx_kick_only_when_avail_event_is_passed(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 16, VQS_BIT(VQS_F_EVENT_IDX));
	struct vqs_drv_buf b = buf(BASE, 8);
	/* the device ignores NO_NOTIFY with EVENT_IDX, so must the driver */
	atomic_store(a16(&f.used->flags), VQS_VRING_USED_F_NO_NOTIFY);
	assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[0], false), 0);
	assert_true(vqs_drv_kick_prepare(f.dq)); /* avail_event 0: 0 -> 1 passes it */
	atomic_store(a16(avail_event(&f)), 5);
	assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[1], false), 0);
	assert_false(vqs_drv_kick_prepare(f.dq)); /* 1 -> 2 */
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[2 + i], false), 0);
	assert_false(vqs_drv_kick_prepare(f.dq)); /* 2 -> 5: event 5 not yet passed */
	assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[5], false), 0);
	assert_true(vqs_drv_kick_prepare(f.dq)); /* 5 -> 6 */
	/* a batch that jumps over the event is one kick */
	atomic_store(a16(avail_event(&f)), 7);
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(vqs_drv_add(f.dq, &b, 1, 0, &tok[6 + i], false), 0);
	assert_true(vqs_drv_kick_prepare(f.dq)); /* 6 -> 10 */
	fx_fini(&f);
}

static void test_no_interrupt_flag_without_event_idx(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, 0);
	vqs_drv_disable_cb(f.dq);
	assert_int_equal(f.avail->flags, VQS_VRING_AVAIL_F_NO_INTERRUPT);
	assert_false(vqs_drv_enable_cb(f.dq));
	assert_int_equal(f.avail->flags, 0);
	fx_fini(&f);
}

static void test_event_idx_driver_must_keep_avail_flags_zero(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, VQS_BIT(VQS_F_EVENT_IDX));
	int h = add_one(&f, &tok[0]);
	add_one(&f, &tok[1]);
	dev_use(&f, (uint32_t)h, 0);
	uint32_t len;
	assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[0]);
	/* callbacks on: interrupt wanted for the very next completion */
	assert_int_equal(*used_event(&f), 1);
	vqs_drv_disable_cb(f.dq);
	assert_int_equal(f.avail->flags, 0);
	/* the next completion (used idx 1 -> 2) must not pass used_event */
	assert_false(vqs_vring_need_event(*used_event(&f), 2, 1));
	assert_false(vqs_drv_enable_cb(f.dq));
	assert_int_equal(f.avail->flags, 0);
	assert_int_equal(*used_event(&f), 1);
	assert_true(vqs_vring_need_event(*used_event(&f), 2, 1));
	fx_fini(&f);
}

static void check_enable_reports_used_arrived_meanwhile(uint64_t features)
{
	struct fx f;
	setup(&f, 8, features);
	int h = add_one(&f, &tok[0]);
	vqs_drv_disable_cb(f.dq);
	dev_use(&f, (uint32_t)h, 0);
	assert_true(vqs_drv_enable_cb(f.dq));
	uint32_t len;
	assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[0]);
	assert_false(vqs_drv_enable_cb(f.dq));
	fx_fini(&f);
}

static void test_enable_cb_reports_used_arrived_meanwhile(void **state)
{
	(void)state;
	check_enable_reports_used_arrived_meanwhile(0);
	check_enable_reports_used_arrived_meanwhile(VQS_BIT(VQS_F_EVENT_IDX));
}

static void test_enable_cb_delayed_waits_for_three_quarters(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, VQS_BIT(VQS_F_EVENT_IDX));
	int h[8];
	for (unsigned i = 0; i < 8; i++)
		h[i] = add_one(&f, &tok[i]);
	vqs_drv_disable_cb(f.dq);
	assert_false(vqs_drv_enable_cb_delayed(f.dq));
	assert_int_equal(*used_event(&f), 6);
	for (unsigned i = 0; i < 6; i++)
		dev_use(&f, (uint32_t)h[i], 0);
	/* six completions do not pass used_event 6, the seventh does */
	assert_false(vqs_vring_need_event(*used_event(&f), 6, 0));
	assert_true(vqs_vring_need_event(*used_event(&f), 7, 6));
	vqs_drv_disable_cb(f.dq);
	dev_use(&f, (uint32_t)h[6], 0);
	/* more pending than the delay: the event may already be behind, drain instead */
	assert_true(vqs_drv_enable_cb_delayed(f.dq));
	fx_fini(&f);
}

/* ---- indices ---- */

static void test_wrap_of_16bit_indices_over_many_rounds(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 4, VQS_BIT(VQS_F_EVENT_IDX));
	struct vqs_drv_buf b[2] = {buf(BASE + 0x300000, 16), buf(BASE + 0x301000, 32)};
	uint32_t rounds = 70000, len;
	for (uint32_t r = 0; r < rounds; r++) {
		unsigned n = 1 + r % 2; /* 1 or 2 chains at a time, so wraps land anywhere */
		for (unsigned i = 0; i < n; i++)
			assert_int_equal(vqs_drv_add(f.dq, b, 1, 1, &tok[i], false), 0);
		atomic_store(a16(avail_event(&f)), f.last_avail);
		assert_true(vqs_drv_kick_prepare(f.dq));
		for (int h; (h = dev_pop(&f)) >= 0;) {
			assert_int_equal(f.desc[h].flags, VQS_VRING_DESC_F_NEXT);
			assert_int_equal(f.desc[f.desc[h].next].flags, VQS_VRING_DESC_F_WRITE);
			dev_use(&f, (uint32_t)h, 5);
		}
		for (unsigned i = 0; i < n; i++) {
			assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[i]);
			assert_int_equal(len, 5);
		}
		assert_null(vqs_drv_get_used(f.dq, &len));
		assert_int_equal(vqs_drv_free_count(f.dq), 4);
		assert_int_equal(*used_event(&f), f.used_idx);
	}
	assert_true(f.last_avail != 0 && f.used_idx == f.last_avail);
	assert_int_equal(f.last_avail, (uint16_t)(rounds / 2 * 3));
	fx_fini(&f);
}

/* ---- IN_ORDER ---- */

/* Descriptors in ring order, NEXT to x + 1 and to 0 after the last one in the table (2.7.5). */
static void test_in_order_driver_must_use_descriptors_in_ring_order(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, VQS_BIT(VQS_F_IN_ORDER));
	struct vqs_drv_buf b[3] = {buf(BASE, 8), buf(BASE, 8), buf(BASE, 8)};
	uint32_t len;
	int head[3];
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(vqs_drv_add(f.dq, b, 1, 2, &tok[i], false), 0);
		vqs_drv_kick_prepare(f.dq);
		head[i] = dev_pop(&f);
	}
	assert_int_equal(head[0], 0);
	assert_int_equal(head[1], 3);
	assert_int_equal(f.desc[0].next, 1);
	assert_int_equal(f.desc[1].next, 2);
	dev_use(&f, 0, 0);
	assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[0]);
	assert_int_equal(vqs_drv_add(f.dq, b, 1, 2, &tok[2], false), 0);
	vqs_drv_kick_prepare(f.dq);
	head[2] = dev_pop(&f);
	assert_int_equal(head[2], 6);
	assert_int_equal(f.desc[6].flags, VQS_VRING_DESC_F_NEXT);
	assert_int_equal(f.desc[6].next, 7);
	assert_int_equal(f.desc[7].flags, VQS_VRING_DESC_F_NEXT | VQS_VRING_DESC_F_WRITE);
	assert_int_equal(f.desc[7].next, 0);
	assert_int_equal(f.desc[0].flags, VQS_VRING_DESC_F_WRITE);
	/* the ring is full until the oldest chain comes back, whatever else is free */
	assert_int_equal(vqs_drv_free_count(f.dq), 2);
	fx_fini(&f);
}

/* One used entry, at the batch's first position, naming its last chain: the chains before it
 * come back whole (their full writable length), the last with the entry's len (2.7.9). */
static void test_in_order_batch_answered_by_one_used_entry(void **state)
{
	(void)state;
	struct fx f;
	setup(&f, 8, VQS_BIT(VQS_F_IN_ORDER) | VQS_BIT(VQS_F_INDIRECT_DESC));
	struct vqs_drv_buf b[2] = {buf(BASE, 8), buf(BASE, 40)};
	uint32_t len;
	int head[4];
	for (unsigned round = 0; round < 20; round++) {
		for (unsigned i = 0; i < 4; i++) {
			/* mixed sizes, so chains wrap the table at different places */
			bool ind = (i + round) % 3 == 0;
			assert_int_equal(vqs_drv_add(f.dq, b, 1, 1, &tok[i], ind), 0);
			vqs_drv_kick_prepare(f.dq);
			head[i] = dev_pop(&f);
		}
		/* first batch: chains 0-2, entry at the first position */
		f.used->ring[f.used_idx % 8] = (struct vqs_vring_used_elem){.id = (uint32_t)head[2],
									     .len = 3};
		f.used_idx += 3;
		atomic_store_explicit(a16(&f.used->idx), f.used_idx, memory_order_release);
		for (unsigned i = 0; i < 3; i++) {
			assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[i]);
			assert_int_equal(len, i < 2 ? 40 : 3);
		}
		assert_null(vqs_drv_get_used(f.dq, &len));
		dev_use(&f, (uint32_t)head[3], 1); /* a batch of one */
		assert_ptr_equal(vqs_drv_get_used(f.dq, &len), &tok[3]);
		assert_int_equal(len, 1);
		assert_int_equal(vqs_drv_free_count(f.dq), 8);
	}
	fx_fini(&f);
}

static void check_in_order_bad_batch(unsigned published, uint32_t id_of)
{
	struct fx f;
	setup(&f, 8, VQS_BIT(VQS_F_IN_ORDER));
	int head[3];
	for (unsigned i = 0; i < 3; i++)
		head[i] = add_one(&f, &tok[i]);
	log_count = 0;
	vqs_set_log(count_log, NULL, VQS_LOG_WARN);
	f.used->ring[0] = (struct vqs_vring_used_elem){
		.id = id_of < 3 ? (uint32_t)head[id_of] : id_of, .len = 0};
	atomic_store_explicit(a16(&f.used->idx), (uint16_t)published, memory_order_release);
	uint32_t len;
	assert_null(vqs_drv_get_used(f.dq, &len));
	vqs_set_log(NULL, NULL, VQS_LOG_WARN);
	assert_int_equal(log_count, 1);
	assert_int_equal(vqs_drv_free_count(f.dq), 5);
	fx_fini(&f);
}

static void test_in_order_used_id_outside_published_batch_is_reported(void **state)
{
	(void)state;
	check_in_order_bad_batch(2, 2); /* names the third chain, publishes two */
	check_in_order_bad_batch(3, 7); /* names no chain in flight */
	check_in_order_bad_batch(3, 1000);
}

/* ---- ordering across threads ---- */

struct order_ctx {
	struct fx f;
	unsigned long n;
	_Atomic int bad;
};

/* The device half: every published avail entry must lead to the descriptor the driver wrote for
 * it (addr encodes the sequence number), or the ring writes were not visible before the idx. */
static void *order_device(void *arg)
{
	struct order_ctx *c = arg;
	struct fx *f = &c->f;
	uint64_t deadline = vqs_now_ns() + 60ull * 1000000000u;
	for (unsigned long seq = 0; seq < c->n;) {
		int h = dev_pop(f);
		if (h < 0) {
			if (vqs_now_ns() > deadline) {
				c->bad = -ETIMEDOUT;
				return NULL;
			}
			sched_yield();
			continue;
		}
		if (f->desc[h].addr != BASE + 0x200000 + (seq % 4096) * 64 || f->desc[h].len != 64)
			c->bad = 1;
		dev_use(f, (uint32_t)h, 64);
		seq++;
	}
	return NULL;
}

static void test_driver_must_make_ring_writes_visible_before_idx(void **state)
{
	(void)state;
	struct order_ctx c = {.n = vqs_test_scaled(200000)};
	setup(&c.f, 64, 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, order_device, &c), 0);
	uint64_t deadline = vqs_now_ns() + 60ull * 1000000000u;
	uint32_t len;
	unsigned long added = 0, done = 0;
	while (done < c.n && vqs_now_ns() < deadline) {
		struct vqs_drv_buf b = buf(BASE + 0x200000 + (added % 4096) * 64, 64);
		if (added < c.n && vqs_drv_add(c.f.dq, &b, 0, 1, &tok[added % 64], false) == 0) {
			added++;
			vqs_drv_kick_prepare(c.f.dq);
			continue;
		}
		if (vqs_drv_get_used(c.f.dq, &len))
			done++;
		else
			sched_yield();
	}
	pthread_join(t, NULL);
	assert_int_equal(c.bad, 0);
	assert_int_equal(done, c.n);
	fx_fini(&c.f);
}

/* ---- with the library's device side ---- */

/* What the driver writes is what the device pops: direct and indirect chains, both directions of
 * data, the written length, and each side's notification decision honouring the other's event
 * index. */
static void test_pair_round_trip_direct_and_indirect(void **state)
{
	(void)state;
	struct vqs_pair p;
	uint64_t features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_INDIRECT_DESC) |
			    VQS_BIT(VQS_F_EVENT_IDX);
	assert_int_equal(vqs_pair_init(&p, 16, features, BASE, ARENA), 0);
	uint64_t gpa[4];
	uint8_t *host[4];
	for (unsigned i = 0; i < 4; i++) {
		gpa[i] = vqs_gmem_alloc(p.gmem, 256, 64);
		host[i] = vqs_gmem_host(p.gmem, gpa[i], 256);
		assert_non_null(host[i]);
		memset(host[i], 0x10 + i, 256);
	}
	struct vqs_drv_buf b[4] = {{gpa[0], 100}, {gpa[1], 256}, {gpa[2], 30}, {gpa[3], 200}};
	struct iovec iov[8];
	uint32_t len;
	for (int indirect = 0; indirect < 2; indirect++) {
		/* the device asks for a kick for the next chain (avail_event), so it gets one */
		assert_false(vqs_vq_enable_notify(p.dev));
		assert_int_equal(vqs_drv_add(p.drv, b, 2, 2, &tok[indirect], indirect), 0);
		assert_true(vqs_drv_kick_prepare(p.drv));
		vqs_vq_disable_notify(p.dev);
		struct vqs_elem e = {.iov = iov, .iov_cap = 8};
		vqs_mem_read_lock();
		assert_int_equal(vqs_vq_pop(p.dev, &e), 0);
		assert_int_equal(e.out_num, 2);
		assert_int_equal(e.in_num, 2);
		assert_int_equal(e.out_len, 356);
		assert_int_equal(e.in_len, 230);
		assert_int_equal(iov[0].iov_len, 100);
		assert_int_equal(((uint8_t *)iov[1].iov_base)[255], 0x11);
		memset(iov[2].iov_base, 0xab, 30);
		memset(iov[3].iov_base, 0xcd, 5);
		vqs_mem_read_unlock();
		assert_int_equal(vqs_vq_fill(p.dev, &e, 35), 0);
		assert_int_equal(vqs_vq_flush(p.dev), 1);
		assert_true(vqs_vq_need_call(p.dev));
		assert_ptr_equal(vqs_drv_get_used(p.drv, &len), &tok[indirect]);
		assert_int_equal(len, 35);
		assert_int_equal(host[2][29], 0xab);
		assert_int_equal(host[3][4], 0xcd);
		assert_int_equal(vqs_drv_free_count(p.drv), 16);
	}
	/* interrupts off: the device must not be asked to call */
	vqs_drv_disable_cb(p.drv);
	assert_int_equal(vqs_drv_add(p.drv, b, 1, 0, &tok[2], false), 0);
	assert_false(vqs_drv_kick_prepare(p.drv)); /* the device left avail_event behind */
	struct vqs_elem e = {.iov = iov, .iov_cap = 8};
	vqs_mem_read_lock();
	assert_int_equal(vqs_vq_pop(p.dev, &e), 0);
	vqs_mem_read_unlock();
	assert_int_equal(vqs_vq_fill(p.dev, &e, 0), 0);
	assert_int_equal(vqs_vq_flush(p.dev), 1);
	assert_false(vqs_vq_need_call(p.dev));
	assert_true(vqs_drv_enable_cb(p.drv));
	assert_false(vqs_vq_is_broken(p.dev));
	vqs_pair_fini(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_rejects_bad_config),
		cmocka_unit_test(test_create_fails_cleanly_when_arena_too_small),
		cmocka_unit_test(test_ring_areas_have_spec_alignment_and_do_not_overlap),
		cmocka_unit_test(test_driver_must_set_next_and_write_flags),
		cmocka_unit_test(test_driver_must_not_make_chain_longer_than_queue_size),
		cmocka_unit_test(test_add_rejects_null_token_empty_chain_and_huge_chain),
		cmocka_unit_test(test_free_count_and_enospc_when_full),
		cmocka_unit_test(test_avail_idx_published_only_by_kick_prepare),
		cmocka_unit_test(test_driver_must_not_set_indirect_and_next_together),
		cmocka_unit_test(test_indirect_without_feature_or_too_long_is_einval),
		cmocka_unit_test(test_indirect_tables_are_reused_not_exhausting_the_arena),
		cmocka_unit_test(test_get_used_returns_tokens_out_of_order_with_len),
		cmocka_unit_test(test_used_id_out_of_range_is_reported_not_crashed),
		cmocka_unit_test(test_used_id_not_in_flight_is_reported_not_freed_twice),
		cmocka_unit_test(test_used_idx_ahead_of_chains_in_flight_is_reported),
		cmocka_unit_test(test_used_len_above_writable_bytes_is_clamped),
		cmocka_unit_test(test_kick_suppressed_by_used_no_notify),
		cmocka_unit_test(test_event_idx_kick_only_when_avail_event_is_passed),
		cmocka_unit_test(test_no_interrupt_flag_without_event_idx),
		cmocka_unit_test(test_event_idx_driver_must_keep_avail_flags_zero),
		cmocka_unit_test(test_enable_cb_reports_used_arrived_meanwhile),
		cmocka_unit_test(test_enable_cb_delayed_waits_for_three_quarters),
		cmocka_unit_test(test_wrap_of_16bit_indices_over_many_rounds),
		cmocka_unit_test(test_in_order_driver_must_use_descriptors_in_ring_order),
		cmocka_unit_test(test_in_order_batch_answered_by_one_used_entry),
		cmocka_unit_test(test_in_order_used_id_outside_published_batch_is_reported),
		cmocka_unit_test(test_driver_must_make_ring_writes_visible_before_idx),
		cmocka_unit_test(test_pair_round_trip_direct_and_indirect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
