/* SPDX-License-Identifier: MIT */
/*
 * The device's MUST clauses of the split virtqueue (virtio 1.x 2.7), one named case each, checked
 * on ring memory written by hand, plus a round trip with the library's driver ring.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"
#include "ring_fixture.h"

#define NUM 8
#define F_EVT VQS_BIT(VQS_F_EVENT_IDX)
#define F_IND VQS_BIT(VQS_F_INDIRECT_DESC)

static void pop_ok(struct fx_ring *r, struct vqs_elem *e, struct iovec *iov, unsigned cap)
{
	assert_int_equal(fx_pop(r->vq, e, iov, cap), 0);
}

static void complete(struct fx_ring *r, const struct vqs_elem *e, uint32_t written)
{
	assert_int_equal(vqs_vq_fill(r->vq, e, written), 0);
	assert_int_equal(vqs_vq_flush(r->vq), 1);
}

/* 2.7.5: "A device MUST NOT write to a device-readable buffer": the element tells readable from
 * writable buffers exactly as the descriptors flag them, readable ones first. */
static void test_device_readable_and_writable_iovecs_follow_descriptor_flags(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	uint64_t out = tmem_buf(&c->m, 12, 0x11), in = tmem_buf(&c->m, 34, 0x22);
	fx_desc(&c->r, 0, out, 12, VQS_VRING_DESC_F_NEXT, 5);
	fx_desc(&c->r, 5, in, 34, VQS_VRING_DESC_F_WRITE, 0);
	fx_publish(&c->r, 0);
	struct iovec iov[4];
	struct vqs_elem e;
	pop_ok(&c->r, &e, iov, 4);
	assert_int_equal(e.out_num, 1);
	assert_int_equal(e.in_num, 1);
	assert_int_equal(e.out_len, 12);
	assert_int_equal(e.in_len, 34);
	assert_ptr_equal(iov[0].iov_base, tmem_host(&c->m, out, 12));
	assert_ptr_equal(iov[1].iov_base, tmem_host(&c->m, in, 34));
}

/* Offer the chain head -> next (12 readable bytes at a, then len bytes at b with flags) and pop
 * it with room for cap iovecs; check the element's shape. */
static void pop_pair(struct fx_ctx *c, uint16_t head, uint16_t next, uint64_t a, uint64_t b,
		     uint32_t len, uint16_t flags, struct vqs_elem *e, struct iovec *iov,
		     unsigned cap)
{
	fx_desc(&c->r, head, a, 12, VQS_VRING_DESC_F_NEXT, next);
	fx_desc(&c->r, next, b, len, flags, 0);
	fx_publish(&c->r, head);
	pop_ok(&c->r, e, iov, cap);
	bool w = flags & VQS_VRING_DESC_F_WRITE;
	assert_int_equal(e->out_num, 1 + (!w && len));
	assert_int_equal(e->in_num, w && len);
	assert_int_equal(e->out_len, 12 + (w ? 0 : len));
	assert_int_equal(e->in_len, w ? len : 0);
	assert_int_equal(e->ndescs, 2);
	if (len)
		assert_ptr_equal(e->iov[1].iov_base, tmem_host(&c->m, b, len));
}

/* The chains of two descriptors a pop takes in a straight line give the element the general
 * walk gives: two readable ones, a second of length 0 (no iovec), and a chain with room for one
 * iovec only (built in the long-chain area). */
static void test_device_two_descriptor_chains_as_the_walk_builds_them(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	uint64_t a = tmem_buf(&c->m, 12, 0x11), b = tmem_buf(&c->m, 34, 0x22);
	struct iovec iov[4];
	struct vqs_elem e;
	pop_pair(c, 0, 3, a, b, 34, 0, &e, iov, 4);
	complete(&c->r, &e, 0);
	pop_pair(c, 1, 2, a, b, 0, VQS_VRING_DESC_F_WRITE, &e, iov, 4);
	complete(&c->r, &e, 0);
	pop_pair(c, 4, 5, a, b, 34, VQS_VRING_DESC_F_WRITE, &e, iov, 1);
	assert_ptr_not_equal(e.iov, iov);
	complete(&c->r, &e, 34);
}

/* 2.7.8: len counts bytes written into device-writable buffers: it cannot exceed them. */
static void test_device_used_len_cannot_exceed_writable_bytes(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	fx_simple_chain(&c->r, 0, 16, false);
	struct iovec iov[2];
	struct vqs_elem e;
	pop_ok(&c->r, &e, iov, 2);
	assert_int_equal(vqs_vq_fill(c->r.vq, &e, 1), -EINVAL);
	assert_int_equal(vqs_vq_flush(c->r.vq), 0);
	complete(&c->r, &e, 0);
	assert_int_equal(c->r.used->ring[0].len, 0);
}

/* 2.7.8: "The device MUST set len prior to updating the used idx": filled entries stay invisible
 * until flush, which publishes entry and index together (more than one staging batch here). */
static void test_device_sets_used_len_before_used_idx(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	static struct tmem big_mem;
	struct fx_ring big;
	enum { BIG = 128 };
	tmem_init(&big_mem, FX_GPA_BASE, FX_ARENA);
	fx_ring_init(&big, &big_mem, BIG, 0);
	struct iovec iov[BIG];
	struct vqs_elem e[BIG];
	for (unsigned i = 0; i < BIG; i++) {
		fx_simple_chain(&big, i, 64, true);
		assert_int_equal(fx_pop(big.vq, &e[i], &iov[i], 1), 0);
	}
	for (unsigned i = 0; i < BIG; i++)
		assert_int_equal(vqs_vq_fill(big.vq, &e[BIG - 1 - i], i % 65), 0);
	assert_int_equal(fx_used_idx(&big), 0);
	assert_int_equal(vqs_vq_flush(big.vq), BIG);
	assert_int_equal(fx_used_idx(&big), BIG);
	for (unsigned i = 0; i < BIG; i++) {
		assert_int_equal(big.used->ring[i].id, BIG - 1 - i);
		assert_int_equal(big.used->ring[i].len, i % 65);
	}
	fx_ring_fini(&big);
	tmem_fini(&big_mem);
	(void)c;
}

/* 2.7.8: used entries go at used idx modulo the queue size, and the index wraps at 2^16. */
static void test_device_used_ring_wraps_modulo_queue_size_and_2_16(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	struct vqs_vq_state st = {.last_avail_idx = 65534, .used_idx = 65534};
	assert_int_equal(vqs_vq_set_state(c->r.vq, &st), 0);
	fx_set_avail_idx(&c->r, 65534);
	for (unsigned i = 0; i < 3; i++) {
		fx_simple_chain(&c->r, i, 8, true);
		struct iovec iov[1];
		struct vqs_elem e;
		pop_ok(&c->r, &e, iov, 1);
		complete(&c->r, &e, 8);
		uint16_t slot = (uint16_t)(65534 + i) % NUM;
		assert_int_equal(c->r.used->ring[slot].id, i);
	}
	assert_int_equal(fx_used_idx(&c->r), 1);
}

/* Completions may be out of order (without IN_ORDER): ids are the heads, in completion order. */
static void test_device_completes_out_of_order(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	fx_simple_chain(&c->r, 1, 8, true);
	fx_simple_chain(&c->r, 2, 8, true);
	struct iovec iov[2];
	struct vqs_elem a, b;
	pop_ok(&c->r, &a, iov, 1);
	pop_ok(&c->r, &b, iov + 1, 1);
	assert_int_equal(vqs_vq_fill(c->r.vq, &b, 8), 0);
	assert_int_equal(vqs_vq_fill(c->r.vq, &a, 4), 0);
	assert_int_equal(vqs_vq_flush(c->r.vq), 2);
	assert_int_equal(c->r.used->ring[0].id, 2);
	assert_int_equal(c->r.used->ring[1].id, 1);
	assert_int_equal(c->r.used->ring[1].len, 4);
	/* An id that is not in flight any more is refused. */
	assert_int_equal(vqs_vq_fill(c->r.vq, &a, 4), -EINVAL);
}

/* 2.7.7.2 without EVENT_IDX: flags 0 -> MUST notify; flags 1 -> SHOULD NOT; used_event ignored. */
static void test_device_no_event_idx_notifies_unless_no_interrupt(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	struct iovec iov[1];
	struct vqs_elem e;
	fx_set_used_event(&c->r, 100); /* would suppress if it were not ignored */
	fx_simple_chain(&c->r, 0, 8, true);
	pop_ok(&c->r, &e, iov, 1);
	complete(&c->r, &e, 8);
	assert_true(vqs_vq_need_call(c->r.vq));
	c->r.avail->flags = VQS_VRING_AVAIL_F_NO_INTERRUPT;
	fx_simple_chain(&c->r, 1, 8, true);
	pop_ok(&c->r, &e, iov, 1);
	complete(&c->r, &e, 8);
	assert_false(vqs_vq_need_call(c->r.vq));
}

/* 2.7.7.2 with EVENT_IDX: ignore the flags bit; notify exactly when the used idx passes
 * used_event. */
static void test_device_event_idx_notifies_when_passing_used_event(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, F_EVT);
	c->r.avail->flags = VQS_VRING_AVAIL_F_NO_INTERRUPT; /* MUST be ignored */
	struct iovec iov[1];
	struct vqs_elem e;
	bool calls[4];
	fx_set_used_event(&c->r, 2); /* "interrupt when entry 2 is written" */
	for (unsigned i = 0; i < 4; i++) {
		fx_simple_chain(&c->r, i, 8, true);
		pop_ok(&c->r, &e, iov, 1);
		complete(&c->r, &e, 8);
		calls[i] = vqs_vq_need_call(c->r.vq);
	}
	/* The first call after configure may not be suppressed (nothing known yet). */
	assert_true(calls[0]);
	assert_false(calls[1]);
	assert_true(calls[2]);
	assert_false(calls[3]);
}

/* 2.7.10 device side: with EVENT_IDX the device MUST keep used flags 0, and suppresses kicks
 * through avail_event instead. */
static void test_device_event_idx_keeps_used_flags_zero(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, F_EVT);
	vqs_vq_disable_notify(c->r.vq);
	assert_int_equal(c->r.used->flags, 0);
	assert_false(vqs_vq_enable_notify(c->r.vq));
	assert_int_equal(c->r.used->flags, 0);
	assert_int_equal(fx_avail_event(&c->r), 0);
}

/* 2.7.10 without EVENT_IDX: the device MUST set used flags to 0 or 1. */
static void test_device_no_event_idx_sets_used_flags_0_or_1(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	vqs_vq_disable_notify(c->r.vq);
	assert_int_equal(c->r.used->flags, VQS_VRING_USED_F_NO_NOTIFY);
	assert_false(vqs_vq_enable_notify(c->r.vq));
	assert_int_equal(c->r.used->flags, 0);
}

/* 2.7.10: "The device MUST handle spurious notifications": nothing available is not an error. */
static void test_device_handles_spurious_notification(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	struct iovec iov[1];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->r.vq, &e, iov, 1), -EAGAIN);
	assert_int_equal(fx_pop(c->r.vq, &e, iov, 1), -EAGAIN);
	assert_false(vqs_vq_is_broken(c->r.vq));
	assert_int_equal(vqs_vq_avail_count(c->r.vq), 0);
}

/* 2.7.5.3.2: the device MUST ignore the WRITE flag of a descriptor that refers to an indirect
 * table, and MUST handle direct descriptors followed by one indirect one. */
static void test_device_ignores_write_flag_on_indirect_descriptor(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, F_IND);
	uint64_t t = tmem_alloc(&c->m, 16, 16);
	struct vqs_vring_desc *d = tmem_host(&c->m, t, 16);
	d[0] = (struct vqs_vring_desc){tmem_buf(&c->m, 7, 1), 7, 0, 0};
	fx_desc(&c->r, 2, tmem_buf(&c->m, 3, 1), 3, VQS_VRING_DESC_F_NEXT, 6);
	fx_desc(&c->r, 6, t, 16, VQS_VRING_DESC_F_INDIRECT | VQS_VRING_DESC_F_WRITE, 0);
	fx_publish(&c->r, 2);
	struct iovec iov[4];
	struct vqs_elem e;
	pop_ok(&c->r, &e, iov, 4);
	assert_int_equal(e.out_num, 2);
	assert_int_equal(e.in_num, 0);
	assert_int_equal(e.out_len, 10);
}

/* Each descriptor is read once: a driver rewriting the table after publishing cannot change a
 * popped element, and the indirect table is copied before use. */
static void test_device_snapshot_is_not_affected_by_later_rewrites(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, F_IND);
	uint64_t t = tmem_alloc(&c->m, 32, 16);
	struct vqs_vring_desc *d = tmem_host(&c->m, t, 32);
	d[0] = (struct vqs_vring_desc){tmem_buf(&c->m, 8, 1), 8, VQS_VRING_DESC_F_NEXT, 1};
	d[1] = (struct vqs_vring_desc){tmem_buf(&c->m, 9, 1), 9, VQS_VRING_DESC_F_WRITE, 0};
	fx_desc(&c->r, 0, t, 32, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->r, 0);
	struct iovec iov[4];
	struct vqs_elem e;
	pop_ok(&c->r, &e, iov, 4);
	d[1].len = 0x7fffffff;
	c->r.desc[0].len = 0;
	assert_int_equal(e.in_len, 9);
	assert_int_equal(vqs_vq_fill(c->r.vq, &e, 10), -EINVAL);
	complete(&c->r, &e, 9);
}

/* n elements of one iovec each, and the pointers a session pops through. */
static void elems_init(struct vqs_elem *e, struct vqs_elem **pe, struct iovec *iov, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		e[i] = (struct vqs_elem){.iov = &iov[i], .iov_cap = 1};
		pe[i] = &e[i];
	}
}

/* A session's begin says how many chains there are; its pop takes what is there and stops:
 * nothing left is 0, not an error. */
static void test_session_begin_counts_and_pop_takes_what_is_there(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	for (unsigned i = 0; i < 3; i++)
		fx_simple_chain(&c->r, i, 8, false);
	assert_int_equal(vqs_vq_avail_count(c->r.vq), 3);
	struct iovec iov[4];
	struct vqs_elem e[4], *pe[4];
	elems_init(e, pe, iov, 4);
	struct vqs_vq_session ss;
	assert_int_equal(vqs_vq_session_begin(c->r.vq, &ss), 3);
	struct vqs_pop_to at = {.base = e, .stride = sizeof(e[0])};
	assert_int_equal(vqs_vq_session_pop(&ss, &at, 4), 3);
	assert_int_equal(vqs_vq_session_pop(&ss, &at, 4), 0);
	const uint32_t written[3] = {0, 0, 0};
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(e[i].id, i);
	assert_int_equal(vqs_vq_session_fill(&ss, (const struct vqs_elem *const *)pe, written, 3), 3);
	bool call;
	assert_int_equal(vqs_vq_session_end(&ss, &call), 3);
	assert_true(call); /* EVENT_IDX off, NO_INTERRUPT clear */
	assert_int_equal(c->r.used->idx, 3);
}

/* The avail index is read once per session, at begin: a chain published after it waits for the
 * next session, and the count begin returned bounds the pops. */
static void test_session_pops_no_further_than_begin_saw(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	fx_simple_chain(&c->r, 0, 8, true);
	struct iovec iov[2];
	struct vqs_elem e[2], *pe[2];
	elems_init(e, pe, iov, 2);
	struct vqs_pop_to at = {.base = e, .stride = sizeof(e[0])};
	struct vqs_vq_session ss;
	bool call;
	assert_int_equal(vqs_vq_session_begin(c->r.vq, &ss), 1);
	fx_simple_chain(&c->r, 1, 8, true);
	assert_int_equal(vqs_vq_session_pop(&ss, &at, 2), 1);
	assert_int_equal(e[0].id, 0);
	vqs_vq_session_end(&ss, &call);
	assert_int_equal(vqs_vq_session_begin(c->r.vq, &ss), 1);
	assert_int_equal(vqs_vq_session_pop(&ss, &at, 2), 1);
	assert_int_equal(e[0].id, 1);
	vqs_vq_session_end(&ss, &call);
}

/* A session of one pop: *has what its begin said, then the pop's result. The section is left
 * before the caller's checks, so that a failed one does not leave it open. */
static int begin_pop(struct vqs_vq *vq, const struct vqs_pop_to *at, unsigned max, int *has)
{
	struct vqs_vq_session ss;
	*has = vqs_vq_session_begin(vq, &ss);
	int got = *has > 0 ? vqs_vq_session_pop(&ss, at, max) : *has;
	vqs_vq_session_pause(&ss);
	return got;
}

/* Begin reads the avail index again only once the chains its last read saw are popped (Linux
 * vhost's rule): the driver writes that index on its CPU for every chain it adds, so a device
 * popping one chain a session would take its line away once a chain, and the driver's next
 * write would miss. A chain published meanwhile is not lost: the session after the last of the
 * others reads the index and finds it; a malformed index is found by that read. */
static void test_session_begin_reads_avail_idx_when_what_it_saw_is_popped(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	for (unsigned i = 0; i < 3; i++)
		fx_simple_chain(&c->r, i, 8, true);
	struct iovec iov[4];
	struct vqs_elem e[4], *pe[4];
	elems_init(e, pe, iov, 4);
	struct vqs_pop_to at = {.base = e, .stride = sizeof(e[0])};
	int has;
	assert_int_equal(begin_pop(c->r.vq, &at, 1, &has), 1);
	assert_int_equal(has, 3);
	fx_simple_chain(&c->r, 3, 8, true);
	fx_simple_chain(&c->r, 4, 8, true);
	/* two left of the three the last read saw: not read again */
	assert_int_equal(begin_pop(c->r.vq, &at, 4, &has), 2);
	assert_int_equal(has, 2);
	assert_int_equal(e[0].id, 1);
	assert_int_equal(e[1].id, 2);
	/* none left: read, and the two published meanwhile are there */
	assert_int_equal(vqs_vq_avail_count(c->r.vq), 2);
	assert_int_equal(begin_pop(c->r.vq, &at, 4, &has), 2);
	assert_int_equal(has, 2);
	assert_int_equal(e[0].id, 3);
	assert_int_equal(e[1].id, 4);
	/* a malformed index is found by the read after the chains the last one saw */
	fx_simple_chain(&c->r, 5, 8, true);
	assert_int_equal(vqs_vq_avail_count(c->r.vq), 1);
	fx_set_avail_idx(&c->r, (uint16_t)(c->r.avail_idx + NUM + 2));
	assert_int_equal(begin_pop(c->r.vq, &at, 4, &has), 1);
	assert_int_equal(has, 1);
	assert_int_equal(e[0].id, 5);
	assert_false(vqs_vq_is_broken(c->r.vq));
	assert_int_equal(begin_pop(c->r.vq, &at, 4, &has), -EIO);
	assert_int_equal(vqs_vq_error(c->r.vq), VQS_VQ_ERR_AVAIL_IDX);
}

/* The session's pop builds each chain in the element of its id, inside the caller's requests
 * (by_id, a stride apart), says which ids it popped in avail order, and leaves the other
 * requests alone; the error when the first chain breaks the queue. */
static void test_session_pop_into_scattered_elements(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	for (unsigned i = 0; i < 3; i++)
		fx_simple_chain(&c->r, 2 - i, 8, true);
	struct req {
		struct vqs_elem e;
		int other;
		struct iovec iov;
	} reqs[NUM];
	for (unsigned i = 0; i < NUM; i++) {
		reqs[i].e = (struct vqs_elem){.iov = &reqs[i].iov, .iov_cap = 1, .id = 0xffff};
		reqs[i].other = (int)i;
	}
	uint16_t ids[4];
	struct vqs_pop_to to = {.base = &reqs[0].e, .stride = sizeof(reqs[0]), .by_id = true,
				.ids = ids};
	struct vqs_vq_session ss;
	assert_int_equal(vqs_vq_session_begin(c->r.vq, &ss), 3);
	assert_int_equal(vqs_vq_session_pop(&ss, &to, 4), 3);
	vqs_vq_session_pause(&ss);
	for (unsigned i = 0; i < 3; i++) {
		assert_int_equal(ids[i], 2 - i);
		assert_int_equal(reqs[2 - i].e.id, 2 - i);
		assert_int_equal(reqs[2 - i].e.in_len, 8);
		assert_ptr_equal(reqs[2 - i].e.iov, &reqs[2 - i].iov);
	}
	for (unsigned i = 0; i < NUM; i++)
		assert_int_equal(reqs[i].other, (int)i);
	for (unsigned i = 3; i < NUM; i++)
		assert_int_equal(reqs[i].e.id, 0xffff);
	fx_publish(&c->r, NUM);
	assert_true(vqs_vq_session_begin(c->r.vq, &ss) > 0);
	assert_int_equal(vqs_vq_session_pop(&ss, &to, 4), -EIO);
	vqs_vq_session_pause(&ss);
	/* broken: begin says so, and the session's calls return it */
	assert_int_equal(vqs_vq_session_begin(c->r.vq, &ss), -EIO);
	assert_int_equal(vqs_vq_session_pop(&ss, &to, 4), -EIO);
	bool call = true;
	assert_int_equal(vqs_vq_session_end(&ss, &call), 0);
	assert_false(call);
}

/* The session's fill is n fills: entries written in the order given, and it stops at the first
 * refused one (returning how many went before it, or that one's error); a broken queue takes
 * none. */
static void test_session_fill_in_order_and_stops_at_a_refused_one(void **state)
{
	struct fx_ctx *c = fx_ctx_new(state, NUM, 0);
	struct iovec iov[4];
	struct vqs_elem e[4];
	for (unsigned i = 0; i < 4; i++) {
		fx_simple_chain(&c->r, i, 8, true);
		pop_ok(&c->r, &e[i], &iov[i], 1);
	}
	const struct vqs_elem *order[] = { &e[2], &e[0], &e[0], &e[3] };
	const uint32_t written[] = { 1, 2, 3, 4 };
	struct vqs_vq_session ss = {.vq = c->r.vq}; /* completes only: no begin */
	assert_int_equal(vqs_vq_session_fill(&ss, order, written, 4), 2); /* e0 twice: refused */
	assert_int_equal(vqs_vq_session_fill(&ss, order + 2, written + 2, 2), -EINVAL);
	const uint32_t too_much[] = { 9 };
	assert_int_equal(vqs_vq_session_fill(&ss, order + 3, too_much, 1), -EINVAL);
	const struct vqs_elem *rest[] = { &e[3], &e[1] };
	const uint32_t rest_written[] = { 4, 5 };
	assert_int_equal(vqs_vq_session_fill(&ss, rest, rest_written, 0), 0);
	assert_int_equal(vqs_vq_session_fill(&ss, rest, rest_written, 2), 2);
	assert_int_equal(c->r.used->idx, 0); /* nothing visible before end */
	bool call;
	assert_int_equal(vqs_vq_session_end(&ss, &call), 4);
	const uint16_t ids[] = { 2, 0, 3, 1 };
	const uint32_t lens[] = { 1, 2, 4, 5 };
	for (unsigned i = 0; i < 4; i++) {
		assert_int_equal(c->r.used->ring[i].id, ids[i]);
		assert_int_equal(c->r.used->ring[i].len, lens[i]);
	}
	/* A head outside the table breaks the queue; nothing is filled after that. */
	fx_simple_chain(&c->r, 4, 8, true);
	pop_ok(&c->r, &e[0], &iov[0], 1);
	fx_publish(&c->r, NUM);
	assert_int_equal(fx_pop(c->r.vq, &e[1], &iov[1], 1), -EIO);
	ss = (struct vqs_vq_session){.vq = c->r.vq};
	assert_int_equal(vqs_vq_session_fill(&ss, order + 1, written, 1), -EIO);
	assert_int_equal(vqs_vq_session_end(&ss, &call), 0);
	assert_int_equal(vqs_vq_flush(c->r.vq), 0);
}

/* Round trip with the library's driver ring: data flows, lengths and tokens come back. */
static void test_device_round_trip_with_driver_ring(void **state)
{
	*state = NULL;
	struct vqs_pair p;
	assert_int_equal(vqs_pair_init(&p, 16, F_EVT | F_IND, 0x200000, 1 << 20), 0);
	uint64_t out = vqs_gmem_alloc(p.gmem, 32, 8), in = vqs_gmem_alloc(p.gmem, 64, 8);
	memcpy(vqs_gmem_host(p.gmem, out, 5), "hello", 5);
	struct vqs_drv_buf bufs[2] = {{out, 5}, {in, 64}};
	int tokens[2];
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(vqs_drv_add(p.drv, bufs, 1, 1, &tokens[i], i == 1), 0);
	vqs_drv_kick_prepare(p.drv);
	for (unsigned i = 0; i < 2; i++) {
		struct iovec iov[4];
		struct vqs_elem e;
		assert_int_equal(fx_pop(p.dev, &e, iov, 4), 0);
		assert_int_equal(e.out_len, 5);
		assert_int_equal(e.in_len, 64);
		assert_memory_equal(iov[0].iov_base, "hello", 5);
		memcpy(iov[1].iov_base, "world", 5);
		assert_int_equal(vqs_vq_fill(p.dev, &e, 5), 0);
	}
	assert_int_equal(vqs_vq_flush(p.dev), 2);
	assert_true(vqs_vq_need_call(p.dev));
	for (unsigned i = 0; i < 2; i++) {
		uint32_t len = 0;
		assert_ptr_equal(vqs_drv_get_used(p.drv, &len), &tokens[i]);
		assert_int_equal(len, 5);
	}
	assert_memory_equal(vqs_gmem_host(p.gmem, in, 5), "world", 5);
	vqs_pair_fini(&p);
}

#define T(f) cmocka_unit_test_teardown(f, fx_ctx_teardown)
int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_device_readable_and_writable_iovecs_follow_descriptor_flags),
		T(test_device_used_len_cannot_exceed_writable_bytes),
		T(test_device_sets_used_len_before_used_idx),
		T(test_device_used_ring_wraps_modulo_queue_size_and_2_16),
		T(test_device_completes_out_of_order),
		T(test_device_no_event_idx_notifies_unless_no_interrupt),
		T(test_device_event_idx_notifies_when_passing_used_event),
		T(test_device_event_idx_keeps_used_flags_zero),
		T(test_device_no_event_idx_sets_used_flags_0_or_1),
		T(test_device_handles_spurious_notification),
		T(test_device_ignores_write_flag_on_indirect_descriptor),
		T(test_device_snapshot_is_not_affected_by_later_rewrites),
		T(test_session_begin_counts_and_pop_takes_what_is_there),
		T(test_device_two_descriptor_chains_as_the_walk_builds_them),
		T(test_session_pops_no_further_than_begin_saw),
		T(test_session_begin_reads_avail_idx_when_what_it_saw_is_popped),
		T(test_session_pop_into_scattered_elements),
		T(test_session_fill_in_order_and_stops_at_a_refused_one),
		T(test_device_round_trip_with_driver_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
