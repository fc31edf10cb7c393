/* SPDX-License-Identifier: MIT */
/*
 * Chains longer than the caller's iovec storage: legal (up to the queue size, 2.7.5.3.1 / 2.8.18),
 * so they must be served, never break the queue. A Linux guest sends skbs of 17 fragments plus a
 * header, a buffer that crosses from one memory region into the next takes two iovecs, and QEMU
 * accepts chains up to the queue size. Direct and indirect, split and packed, with buffers in two
 * adjacent regions and across their border; and through the scheduler, whose requests carry 16
 * iovecs by default.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "layout_fixture.h"
#include "pair.h"

#define NUM 256
#define CAP 16 /* the scheduler's default iovecs per request */
#define BORDER LFX_BORDER
#define B_SIZE (1u << 20)
#define TAIL 4096 /* the last bytes of the first region, where its buffers lie */

/* The two regions and a ring of one layout (INDIRECT_DESC negotiated), an indirect table. */
struct ctx {
	struct lfx l;
	uint64_t table; /* an indirect table of NUM descriptors */
};

/* What the driver put in guest memory for readable bytes, by address. */
static uint8_t pattern(uint64_t gpa) { return (uint8_t)(gpa * 131 + (gpa >> 9)); }

static int setup(void **state, bool packed)
{
	struct ctx *c = test_calloc(1, sizeof(*c));
	lfx_init(&c->l, packed, NUM, VQS_BIT(VQS_F_INDIRECT_DESC), B_SIZE);
	for (uint64_t g = BORDER - TAIL; g < BORDER + B_SIZE; g++)
		*lfx_host(&c->l, g) = pattern(g);
	c->table = tmem_alloc(&c->l.m, NUM * 16, 16);
	*state = c;
	return 0;
}

static int setup_split(void **state) { return setup(state, false); }
static int setup_packed(void **state) { return setup(state, true); }

static int teardown(void **state)
{
	struct ctx *c = *state;
	lfx_fini(&c->l);
	test_free(c);
	return 0;
}

struct buf {
	uint64_t gpa;
	uint32_t len;
	bool write;
};

/*
 * The k-th of n buffers: the last quarter writable (each its own bytes in the second region), the
 * readable ones in turn across the border (two iovecs), at the end of the first region, or in the
 * second. salt moves them so that two chains in flight do not share writable bytes.
 */
static struct buf buf_of(unsigned k, unsigned n, unsigned salt)
{
	if (k >= n - (n + 3) / 4)
		return (struct buf){BORDER + 0x10000 + salt * 0x10000 + k * 64, 48, true};
	uint32_t len = 16 + k % 32;
	switch (k % 3) {
	case 0:
		return (struct buf){BORDER - 8 - 8 * (k % 4), 40, false};
	case 1:
		return (struct buf){BORDER - TAIL + (k * 13) % 3000, len, false};
	default:
		return (struct buf){BORDER + 4096 + k * 64, len, false};
	}
}

/* Offer a chain of n buffers; a direct split chain takes descriptors first.. first + n - 1, a
 * packed one has buffer id `id`. Returns the split head (or the packed id). */
static uint16_t offer(struct ctx *c, unsigned n, bool indirect, unsigned first, uint16_t id,
		      unsigned salt)
{
	struct vqs_vring_desc *st = tmem_host(&c->l.m, c->table, NUM * 16);
	struct vqs_vring_packed_desc *pt = (struct vqs_vring_packed_desc *)st;
	struct pfx_desc pd[NUM];
	for (unsigned k = 0; k < n; k++) {
		struct buf b = buf_of(k, n, salt);
		uint16_t wf = b.write ? VQS_VRING_DESC_F_WRITE : 0;
		uint16_t next = k + 1 < n ? VQS_VRING_DESC_F_NEXT : 0;
		if (c->l.packed && indirect)
			pt[k] = (struct vqs_vring_packed_desc){.addr = b.gpa, .len = b.len, .flags = wf};
		else if (c->l.packed)
			pd[k] = (struct pfx_desc){.addr = b.gpa, .len = b.len, .id = id, .flags = wf};
		else if (indirect)
			st[k] = (struct vqs_vring_desc){b.gpa, b.len, (uint16_t)(wf | next),
							(uint16_t)(k + 1)};
		else
			fx_desc(&c->l.split, first + k, b.gpa, b.len, (uint16_t)(wf | next),
				(uint16_t)(first + k + 1));
	}
	if (c->l.packed) {
		struct pfx_desc ind = {c->table, n * 16, id, VQS_VRING_DESC_F_INDIRECT};
		pfx_chain(&c->l.pk, indirect ? &ind : pd, indirect ? 1 : n);
		return id;
	}
	if (indirect)
		fx_desc(&c->l.split, first, c->table, n * 16, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->l.split, (uint16_t)first);
	return (uint16_t)first;
}

/* e is the chain offer(n, salt) made: every iovec where its buffer lies (two for one across the
 * border), readable bytes as the driver wrote them; then write the writable ones through it. */
static void check_elem(struct ctx *c, const struct vqs_elem *e, unsigned n, unsigned salt)
{
	unsigned i = 0;
	uint32_t out_len = 0, in_len = 0;
	for (unsigned k = 0; k < n; k++) {
		struct buf b = buf_of(k, n, salt);
		for (uint64_t g = b.gpa, end = b.gpa + b.len; g < end; i++) {
			uint64_t piece = g < BORDER && end > BORDER ? BORDER - g : end - g;
			assert_true(i < (unsigned)e->out_num + e->in_num);
			assert_true(i < e->out_num ? !b.write : b.write);
			assert_ptr_equal(e->iov[i].iov_base, lfx_host(&c->l, g));
			assert_int_equal(e->iov[i].iov_len, piece);
			for (uint64_t j = 0; j < piece && !b.write; j++)
				assert_int_equal(((uint8_t *)e->iov[i].iov_base)[j], pattern(g + j));
			if (b.write)
				memset(e->iov[i].iov_base, (int)(0xc0 ^ k), piece);
			g += piece;
		}
		*(b.write ? &in_len : &out_len) += b.len;
	}
	assert_int_equal(i, e->out_num + e->in_num);
	assert_int_equal(e->out_len, out_len);
	assert_int_equal(e->in_len, in_len);
	for (unsigned k = 0; k < n; k++) {
		struct buf b = buf_of(k, n, salt);
		for (uint32_t j = 0; j < b.len && b.write; j++)
			assert_int_equal(lfx_host(&c->l, b.gpa)[j], (uint8_t)(0xc0 ^ k));
	}
}

/* Complete e (all its writable bytes) and check the driver sees it with id and length. */
static void complete(struct ctx *c, const struct vqs_elem *e)
{
	assert_int_equal(vqs_vq_fill(c->l.vq, e, e->in_len), 0);
	assert_int_equal(vqs_vq_flush(c->l.vq), 1);
	uint16_t id;
	uint32_t len;
	if (c->l.packed) {
		assert_true(pfx_get_used(&c->l.pk, e->ndescs, &id, &len));
	} else {
		uint16_t u = (uint16_t)(fx_used_idx(&c->l.split) - 1);
		id = (uint16_t)c->l.split.used->ring[u & (NUM - 1)].id;
		len = c->l.split.used->ring[u & (NUM - 1)].len;
	}
	assert_int_equal(id, e->id);
	assert_int_equal(len, e->in_len);
}

/* 17 (an skb of 17 fragments and a header is 18), 128 and the queue size, direct and indirect,
 * each popped into the scheduler's default storage of 16 iovecs. */
static void legal_long_chains_are_served(void **state)
{
	struct ctx *c = *state;
	static const unsigned lens[] = {17, 18, 128, NUM};
	for (unsigned ind = 0; ind < 2; ind++) {
		for (unsigned l = 0; l < sizeof(lens) / sizeof(lens[0]); l++) {
			unsigned n = lens[l];
			uint16_t id = offer(c, n, ind, 0, (uint16_t)(l + 1), 0);
			struct iovec iov[CAP];
			struct vqs_elem e;
			assert_int_equal(lfx_pop(&c->l, &e, iov, CAP), 0);
			assert_int_equal(e.id, id);
			assert_int_equal(e.ndescs, c->l.packed && ind ? 1 : n);
			check_elem(c, &e, n, 0);
			complete(c, &e);
			assert_false(vqs_vq_is_broken(c->l.vq));
		}
	}
}

/* A chain that fits its storage stays in it; the long one beside it (same batch) does not
 * disturb it. */
static void short_and_long_chains_in_one_batch(void **state)
{
	struct ctx *c = *state;
	offer(c, 3, false, 0, 1, 0);
	offer(c, 40, false, 3, 2, 1);
	offer(c, 2, true, 43, 3, 2);
	struct iovec iov[3][CAP];
	struct vqs_elem e[3];
	for (unsigned i = 0; i < 3; i++)
		e[i] = (struct vqs_elem){.iov = iov[i], .iov_cap = CAP};
	struct vqs_vq_session ss;
	/* split: the avail index; packed: room for chains, at least those there */
	int has = vqs_vq_session_begin(c->l.vq, &ss);
	assert_true(c->l.packed ? has >= 3 : has == 3);
	int n = vqs_vq_session_pop(&ss, &(struct vqs_pop_to){.base = e, .stride = sizeof(e[0])}, 3);
	vqs_vq_session_pause(&ss);
	assert_int_equal(n, 3);
	assert_ptr_equal(e[0].iov, iov[0]);
	assert_ptr_equal(e[2].iov, iov[2]);
	check_elem(c, &e[0], 3, 0);
	check_elem(c, &e[1], 40, 1);
	check_elem(c, &e[2], 2, 2);
	for (unsigned i = 0; i < 3; i++)
		complete(c, &e[i]);
}

/*
 * Long chains share the queue's area for them while in flight; one that does not fit beside those
 * still held waits (-EBUSY, nothing consumed, queue intact) until they are filled or given back.
 * The device limit (max_iov, here 64) sizes the area.
 */
static void long_chains_in_flight_make_the_next_wait(void **state)
{
	struct ctx *c = *state;
	struct vqs_vq_config cfg;
	lfx_config(&c->l, &cfg);
	cfg.max_iov = 64;
	assert_int_equal(vqs_vq_configure(c->l.vq, &cfg), 0);
	/* 40 buffers, 10 across the border: 50 iovecs each */
	offer(c, 40, false, 0, 1, 0);
	offer(c, 40, false, 40, 2, 1);
	struct iovec iov[2][CAP];
	struct vqs_elem a, b;
	assert_int_equal(lfx_pop(&c->l, &a, iov[0], CAP), 0);
	assert_int_equal(lfx_pop(&c->l, &b, iov[1], CAP), -EBUSY);
	assert_false(vqs_vq_is_broken(c->l.vq));
	check_elem(c, &a, 40, 0);
	/* given back, then popped again: the area is free again */
	assert_int_equal(vqs_vq_unpop(c->l.vq, &a, 1), 0);
	assert_int_equal(lfx_pop(&c->l, &a, iov[0], CAP), 0);
	check_elem(c, &a, 40, 0);
	assert_int_equal(lfx_pop(&c->l, &b, iov[1], CAP), -EBUSY);
	complete(c, &a);
	assert_int_equal(lfx_pop(&c->l, &b, iov[1], CAP), 0);
	check_elem(c, &b, 40, 1);
	complete(c, &b);
	/* beyond the device limit is the guest's fault */
	offer(c, 60, false, 0, 3, 0);
	assert_int_equal(lfx_pop(&c->l, &a, iov[0], CAP), -EIO);
	assert_int_equal(vqs_vq_error(c->l.vq), VQS_VQ_ERR_IOV_LIMIT);
}

/* Through the scheduler with its default 16 iovecs per request: the chain of 17 readable buffers
 * that stopped the queue with iov-limit is served, and so is one of the queue size. */
static void scheduler_serves_chains_longer_than_a_request(void **state)
{
	(void)state;
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = vqs_test_complete_all;
	struct vqs_served_pair s;
	assert_int_equal(vqs_served_pair_init(&s, NUM, 0, 0x100000, 4u << 20, VQS_POLICY_DEDICATED,
					      &o),
			 0);
	uint64_t data = vqs_gmem_alloc(s.p.gmem, NUM * 64, 64);
	struct vqs_drv_buf b[NUM];
	for (unsigned i = 0; i < NUM; i++)
		b[i] = (struct vqs_drv_buf){data + i * 64, 64};
	assert_int_equal(vqs_pair_round_trip(&s.p, s.kick, s.call, b, 17, 0), 0);
	assert_int_equal(vqs_pair_round_trip(&s.p, s.kick, s.call, b, 17, 1), 0);
	assert_int_equal(vqs_pair_round_trip(&s.p, s.kick, s.call, b, NUM - 1, 1), 0);
	assert_false(vqs_vq_is_broken(s.p.dev));
	assert_int_equal(vqs_served_pair_fini(&s), 0);
}

#define ON(layout, f) {#f " (" #layout ")", f, setup_##layout, teardown, NULL}
int main(void)
{
	const struct CMUnitTest tests[] = {
		ON(split, legal_long_chains_are_served),
		ON(packed, legal_long_chains_are_served),
		ON(split, short_and_long_chains_in_one_batch),
		ON(packed, short_and_long_chains_in_one_batch),
		ON(split, long_chains_in_flight_make_the_next_wait),
		ON(packed, long_chains_in_flight_make_the_next_wait),
		cmocka_unit_test(scheduler_serves_chains_longer_than_a_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
