/* SPDX-License-Identifier: MIT */
/*
 * A hostile driver's split rings: each malformation breaks exactly the queue it was offered on,
 * with its reason, every later pop fails, and another queue on the same memory keeps working.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "ring_fixture.h"

#define NUM 8
#define F_IND VQS_BIT(VQS_F_INDIRECT_DESC)

struct ctx {
	struct tmem m;
	struct fx_ring bad;
};

static int setup(void **state)
{
	static struct ctx c;
	memset(&c, 0, sizeof(c));
	tmem_init(&c.m, FX_GPA_BASE, FX_ARENA);
	fx_ring_init(&c.bad, &c.m, NUM, F_IND);
	*state = &c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	fx_ring_fini(&c->bad);
	tmem_fini(&c->m);
	return 0;
}

/* A fresh queue on the same guest memory pops, fills and flushes normally. */
static void assert_other_queue_works(struct tmem *m)
{
	struct fx_ring ok;
	fx_ring_init(&ok, m, NUM, F_IND);
	fx_simple_chain(&ok, 3, 64, true);
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(fx_pop(ok.vq, &e, iov, 4), 0);
	assert_int_equal(e.id, 3);
	assert_int_equal(e.in_len, 64);
	assert_int_equal(vqs_vq_fill(ok.vq, &e, 64), 0);
	assert_int_equal(vqs_vq_flush(ok.vq), 1);
	assert_int_equal(fx_used_idx(&ok), 1);
	assert_false(vqs_vq_is_broken(ok.vq));
	fx_ring_fini(&ok);
}

/* Pop fails with -EIO and the reason; later pops fail too; nothing was published. */
static void assert_broken(struct ctx *c, struct vqs_vq *vq, enum vqs_vq_err why, const char *name)
{
	struct iovec iov[16];
	struct vqs_elem e;
	assert_int_equal(fx_pop(vq, &e, iov, 16), -EIO);
	assert_int_equal(vqs_vq_error(vq), why);
	assert_true(vqs_vq_is_broken(vq));
	assert_string_equal(vqs_vq_err_name(vqs_vq_error(vq)), name);
	/* Even a well-formed chain offered afterwards is refused. */
	fx_simple_chain(&c->bad, 5, 16, false);
	assert_int_equal(fx_pop(vq, &e, iov, 16), -EIO);
	struct vqs_elem batch[2] = {{.iov = iov, .iov_cap = 8}, {.iov = iov + 8, .iov_cap = 8}};
	struct vqs_vq_session ss;
	assert_int_equal(vqs_vq_session_begin(vq, &ss), -EIO);
	struct vqs_pop_to at = {.base = batch, .stride = sizeof(batch[0])};
	assert_int_equal(vqs_vq_session_pop(&ss, &at, 2), -EIO);
	vqs_vq_session_pause(&ss);
	assert_int_equal(vqs_vq_flush(vq), 0);
	assert_int_equal(fx_used_idx(&c->bad), 0);
	assert_other_queue_works(&c->m);
}

static uint64_t table(struct ctx *c, unsigned n)
{
	return tmem_alloc(&c->m, n * sizeof(struct vqs_vring_desc), 16);
}

static struct vqs_vring_desc *table_host(struct ctx *c, uint64_t gpa, unsigned n)
{
	return tmem_host(&c->m, gpa, n * sizeof(struct vqs_vring_desc));
}

static void test_malformed_loop(void **state)
{
	struct ctx *c = *state;
	uint64_t b = tmem_buf(&c->m, 32, 1);
	fx_desc(&c->bad, 0, b, 32, VQS_VRING_DESC_F_NEXT, 1);
	fx_desc(&c->bad, 1, b, 32, VQS_VRING_DESC_F_NEXT, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_LOOP, "loop");
}

static void test_malformed_loop_in_indirect_table(void **state)
{
	struct ctx *c = *state;
	uint64_t b = tmem_buf(&c->m, 32, 1), t = table(c, 4);
	struct vqs_vring_desc *d = table_host(c, t, 4);
	d[0] = (struct vqs_vring_desc){b, 32, VQS_VRING_DESC_F_NEXT, 1};
	d[1] = (struct vqs_vring_desc){b, 32, VQS_VRING_DESC_F_NEXT, 0};
	fx_desc(&c->bad, 0, t, 4 * 16, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_LOOP, "loop");
}

static void test_malformed_head_out_of_range(void **state)
{
	struct ctx *c = *state;
	fx_publish(&c->bad, NUM);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_HEAD_RANGE, "head-range");
}

static void test_malformed_next_out_of_range(void **state)
{
	struct ctx *c = *state;
	fx_desc(&c->bad, 0, tmem_buf(&c->m, 32, 1), 32, VQS_VRING_DESC_F_NEXT, NUM);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_NEXT_RANGE, "next-range");
}

static void test_malformed_next_past_indirect_table(void **state)
{
	struct ctx *c = *state;
	uint64_t t = table(c, 2);
	struct vqs_vring_desc *d = table_host(c, t, 2);
	d[0] = (struct vqs_vring_desc){tmem_buf(&c->m, 8, 1), 8, VQS_VRING_DESC_F_NEXT, 2};
	fx_desc(&c->bad, 0, t, 2 * 16, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_NEXT_RANGE, "next-range");
}

static void test_malformed_nested_indirect(void **state)
{
	struct ctx *c = *state;
	uint64_t inner = table(c, 1), outer = table(c, 1);
	table_host(c, inner, 1)[0] = (struct vqs_vring_desc){tmem_buf(&c->m, 8, 1), 8, 0, 0};
	table_host(c, outer, 1)[0] =
		(struct vqs_vring_desc){inner, 16, VQS_VRING_DESC_F_INDIRECT, 0};
	fx_desc(&c->bad, 0, outer, 16, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_NESTED_INDIRECT, "nested-indirect");
}

static void test_malformed_indirect_with_next(void **state)
{
	struct ctx *c = *state;
	uint64_t t = table(c, 1);
	table_host(c, t, 1)[0] = (struct vqs_vring_desc){tmem_buf(&c->m, 8, 1), 8, 0, 0};
	fx_desc(&c->bad, 0, t, 16, VQS_VRING_DESC_F_INDIRECT | VQS_VRING_DESC_F_NEXT, 1);
	fx_simple_chain(&c->bad, 1, 8, false);
	c->bad.avail_idx = 0;
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_INDIRECT_NEXT, "indirect-next");
}

static void indirect_len_case(struct ctx *c, uint32_t len)
{
	uint64_t t = table(c, NUM + 1);
	for (unsigned i = 0; i <= NUM; i++)
		table_host(c, t, NUM + 1)[i] = (struct vqs_vring_desc){
			tmem_buf(&c->m, 8, 1), 8, i < NUM ? VQS_VRING_DESC_F_NEXT : 0, (uint16_t)(i + 1)};
	fx_desc(&c->bad, 0, t, len, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_INDIRECT_LEN, "indirect-len");
}

static void test_malformed_indirect_len_zero(void **state) { indirect_len_case(*state, 0); }
static void test_malformed_indirect_len_not_multiple_of_16(void **state)
{
	indirect_len_case(*state, 24);
}
/* A table with more entries than the queue size could only hold a too-long chain. */
static void test_malformed_indirect_len_too_big(void **state)
{
	indirect_len_case(*state, (NUM + 1) * 16);
}

static void test_malformed_indirect_table_unmapped(void **state)
{
	struct ctx *c = *state;
	fx_desc(&c->bad, 0, 0x40000000, 32, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_ADDR, "addr");
}

static void test_malformed_writable_before_readable(void **state)
{
	struct ctx *c = *state;
	fx_desc(&c->bad, 0, tmem_buf(&c->m, 8, 1), 8,
		VQS_VRING_DESC_F_WRITE | VQS_VRING_DESC_F_NEXT, 1);
	fx_desc(&c->bad, 1, tmem_buf(&c->m, 8, 1), 8, 0, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_WRITE_ORDER, "write-order");
}

static void test_malformed_writable_before_readable_across_indirect(void **state)
{
	struct ctx *c = *state;
	uint64_t t = table(c, 1);
	table_host(c, t, 1)[0] = (struct vqs_vring_desc){tmem_buf(&c->m, 8, 1), 8, 0, 0};
	fx_desc(&c->bad, 0, tmem_buf(&c->m, 8, 1), 8,
		VQS_VRING_DESC_F_WRITE | VQS_VRING_DESC_F_NEXT, 1);
	fx_desc(&c->bad, 1, t, 16, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_WRITE_ORDER, "write-order");
}

static void test_malformed_address_outside_map(void **state)
{
	struct ctx *c = *state;
	fx_desc(&c->bad, 0, FX_GPA_BASE + FX_ARENA - 8, 16, 0, 0); /* runs off the end */
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_ADDR, "addr");
}

static void test_malformed_address_below_map(void **state)
{
	struct ctx *c = *state;
	fx_desc(&c->bad, 0, 0x1000, 16, 0, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_ADDR, "addr");
}

static void test_malformed_address_overflow(void **state)
{
	struct ctx *c = *state;
	fx_desc(&c->bad, 0, UINT64_MAX - 15, 64, 0, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_ADDR, "addr");
}

/* One direct descriptor, then an indirect table of NUM entries: NUM + 1 buffers in one chain. */
static void test_malformed_chain_longer_than_queue_size(void **state)
{
	struct ctx *c = *state;
	uint64_t t = table(c, NUM), b = tmem_buf(&c->m, 8, 1);
	for (unsigned i = 0; i < NUM; i++)
		table_host(c, t, NUM)[i] = (struct vqs_vring_desc){
			b, 8, i + 1 < NUM ? VQS_VRING_DESC_F_NEXT : 0, (uint16_t)(i + 1)};
	fx_desc(&c->bad, 0, b, 8, VQS_VRING_DESC_F_NEXT, 1);
	fx_desc(&c->bad, 1, t, NUM * 16, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_CHAIN_LEN, "chain-len");
}

/* Two mapped buffers of 2^32 - 1 and 1 bytes: the chain totals 2^32. The big region is only
 * reserved address space, never touched. */
static void test_malformed_chain_over_4GiB(void **state)
{
	struct ctx *c = *state;
	size_t big = (size_t)1 << 32;
	void *host = mmap(NULL, big, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(host != MAP_FAILED);
	uint64_t gpa = 0x100000000ull;
	struct vqs_mem_region r = {.gpa = gpa, .size = big, .uaddr = (uintptr_t)host, .host = host};
	assert_int_equal(vqs_mem_add(c->m.mem, &r), 0);
	fx_desc(&c->bad, 0, gpa, UINT32_MAX, VQS_VRING_DESC_F_NEXT, 1);
	fx_desc(&c->bad, 1, gpa, 1, 0, 0);
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_CHAIN_BYTES, "chain-bytes");
	assert_int_equal(vqs_mem_remove(c->m.mem, gpa, big), 0);
	/* Removal is released after a grace period; destroying the map waits for it. */
	teardown(state);
	munmap(host, big);
	setup(state);
}

static void test_malformed_avail_idx_jumps_more_than_num(void **state)
{
	struct ctx *c = *state;
	fx_set_avail_idx(&c->bad, NUM + 1);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_AVAIL_IDX, "avail-idx");
}

static void test_malformed_avail_idx_goes_backwards(void **state)
{
	struct ctx *c = *state;
	fx_simple_chain(&c->bad, 0, 8, false);
	struct iovec iov[2];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->bad.vq, &e, iov, 2), 0);
	fx_set_avail_idx(&c->bad, 0); /* "unexposes" a buffer: 0 - 1 is 65535 entries ahead */
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_AVAIL_IDX, "avail-idx");
}

static void test_malformed_indirect_without_feature(void **state)
{
	struct ctx *c = *state;
	struct fx_ring r;
	fx_ring_init(&r, &c->m, NUM, 0);
	uint64_t t = table(c, 1);
	table_host(c, t, 1)[0] = (struct vqs_vring_desc){tmem_buf(&c->m, 8, 1), 8, 0, 0};
	fx_desc(&r, 0, t, 16, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&r, 0);
	struct iovec iov[2];
	struct vqs_elem e;
	assert_int_equal(fx_pop(r.vq, &e, iov, 2), -EIO);
	assert_int_equal(vqs_vq_error(r.vq), VQS_VQ_ERR_INDIRECT_FEATURE);
	assert_string_equal(vqs_vq_err_name(vqs_vq_error(r.vq)), "indirect-feature");
	assert_int_equal(fx_pop(r.vq, &e, iov, 2), -EIO);
	fx_ring_fini(&r);
	assert_other_queue_works(&c->m);
}

static void unmapped_ring_case(struct ctx *c, uint64_t desc, uint64_t avail, uint64_t used)
{
	struct vqs_vq_config cfg;
	fx_ring_config(&c->bad, &cfg);
	cfg.desc_addr = desc ? desc : cfg.desc_addr;
	cfg.driver_addr = avail ? avail : cfg.driver_addr;
	cfg.device_addr = used ? used : cfg.device_addr;
	/* Not an error at configure time: vhost-user may map the memory later. */
	assert_int_equal(vqs_vq_configure(c->bad.vq, &cfg), 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_RING_UNMAPPED, "ring-unmapped");
}

static void test_malformed_ring_not_mapped(void **state)
{
	unmapped_ring_case(*state, 0x40000000, 0, 0);
}

static void test_malformed_used_ring_straddles_map_end(void **state)
{
	unmapped_ring_case(*state, 0, 0, FX_GPA_BASE + FX_ARENA - 16);
}

/* The EVENT_IDX trailer (used_event) belongs to the avail area: it must be mapped too. */
static void test_malformed_event_idx_trailer_not_mapped(void **state)
{
	struct ctx *c = *state;
	struct vqs_vq_config cfg;
	fx_ring_config(&c->bad, &cfg);
	cfg.features |= VQS_BIT(VQS_F_EVENT_IDX);
	cfg.driver_addr = FX_GPA_BASE + FX_ARENA - vqs_vring_avail_size(NUM) + 2;
	assert_int_equal(vqs_vq_configure(c->bad.vq, &cfg), 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_RING_UNMAPPED, "ring-unmapped");
	cfg.features &= ~VQS_BIT(VQS_F_EVENT_IDX);
	assert_int_equal(vqs_vq_configure(c->bad.vq, &cfg), 0);
	assert_false(vqs_vq_is_broken(c->bad.vq));
}

static void test_malformed_head_already_in_flight(void **state)
{
	struct ctx *c = *state;
	fx_simple_chain(&c->bad, 2, 8, false);
	fx_publish(&c->bad, 2);
	struct iovec iov[2];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->bad.vq, &e, iov, 2), 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_BUFFER_ID, "buffer-id");
}

static void test_malformed_more_iovecs_than_device_limit(void **state)
{
	struct ctx *c = *state;
	struct vqs_vq_config cfg;
	fx_ring_config(&c->bad, &cfg);
	cfg.max_iov = 2;
	assert_int_equal(vqs_vq_configure(c->bad.vq, &cfg), 0);
	for (unsigned i = 0; i < 3; i++)
		fx_desc(&c->bad, i, tmem_buf(&c->m, 8, 1), 8, i < 2 ? VQS_VRING_DESC_F_NEXT : 0,
			(uint16_t)(i + 1));
	fx_publish(&c->bad, 0);
	assert_broken(c, c->bad.vq, VQS_VQ_ERR_IOV_LIMIT, "iov-limit");
}

/* ---- positive controls ---- */

/* 2.7.5.3.2: zero or more direct descriptors followed by one INDIRECT one are valid; its WRITE
 * flag is ignored. */
static void test_accepts_chain_ending_in_indirect(void **state)
{
	struct ctx *c = *state;
	uint64_t t = table(c, 2);
	struct vqs_vring_desc *d = table_host(c, t, 2);
	d[0] = (struct vqs_vring_desc){tmem_buf(&c->m, 10, 1), 10, VQS_VRING_DESC_F_NEXT, 1};
	d[1] = (struct vqs_vring_desc){tmem_buf(&c->m, 20, 2), 20, VQS_VRING_DESC_F_WRITE, 0};
	fx_desc(&c->bad, 0, tmem_buf(&c->m, 5, 3), 5, VQS_VRING_DESC_F_NEXT, 4);
	fx_desc(&c->bad, 4, t, 32, VQS_VRING_DESC_F_INDIRECT | VQS_VRING_DESC_F_WRITE, 0);
	fx_publish(&c->bad, 0);
	struct iovec iov[8];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->bad.vq, &e, iov, 8), 0);
	assert_int_equal(e.id, 0);
	assert_int_equal(e.out_num, 2);
	assert_int_equal(e.in_num, 1);
	assert_int_equal(e.out_len, 15);
	assert_int_equal(e.in_len, 20);
	assert_int_equal(((uint8_t *)iov[0].iov_base)[0], 3);
	assert_int_equal(((uint8_t *)iov[1].iov_base)[0], 1);
	assert_false(vqs_vq_is_broken(c->bad.vq));
}

/* An indirect table and the buffers it names straddle the border of two adjacent regions that
 * are separate mappings: the table is copied across it, each buffer becomes two iovecs. */
static void test_accepts_buffers_spanning_two_regions(void **state)
{
	struct ctx *c = *state;
	struct vqs_gmem *g2;
	uint64_t border = FX_GPA_BASE + FX_ARENA;
	assert_int_equal(vqs_gmem_create(&g2, border, 1 << 16), 0);
	struct vqs_mem_region r2;
	vqs_gmem_region(g2, &r2);
	assert_int_equal(vqs_mem_add(c->m.mem, &r2), 0);

	struct vqs_vring_desc tab[2] = {{border - 48, 96, VQS_VRING_DESC_F_NEXT, 1},
					{border - 48, 96, VQS_VRING_DESC_F_WRITE, 0}};
	memcpy(vqs_gmem_host(c->m.gmem, border - 16, 16), &tab[0], 16);
	memcpy(vqs_gmem_host(g2, border, 16), &tab[1], 16);
	fx_desc(&c->bad, 0, border - 16, 32, VQS_VRING_DESC_F_INDIRECT, 0);
	fx_publish(&c->bad, 0);

	struct iovec iov[8];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->bad.vq, &e, iov, 8), 0);
	assert_int_equal(e.out_len, 96);
	assert_int_equal(e.in_len, 96);
	assert_int_equal(e.out_num, 2);
	assert_int_equal(e.in_num, 2);
	for (unsigned i = 0; i < 4; i += 2) {
		assert_ptr_equal(iov[i].iov_base, vqs_gmem_host(c->m.gmem, border - 48, 48));
		assert_int_equal(iov[i].iov_len, 48);
		assert_ptr_equal(iov[i + 1].iov_base, vqs_gmem_host(g2, border, 48));
		assert_int_equal(iov[i + 1].iov_len, 48);
	}
	assert_false(vqs_vq_is_broken(c->bad.vq));
	teardown(state);
	vqs_gmem_destroy(g2);
	setup(state);
}

/* Not a malformation: a chain beyond the caller's storage is served (from the queue's
 * long-chain area) and breaks nothing. */
static void test_short_iov_storage_is_not_a_break(void **state)
{
	struct ctx *c = *state;
	for (unsigned i = 0; i < 3; i++)
		fx_desc(&c->bad, i, tmem_buf(&c->m, 8, 1), 8, i < 2 ? VQS_VRING_DESC_F_NEXT : 0,
			(uint16_t)(i + 1));
	fx_publish(&c->bad, 0);
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->bad.vq, &e, iov, 2), 0);
	assert_false(vqs_vq_is_broken(c->bad.vq));
	assert_int_equal(e.out_num, 3);
	assert_int_equal(e.out_len, 24);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_malformed_loop),
		T(test_malformed_loop_in_indirect_table),
		T(test_malformed_head_out_of_range),
		T(test_malformed_next_out_of_range),
		T(test_malformed_next_past_indirect_table),
		T(test_malformed_nested_indirect),
		T(test_malformed_indirect_with_next),
		T(test_malformed_indirect_len_zero),
		T(test_malformed_indirect_len_not_multiple_of_16),
		T(test_malformed_indirect_len_too_big),
		T(test_malformed_indirect_table_unmapped),
		T(test_malformed_writable_before_readable),
		T(test_malformed_writable_before_readable_across_indirect),
		T(test_malformed_address_outside_map),
		T(test_malformed_address_below_map),
		T(test_malformed_address_overflow),
		T(test_malformed_chain_longer_than_queue_size),
		T(test_malformed_chain_over_4GiB),
		T(test_malformed_avail_idx_jumps_more_than_num),
		T(test_malformed_avail_idx_goes_backwards),
		T(test_malformed_indirect_without_feature),
		T(test_malformed_ring_not_mapped),
		T(test_malformed_used_ring_straddles_map_end),
		T(test_malformed_event_idx_trailer_not_mapped),
		T(test_malformed_head_already_in_flight),
		T(test_malformed_more_iovecs_than_device_limit),
		T(test_accepts_chain_ending_in_indirect),
		T(test_accepts_buffers_spanning_two_regions),
		T(test_short_iov_storage_is_not_a_break),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
