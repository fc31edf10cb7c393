/* SPDX-License-Identifier: MIT */
/*
 * One-descriptor chains, the shape nearly every network buffer has, and two-descriptor chains
 * (a request and its response buffer), on both layouts: the pop builds them without a chain
 * walk when the buffers lie in the region the previous one was in, and must give exactly the
 * element the walk gives in every other case (another region, across two regions, zero length,
 * no iovec storage of the caller's, two writable buffers) and break the queue for the same
 * malformed chains. A guest whose buffers alternate between two regions keeps them on the
 * straight line too (the pop's second window: the region hinted before), counted by the queue's
 * walks; a buffer across two regions, out of every region, or in a region replaced since still
 * gets the walk's element or reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "layout_fixture.h"
/* struct vqs_vq, for its count of chains left to the general walk */
#include "ring/vq_internal.h"

#define NUM LFX_NUM
#define BORDER LFX_BORDER

/* Offer a chain of one descriptor with buffer id (split: head) id. */
static void offer(struct lfx *c, uint16_t id, uint64_t addr, uint32_t len, bool write)
{
	uint16_t flags = write ? VQS_VRING_DESC_F_WRITE : 0;
	if (c->packed) {
		struct pfx_desc d = {.addr = addr, .len = len, .id = id, .flags = flags};
		pfx_chain(&c->pk, &d, 1);
	} else {
		fx_desc(&c->split, id, addr, len, flags, 0);
		fx_publish(&c->split, id);
	}
}

/* Pop the one chain offered and check the element field by field. */
static void expect(struct lfx *c, uint16_t id, bool write, const uint64_t *gpa, const size_t *len,
		   unsigned niov)
{
	struct iovec iov[4];
	struct vqs_elem e;
	memset(iov, 0xa5, sizeof(iov));
	assert_int_equal(lfx_pop(c, &e, iov, 4), 0);
	size_t total = 0;
	for (unsigned i = 0; i < niov; i++) {
		assert_ptr_equal(iov[i].iov_base, lfx_host(c, gpa[i]));
		assert_int_equal(iov[i].iov_len, len[i]);
		total += len[i];
	}
	assert_int_equal(e.id, id);
	assert_int_equal(e.ndescs, 1);
	assert_int_equal(e.out_num, write ? 0 : niov);
	assert_int_equal(e.in_num, write ? niov : 0);
	assert_int_equal(e.out_len, write ? 0 : total);
	assert_int_equal(e.in_len, write ? total : 0);
	assert_false(vqs_vq_is_broken(c->vq));
}

static void one_descriptor_chains_in_every_shape(void **state)
{
	struct lfx *c = *state;
	/* in the first region, then the second (the region of the previous buffer is not it),
	 * then in the second again */
	uint64_t a = FX_GPA_BASE + 0x800, b = BORDER + 0x100;
	size_t l64 = 64, l32 = 32;
	offer(c, 0, a, 64, false);
	expect(c, 0, false, &a, &l64, 1);
	offer(c, 1, b, 32, true);
	expect(c, 1, true, &b, &l32, 1);
	offer(c, 2, b, 64, false);
	expect(c, 2, false, &b, &l64, 1);
	/* across the border: one descriptor, two iovecs */
	uint64_t across[2] = {BORDER - 16, BORDER};
	size_t halves[2] = {16, 16};
	offer(c, 3, BORDER - 16, 32, true);
	expect(c, 3, true, across, halves, 2);
	/* in the region of the previous buffer, as the rest: zero length, a chain with no
	 * iovec; */
	offer(c, 4, b, 64, true);
	expect(c, 4, true, &b, &l64, 1);
	offer(c, 5, b, 0, true);
	expect(c, 5, true, NULL, NULL, 0);
	/* no iovec storage: built in the queue's long-chain area, the same element */
	offer(c, 6, b, 16, false);
	struct iovec iov[1];
	struct vqs_elem e;
	assert_int_equal(lfx_pop(c, &e, iov, 0), 0);
	assert_ptr_not_equal(e.iov, iov);
	assert_ptr_equal(e.iov[0].iov_base, lfx_host(c, b));
	assert_int_equal(e.iov[0].iov_len, 16);
	assert_int_equal(e.id, 6);
	assert_int_equal(e.out_num, 1);
	assert_int_equal(e.out_len, 16);
	assert_false(vqs_vq_is_broken(c->vq));
}

/* Starts in the region of the previous buffer and ends past the mapped memory: broken with the
 * address reason. */
static void one_descriptor_past_mapped_memory_breaks_the_queue(void **state)
{
	struct lfx *c = *state;
	uint64_t b = BORDER + 0x100;
	size_t l8 = 8;
	offer(c, 0, b, 8, false);
	expect(c, 0, false, &b, &l8, 1);
	offer(c, 1, BORDER + (1 << 16) - 8, 16, false);
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(lfx_pop(c, &e, iov, 4), -EIO);
	assert_int_equal(vqs_vq_error(c->vq), VQS_VQ_ERR_ADDR);
}

/* At the edges of the region the previous buffer was in: a zero-length buffer at its first
 * byte (no iovec), a buffer ending at its last byte, one starting one byte below it (in the
 * first region: two iovecs across the border). */
static void one_descriptor_at_the_region_edges(void **state)
{
	struct lfx *c = *state;
	uint64_t b = BORDER + 0x100, first = BORDER, tail = BORDER + (1 << 16) - 32;
	size_t l8 = 8, l32 = 32;
	offer(c, 0, b, 8, false);
	expect(c, 0, false, &b, &l8, 1);
	offer(c, 1, first, 0, true);
	expect(c, 1, true, NULL, NULL, 0);
	offer(c, 2, tail, 32, true);
	expect(c, 2, true, &tail, &l32, 1);
	uint64_t across[2] = {BORDER - 1, BORDER};
	size_t parts[2] = {1, 7};
	offer(c, 3, BORDER - 1, 8, false);
	expect(c, 3, false, across, parts, 2);
}

/* Offer a chain of two descriptors with buffer id (split: head) id < NUM / 2; split puts the
 * second at id + NUM / 2. */
static void offer2(struct lfx *c, uint16_t id, uint64_t a0, uint32_t l0, bool w0, uint64_t a1,
		   uint32_t l1, bool w1)
{
	uint16_t f0 = w0 ? VQS_VRING_DESC_F_WRITE : 0, f1 = w1 ? VQS_VRING_DESC_F_WRITE : 0;
	if (c->packed) {
		struct pfx_desc d[2] = {{.addr = a0, .len = l0, .id = id, .flags = f0},
					{.addr = a1, .len = l1, .id = id, .flags = f1}};
		pfx_chain(&c->pk, d, 2);
	} else {
		fx_desc(&c->split, id, a0, l0, (uint16_t)(f0 | VQS_VRING_DESC_F_NEXT),
			(uint16_t)(id + NUM / 2));
		fx_desc(&c->split, (uint16_t)(id + NUM / 2), a1, l1, f1, 0);
		fx_publish(&c->split, id);
	}
}

/* Pop the two-descriptor chain offered: its iovecs gpa/len[0..out_num + in_num), readable
 * first, and the totals. */
static void expect2(struct lfx *c, uint16_t id, const uint64_t *gpa, const size_t *len,
		    unsigned out_num, unsigned in_num)
{
	struct iovec iov[4];
	struct vqs_elem e;
	memset(iov, 0xa5, sizeof(iov));
	assert_int_equal(lfx_pop(c, &e, iov, 4), 0);
	size_t out_len = 0, in_len = 0;
	for (unsigned i = 0; i < out_num + in_num; i++) {
		assert_ptr_equal(iov[i].iov_base, lfx_host(c, gpa[i]));
		assert_int_equal(iov[i].iov_len, len[i]);
		*(i < out_num ? &out_len : &in_len) += len[i];
	}
	assert_ptr_equal(e.iov, iov);
	assert_int_equal(e.id, id);
	assert_int_equal(e.ndescs, 2);
	assert_int_equal(e.out_num, out_num);
	assert_int_equal(e.in_num, in_num);
	assert_int_equal(e.out_len, out_len);
	assert_int_equal(e.in_len, in_len);
	assert_false(vqs_vq_is_broken(c->vq));
}

static void two_descriptor_chains_in_every_shape(void **state)
{
	struct lfx *c = *state;
	uint64_t a = FX_GPA_BASE + 0x800, b = BORDER + 0x100;
	/* readable then writable, in the first region, then in the second */
	uint64_t rw[2] = {a, a + 0x100};
	size_t rw_len[2] = {16, 48};
	offer2(c, 0, rw[0], 16, false, rw[1], 48, true);
	expect2(c, 0, rw, rw_len, 1, 1);
	uint64_t rw2[2] = {b, b + 0x100};
	offer2(c, 1, rw2[0], 16, false, rw2[1], 48, true);
	expect2(c, 1, rw2, rw_len, 1, 1);
	/* two readable, two writable */
	offer2(c, 2, rw2[0], 16, false, rw2[1], 48, false);
	expect2(c, 2, rw2, rw_len, 2, 0);
	offer2(c, 3, rw2[0], 16, true, rw2[1], 48, true);
	expect2(c, 3, rw2, rw_len, 0, 2);
}

static void two_descriptor_chains_with_zero_length_or_two_regions(void **state)
{
	struct lfx *c = *state;
	uint64_t a = FX_GPA_BASE + 0x800, b = BORDER + 0x100;
	uint64_t rw2[2] = {b, b + 0x100};
	size_t rw_len[2] = {16, 48};
	/* a writable buffer of zero length: one iovec */
	offer2(c, 0, rw2[0], 16, false, rw2[1], 0, true);
	expect2(c, 0, rw2, rw_len, 1, 0);
	/* a readable buffer of zero length first */
	offer2(c, 1, rw2[0], 0, false, rw2[1], 48, true);
	expect2(c, 1, &rw2[1], &rw_len[1], 0, 1);
	/* one buffer in each region (the window is the second's) */
	uint64_t split_gpa[2] = {a, b};
	offer2(c, 2, a, 16, false, b, 48, true);
	expect2(c, 2, split_gpa, rw_len, 1, 1);
	/* the largest chain total, 2^32 - 1 bytes, is no error of its own: here it lies past
	 * the mapped memory */
	offer2(c, 3, b, 1, false, b + 1, UINT32_MAX - 1, true);
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(lfx_pop(c, &e, iov, 4), -EIO);
	assert_int_equal(vqs_vq_error(c->vq), VQS_VQ_ERR_ADDR);
}

/* A writable buffer before a readable one, both in the region of the previous buffer. */
static void two_descriptor_chain_out_of_order_breaks_the_queue(void **state)
{
	struct lfx *c = *state;
	uint64_t b = BORDER + 0x100;
	size_t l8 = 8;
	offer(c, 0, b, 8, false);
	expect(c, 0, false, &b, &l8, 1);
	offer2(c, 1, b, 16, true, b + 0x100, 48, false);
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(lfx_pop(c, &e, iov, 4), -EIO);
	assert_int_equal(vqs_vq_error(c->vq), VQS_VQ_ERR_WRITE_ORDER);
}

/* 8 bytes and 2^32 - 8: one more than a chain may carry (2.7.5), judged before the second
 * buffer's address. */
static void two_descriptor_chain_over_4g_breaks_the_queue(void **state)
{
	struct lfx *c = *state;
	uint64_t b = BORDER + 0x100;
	size_t l8 = 8;
	offer(c, 0, b, 8, false);
	expect(c, 0, false, &b, &l8, 1);
	offer2(c, 1, b, 8, false, b + 0x100, UINT32_MAX - 7, true);
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(lfx_pop(c, &e, iov, 4), -EIO);
	assert_int_equal(vqs_vq_error(c->vq), VQS_VQ_ERR_CHAIN_BYTES);
}

/* A chain of n descriptors (buffer id, split: head, id; split puts them at id, id + 1, ...). */
static void offer_n(struct lfx *c, uint16_t id, const uint64_t *addr, const uint32_t *len,
		    const bool *write, unsigned n)
{
	struct pfx_desc d[4];
	for (unsigned k = 0; k < n; k++) {
		uint16_t f = write[k] ? VQS_VRING_DESC_F_WRITE : 0;
		if (c->packed)
			d[k] = (struct pfx_desc){
				.addr = addr[k], .len = len[k], .id = id, .flags = f};
		else
			fx_desc(&c->split, id + k, addr[k], len[k],
				(uint16_t)(f | (k + 1 < n ? VQS_VRING_DESC_F_NEXT : 0)),
				(uint16_t)(k + 1 < n ? id + k + 1 : 0));
	}
	if (c->packed)
		pfx_chain(&c->pk, d, n);
	else
		fx_publish(&c->split, id);
}

/* Chains of every shape one after another, popped in one batch: each element is the one a pop
 * of that chain alone gives (the pop moves between its one- and two-descriptor runs and the
 * general walk within the batch, handing over what it read). */
static void shapes_mixed_in_one_batch(void **state)
{
	struct lfx *c = *state;
	uint64_t a = FX_GPA_BASE + 0x800;
	static const struct {
		uint16_t id;
		unsigned n;
		uint64_t off[3];
		uint32_t len[3];
		bool write[3];
		unsigned out_num, in_num;
	} ch[] = {
		{0, 1, {0}, {64}, {false}, 1, 0},                     /* one readable */
		{1, 2, {0x100, 0x200}, {16, 48}, {false, true}, 1, 1}, /* a pair */
		{3, 1, {0x300}, {32}, {true}, 0, 1},                   /* one writable */
		{4, 3, {0x400, 0x500, 0x600}, {8, 8, 8}, {false, true, true}, 1, 2}, /* walk */
		{7, 1, {0}, {32}, {true}, 0, 2}, /* across the border: walk, two iovecs */
	};
	const unsigned nch = sizeof(ch) / sizeof(ch[0]);
	for (unsigned i = 0; i < nch; i++) {
		uint64_t addr[3];
		for (unsigned k = 0; k < ch[i].n; k++)
			addr[k] = i == nch - 1 ? BORDER - 16 : a + ch[i].off[k];
		offer_n(c, ch[i].id, addr, ch[i].len, ch[i].write, ch[i].n);
	}
	struct iovec iov[8][4];
	struct vqs_elem e[8];
	for (unsigned i = 0; i < 8; i++)
		e[i] = (struct vqs_elem){.iov = iov[i], .iov_cap = 4};
	struct vqs_vq_session ss;
	bool call;
	assert_true(vqs_vq_session_begin(c->vq, &ss) > 0);
	struct vqs_pop_to at = {.base = e, .stride = sizeof(e[0])};
	assert_int_equal(vqs_vq_session_pop(&ss, &at, 8), (int)nch);
	for (unsigned i = 0; i < nch; i++) {
		assert_int_equal(e[i].id, ch[i].id);
		assert_int_equal(e[i].ndescs, ch[i].n);
		assert_int_equal(e[i].out_num, ch[i].out_num);
		assert_int_equal(e[i].in_num, ch[i].in_num);
		unsigned niov = ch[i].out_num + ch[i].in_num;
		for (unsigned k = 0; k < niov && i < nch - 1; k++) {
			assert_ptr_equal(e[i].iov[k].iov_base, lfx_host(c, a + ch[i].off[k]));
			assert_int_equal(e[i].iov[k].iov_len, ch[i].len[k]);
		}
	}
	assert_ptr_equal(e[nch - 1].iov[0].iov_base, lfx_host(c, BORDER - 16));
	assert_ptr_equal(e[nch - 1].iov[1].iov_base, lfx_host(c, BORDER));
	vqs_vq_session_end(&ss, &call);
	assert_false(vqs_vq_is_broken(c->vq));
}

/* Pops of one chain each, the shape changing from pop to pop: a pop starts in the run of the
 * shape the pop before ended with (both layouts), so each shape here follows the other; each
 * element is the one the walk gives, and a head offered again while in flight after a pair still
 * breaks the queue. */
static void shapes_alternating_across_pops(void **state)
{
	struct lfx *c = *state;
	uint64_t a = FX_GPA_BASE + 0x800;
	uint64_t rw[2] = {a, a + 0x100}, one = a + 0x200;
	size_t rw_len[2] = {16, 48}, one_len = 8;
	for (uint16_t id = 0; id < 4; id += 2) {
		offer2(c, id, rw[0], 16, false, rw[1], 48, true);
		expect2(c, id, rw, rw_len, 1, 1);
		offer(c, (uint16_t)(id + 1), one, 8, id != 0);
		expect(c, (uint16_t)(id + 1), id != 0, &one, &one_len, 1);
	}
	offer2(c, 0, rw[0], 16, false, rw[1], 48, true); /* head 0: popped, not filled */
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(lfx_pop(c, &e, iov, 4), -EIO);
	assert_int_equal(vqs_vq_error(c->vq), VQS_VQ_ERR_BUFFER_ID);
}

/* Chains the pop has left to the general walk since the queue was created. */
static uint64_t walks(const struct lfx *c)
{
	return c->vq->walks;
}

/* Pop the n chains offered (n <= NUM) in one session into e[0..n), each with 4 iovecs of
 * storage iov[k], fill them (nothing written) and end it. */
static void pop_all(struct lfx *c, struct vqs_elem *e, struct iovec (*iov)[4], unsigned n)
{
	const struct vqs_elem *fill[NUM];
	uint32_t written[NUM] = {0};
	for (unsigned k = 0; k < n; k++) {
		e[k] = (struct vqs_elem){.iov = iov[k], .iov_cap = 4};
		fill[k] = &e[k];
	}
	struct vqs_vq_session ss;
	bool call;
	assert_true(vqs_vq_session_begin(c->vq, &ss) > 0);
	struct vqs_pop_to at = {.base = e, .stride = sizeof(e[0])};
	assert_int_equal(vqs_vq_session_pop(&ss, &at, n), (int)n);
	assert_int_equal(vqs_vq_session_fill(&ss, fill, written, n), (int)n);
	vqs_vq_session_end(&ss, &call);
	assert_false(vqs_vq_is_broken(c->vq));
}

/* A buffer of the chain popped as e: iovec k is len bytes at gpa. */
static void expect_iov(struct lfx *c, const struct vqs_elem *e, unsigned k, uint64_t gpa,
		       size_t len)
{
	assert_ptr_equal(e->iov[k].iov_base, lfx_host(c, gpa));
	assert_int_equal(e->iov[k].iov_len, len);
}

/* Chains 0 and 1, 8 readable bytes in the first region and in the second: popped, they aim the
 * windows at both. */
static void offer_both(struct lfx *c)
{
	offer(c, 0, FX_GPA_BASE + 0x800, 8, false);
	offer(c, 1, BORDER + 0x100, 8, false);
}

/* A chain in each region (hints on both), then a chain of one buffer len bytes at addr that no
 * region holds whole: popped in one session, the first `good` come out (2, or 1 when the second
 * region is gone) and the next breaks the queue with the address reason. */
static void expect_addr_break(struct lfx *c, uint64_t addr, uint32_t len, int good)
{
	struct iovec iov[3][4];
	struct vqs_elem e[3];
	offer_both(c);
	offer(c, 2, addr, len, true);
	for (unsigned i = 0; i < 3; i++)
		e[i] = (struct vqs_elem){.iov = iov[i], .iov_cap = 4};
	struct vqs_vq_session ss;
	bool call;
	assert_true(vqs_vq_session_begin(c->vq, &ss) > 0);
	struct vqs_pop_to at = {.base = e, .stride = sizeof(e[0])};
	assert_int_equal(vqs_vq_session_pop(&ss, &at, 3), good);
	assert_int_equal(vqs_vq_session_pop(&ss, &at, 1), -EIO);
	vqs_vq_session_end(&ss, &call);
	assert_int_equal(vqs_vq_error(c->vq), VQS_VQ_ERR_ADDR);
}

/* One-descriptor chains alternating between the two regions in one batch, then pairs whose two
 * buffers lie in different regions: after the first chain in the second region (its walk moves
 * the hint there, and the first region becomes the second window) none leaves the straight
 * line but the first pair (split starts a batch in the run of the shape before). */
static void regions_alternating_in_one_batch_stay_on_the_straight_line(void **state)
{
	struct lfx *c = *state;
	uint64_t a = FX_GPA_BASE + 0x800, b = BORDER + 0x100;
	struct iovec iov[NUM][4];
	struct vqs_elem e[NUM];
	uint64_t before = walks(c);
	for (uint16_t id = 0; id < NUM; id++)
		offer(c, id, (id & 1 ? b : a) + 0x40u * id, 16, id & 2);
	pop_all(c, e, iov, NUM);
	for (unsigned k = 0; k < NUM; k++) {
		assert_int_equal(e[k].id, k);
		assert_int_equal(e[k].out_num + e[k].in_num, 1);
		expect_iov(c, &e[k], 0, (k & 1 ? b : a) + 0x40u * k, 16);
	}
	assert_int_equal(walks(c) - before, 1);
	before = walks(c);
	for (uint16_t id = 0; id < NUM / 2; id++)
		offer2(c, id, (id & 1 ? a : b) + 0x40u * id, 16, false,
		       (id & 1 ? b : a) + 0x40u * id, 48, true);
	pop_all(c, e, iov, NUM / 2);
	for (unsigned k = 0; k < NUM / 2; k++) {
		assert_int_equal(e[k].id, k);
		assert_int_equal(e[k].out_num, 1);
		assert_int_equal(e[k].in_num, 1);
		expect_iov(c, &e[k], 0, (k & 1 ? a : b) + 0x40u * k, 16);
		expect_iov(c, &e[k], 1, (k & 1 ? b : a) + 0x40u * k, 48);
	}
	assert_true(walks(c) - before <= 1);
}

/* A third region, size bytes at gpa; *g is its arena (the caller removes and destroys it). */
static void add_region(struct lfx *c, struct vqs_gmem **g, uint64_t gpa, size_t size)
{
	struct vqs_mem_region r;
	assert_int_equal(vqs_gmem_create(g, gpa, size), 0);
	vqs_gmem_region(*g, &r);
	assert_int_equal(vqs_mem_add(c->m.mem, &r), 0);
}

static void remove_region(struct lfx *c, struct vqs_gmem *g)
{
	assert_int_equal(vqs_mem_remove(c->m.mem, vqs_gmem_base(g), vqs_gmem_size(g)), 0);
	vqs_mem_synchronize(c->m.mem);
	vqs_gmem_destroy(g);
}

/* Three regions, more than the two windows hold: one-descriptor chains going round all three,
 * and chains of three descriptors, one in each (in every order), each the walk's element. */
static void three_regions_chains_touching_all_three(void **state)
{
	struct lfx *c = *state;
	struct vqs_gmem *g3;
	const uint64_t r3 = BORDER + (2u << 20);
	add_region(c, &g3, r3, 1 << 16);
	const uint64_t base[3] = {FX_GPA_BASE + 0x800, BORDER + 0x100, r3 + 0x100};
	struct iovec iov[NUM][4];
	struct vqs_elem e[NUM];
	for (uint16_t id = 0; id < NUM; id++)
		offer(c, id, base[id % 3] + 0x40u * id, 24, true);
	pop_all(c, e, iov, NUM);
	for (unsigned k = 0; k < NUM; k++) {
		assert_int_equal(e[k].in_num, 1);
		assert_int_equal(e[k].in_len, 24);
		assert_ptr_equal(e[k].iov[0].iov_base,
				 k % 3 == 2 ? vqs_gmem_host(g3, base[2] + 0x40u * k, 24)
					    : lfx_host(c, base[k % 3] + 0x40u * k));
	}
	static const uint32_t len[3] = {8, 16, 32};
	static const bool write[3] = {false, true, true};
	for (uint16_t id = 0; id < 2; id++) {
		uint64_t addr[3];
		for (unsigned k = 0; k < 3; k++)
			addr[k] = base[(k + id) % 3] + 0x400u * id;
		offer_n(c, (uint16_t)(3 * id), addr, len, write, 3);
	}
	pop_all(c, e, iov, 2);
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(e[i].ndescs, 3);
		assert_int_equal(e[i].out_num, 1);
		assert_int_equal(e[i].in_num, 2);
		for (unsigned k = 0; k < 3; k++) {
			uint64_t gpa = base[(k + i) % 3] + 0x400u * i;
			assert_ptr_equal(e[i].iov[k].iov_base,
					 (k + i) % 3 == 2 ? vqs_gmem_host(g3, gpa, 1)
							  : lfx_host(c, gpa));
			assert_int_equal(e[i].iov[k].iov_len, len[k]);
		}
	}
	remove_region(c, g3);
}

/* With both regions in the windows, a buffer across their border is in neither: the walk's two
 * iovecs, alone and as a pair's second buffer. */
static void across_the_border_with_both_regions_hinted(void **state)
{
	struct lfx *c = *state;
	uint64_t a = FX_GPA_BASE + 0x800;
	struct iovec iov[NUM][4];
	struct vqs_elem e[NUM];
	offer_both(c);
	offer(c, 2, BORDER - 4, 12, false);
	offer_n(c, 3, (const uint64_t[]){a, BORDER - 8}, (const uint32_t[]){8, 24},
		(const bool[]){false, true}, 2);
	pop_all(c, e, iov, 4);
	assert_int_equal(e[2].out_num, 2);
	expect_iov(c, &e[2], 0, BORDER - 4, 4);
	expect_iov(c, &e[2], 1, BORDER, 8);
	assert_int_equal(e[3].out_num, 1);
	assert_int_equal(e[3].in_num, 2);
	expect_iov(c, &e[3], 0, a, 8);
	expect_iov(c, &e[3], 1, BORDER - 8, 8);
	expect_iov(c, &e[3], 2, BORDER, 16);
	assert_int_equal(e[3].in_len, 24);
}

/* With both regions in the windows, a buffer out of every region (between and beyond them), or
 * running from the second window's region past its end: the queue breaks with the address
 * reason. */
static void out_of_every_region_breaks_the_queue(void **state)
{
	static const struct {
		uint64_t addr;
		uint32_t len;
	} bad[] = {
		{BORDER + (1 << 16), 8},           /* just past the second region */
		{FX_GPA_BASE - 8, 8},              /* just below the first */
		{BORDER + (1 << 16) - 8, 16},      /* from the second region past its end */
		{UINT64_MAX - 7, 8},               /* the top of the address space */
	};
	const bool packed = ((struct lfx *)*state)->packed;
	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		/* a queue of its own for each */
		struct lfx *c = test_calloc(1, sizeof(*c));
		lfx_init(c, packed, NUM, 0, 1 << 16);
		expect_addr_break(c, bad[k].addr, bad[k].len, 2);
		lfx_fini(c);
		test_free(c);
	}
}

/* The second region replaced by another mapping of the same guest addresses, then removed
 * (vhost-user SET_MEM_TABLE, REM_MEM_REG), with both regions in the queue's windows: buffers in
 * it translate to the new mapping, then break the queue; none through the old one. */
static void replaced_region_is_not_translated_through_the_old_window(void **state)
{
	struct lfx *c = *state;
	uint64_t a = FX_GPA_BASE + 0x800, b = BORDER + 0x100;
	struct iovec iov[NUM][4];
	struct vqs_elem e[NUM];
	offer_both(c);
	pop_all(c, e, iov, 2);
	expect_iov(c, &e[1], 0, b, 8);
	/* the same guest addresses, another host mapping, and the first region moved to another
	 * slot (a region below it): the old slot numbers name other regions now */
	struct vqs_gmem *g2b, *low;
	assert_int_equal(vqs_mem_remove(c->m.mem, BORDER, 1 << 16), 0);
	add_region(c, &g2b, BORDER, 1 << 16);
	add_region(c, &low, 0x10000, 1 << 16);
	for (uint16_t id = 0; id < 4; id++)
		offer(c, id, id & 1 ? b : a, 8, false);
	pop_all(c, e, iov, 4);
	for (unsigned k = 0; k < 4; k++)
		assert_ptr_equal(e[k].iov[0].iov_base,
				 k & 1 ? vqs_gmem_host(g2b, b, 8) : lfx_host(c, a));
	/* gone: the queue breaks */
	remove_region(c, g2b);
	expect_addr_break(c, b, 8, 1);
	remove_region(c, low);
}

#define ON(layout, f) {#f " (" #layout ")", f, lfx_setup_##layout, lfx_teardown, NULL}
int main(void)
{
	const struct CMUnitTest tests[] = {
		ON(split, one_descriptor_chains_in_every_shape),
		ON(packed, one_descriptor_chains_in_every_shape),
		ON(split, one_descriptor_past_mapped_memory_breaks_the_queue),
		ON(packed, one_descriptor_past_mapped_memory_breaks_the_queue),
		ON(split, one_descriptor_at_the_region_edges),
		ON(packed, one_descriptor_at_the_region_edges),
		ON(split, two_descriptor_chains_in_every_shape),
		ON(packed, two_descriptor_chains_in_every_shape),
		ON(split, two_descriptor_chains_with_zero_length_or_two_regions),
		ON(packed, two_descriptor_chains_with_zero_length_or_two_regions),
		ON(split, two_descriptor_chain_out_of_order_breaks_the_queue),
		ON(packed, two_descriptor_chain_out_of_order_breaks_the_queue),
		ON(split, two_descriptor_chain_over_4g_breaks_the_queue),
		ON(packed, two_descriptor_chain_over_4g_breaks_the_queue),
		ON(split, shapes_mixed_in_one_batch),
		ON(packed, shapes_mixed_in_one_batch),
		ON(split, shapes_alternating_across_pops),
		ON(packed, shapes_alternating_across_pops),
		ON(split, regions_alternating_in_one_batch_stay_on_the_straight_line),
		ON(packed, regions_alternating_in_one_batch_stay_on_the_straight_line),
		ON(split, three_regions_chains_touching_all_three),
		ON(packed, three_regions_chains_touching_all_three),
		ON(split, across_the_border_with_both_regions_hinted),
		ON(packed, across_the_border_with_both_regions_hinted),
		ON(split, out_of_every_region_breaks_the_queue),
		ON(packed, out_of_every_region_breaks_the_queue),
		ON(split, replaced_region_is_not_translated_through_the_old_window),
		ON(packed, replaced_region_is_not_translated_through_the_old_window),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
