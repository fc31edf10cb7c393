/* SPDX-License-Identifier: MIT */
/*
 * A hostile driver's packed rings: each malformation breaks exactly the queue it was offered on,
 * with its reason (vqs_vq_error), every later pop fails, nothing is published, and another queue
 * on the same guest memory keeps working.
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

#define NUM 4
#define F_IND VQS_BIT(VQS_F_INDIRECT_DESC)

struct ctx {
	struct tmem m;
	struct pfx_ring bad;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));
	tmem_init(&c->m, PFX_GPA_BASE, PFX_ARENA);
	pfx_ring_init(&c->bad, &c->m, NUM, F_IND);
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	pfx_ring_fini(&c->bad);
	tmem_fini(&c->m);
	free(c);
	return 0;
}

/* A fresh queue on the same guest memory pops, fills and flushes normally. */
static void assert_other_queue_works(struct tmem *m)
{
	struct pfx_ring ok;
	pfx_ring_init(&ok, m, NUM, F_IND);
	pfx_simple(&ok, 3, 64, true);
	assert_int_equal(pfx_complete_one(&ok, 64), 3);
	uint16_t id;
	uint32_t len;
	assert_true(pfx_get_used(&ok, 1, &id, &len));
	assert_int_equal(id, 3);
	assert_int_equal(len, 64);
	assert_false(vqs_vq_is_broken(ok.vq));
	pfx_ring_fini(&ok);
}

static void assert_broken(struct ctx *c, enum vqs_vq_err why)
{
	struct iovec iov[16];
	struct vqs_elem e;
	struct vqs_vq *vq = c->bad.vq;
	assert_int_equal(pfx_pop(vq, &e, iov, 16), -EIO);
	assert_int_equal(vqs_vq_error(vq), why);
	assert_true(vqs_vq_is_broken(vq));
	/* Later pops fail, even of a well-formed chain; nothing reaches the used side. */
	pfx_simple(&c->bad, 1, 16, false);
	assert_int_equal(pfx_pop(vq, &e, iov, 16), -EIO);
	assert_int_equal(vqs_vq_flush(vq), 0);
	assert_false(vqs_vq_need_call(vq));
	assert_other_queue_works(&c->m);
}

static void buffer_id_not_below_queue_size_breaks_with_buffer_id(void **state)
{
	struct ctx *c = *state;
	pfx_simple(&c->bad, NUM, 16, false);
	assert_broken(c, VQS_VQ_ERR_BUFFER_ID);
}

static void buffer_id_already_in_flight_breaks_with_buffer_id(void **state)
{
	struct ctx *c = *state;
	pfx_simple(&c->bad, 2, 16, false);
	pfx_simple(&c->bad, 2, 16, false);
	struct iovec iov[2];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(c->bad.vq, &e, iov, 2), 0);
	assert_broken(c, VQS_VQ_ERR_BUFFER_ID);
}

static void chain_longer_than_queue_breaks_with_chain_len(void **state)
{
	struct ctx *c = *state;
	uint64_t buf = tmem_buf(&c->m, 16, 0);
	/* Every slot available and chained on: the chain never ends within the ring. */
	for (unsigned i = 1; i < NUM; i++)
		pfx_raw(&c->bad, i, buf, 16, 0, VQS_VRING_DESC_F_NEXT | pfx_avail_bits(true));
	pfx_raw(&c->bad, 0, buf, 16, 0, VQS_VRING_DESC_F_NEXT | pfx_avail_bits(true));
	assert_broken(c, VQS_VQ_ERR_CHAIN_LEN);
}

static void indirect_table_flag_other_than_write_breaks_with_indirect_flags(void **state)
{
	struct ctx *c = *state;
	uint64_t tab_gpa = tmem_alloc(&c->m, 32, 16);
	struct vqs_vring_packed_desc *tab = tmem_host(&c->m, tab_gpa, 32);
	tab[0] = (struct vqs_vring_packed_desc){tmem_buf(&c->m, 8, 1), 8, 0, VQS_VRING_DESC_F_NEXT};
	tab[1] = (struct vqs_vring_packed_desc){tmem_buf(&c->m, 8, 2), 8, 0, 0};
	struct pfx_desc d = {tab_gpa, 32, 0, VQS_VRING_DESC_F_INDIRECT};
	pfx_chain(&c->bad, &d, 1);
	assert_broken(c, VQS_VQ_ERR_INDIRECT_FLAGS);
}

static void nested_indirect_breaks_with_nested_indirect(void **state)
{
	struct ctx *c = *state;
	uint64_t tab_gpa = tmem_alloc(&c->m, 16, 16);
	struct vqs_vring_packed_desc *tab = tmem_host(&c->m, tab_gpa, 16);
	tab[0] = (struct vqs_vring_packed_desc){tab_gpa, 16, 0, VQS_VRING_DESC_F_INDIRECT};
	struct pfx_desc d = {tab_gpa, 16, 0, VQS_VRING_DESC_F_INDIRECT};
	pfx_chain(&c->bad, &d, 1);
	assert_broken(c, VQS_VQ_ERR_NESTED_INDIRECT);
}

static void indirect_inside_a_next_list_breaks_with_indirect_next(void **state)
{
	struct ctx *c = *state;
	uint64_t tab_gpa = tmem_alloc(&c->m, 16, 16);
	struct vqs_vring_packed_desc *tab = tmem_host(&c->m, tab_gpa, 16);
	tab[0] = (struct vqs_vring_packed_desc){tmem_buf(&c->m, 8, 1), 8, 0, 0};
	struct pfx_desc d[2] = {{tmem_buf(&c->m, 8, 1), 8, 0, 0},
				{tab_gpa, 16, 0, VQS_VRING_DESC_F_INDIRECT}};
	pfx_chain(&c->bad, d, 2);
	assert_broken(c, VQS_VQ_ERR_INDIRECT_NEXT);
}

static void indirect_table_of_bad_length_breaks_with_indirect_len(void **state)
{
	struct ctx *c = *state;
	uint64_t tab_gpa = tmem_alloc(&c->m, 32, 16);
	struct pfx_desc d = {tab_gpa, 24, 0, VQS_VRING_DESC_F_INDIRECT};
	pfx_chain(&c->bad, &d, 1);
	assert_broken(c, VQS_VQ_ERR_INDIRECT_LEN);
}

static void indirect_without_the_feature_breaks_with_indirect_feature(void **state)
{
	struct ctx *c = *state;
	pfx_ring_fini(&c->bad);
	pfx_ring_init(&c->bad, &c->m, NUM, 0);
	uint64_t tab_gpa = tmem_alloc(&c->m, 16, 16);
	struct vqs_vring_packed_desc *tab = tmem_host(&c->m, tab_gpa, 16);
	tab[0] = (struct vqs_vring_packed_desc){tmem_buf(&c->m, 8, 1), 8, 0, 0};
	struct pfx_desc d = {tab_gpa, 16, 0, VQS_VRING_DESC_F_INDIRECT};
	pfx_chain(&c->bad, &d, 1);
	assert_broken(c, VQS_VQ_ERR_INDIRECT_FEATURE);
}

static void indirect_table_outside_map_breaks_with_addr(void **state)
{
	struct ctx *c = *state;
	struct pfx_desc d = {PFX_GPA_BASE + PFX_ARENA, 16, 0, VQS_VRING_DESC_F_INDIRECT};
	pfx_chain(&c->bad, &d, 1);
	assert_broken(c, VQS_VQ_ERR_ADDR);
}

static void buffer_outside_map_breaks_with_addr(void **state)
{
	struct ctx *c = *state;
	struct pfx_desc d = {PFX_GPA_BASE + PFX_ARENA - 8, 16, 0, 0}; /* straddles the end */
	pfx_chain(&c->bad, &d, 1);
	assert_broken(c, VQS_VQ_ERR_ADDR);
}

static void buffer_address_overflow_breaks_with_addr(void **state)
{
	struct ctx *c = *state;
	struct pfx_desc d = {UINT64_MAX - 7, 16, 0, 0};
	pfx_chain(&c->bad, &d, 1);
	assert_broken(c, VQS_VQ_ERR_ADDR);
}

/* The head is available, but the descriptor its NEXT leads to is not available with the same
 * wrap counter: the driver could not have written that (it publishes heads last). */
static void chain_descriptor_with_wrong_wrap_counter_breaks_with_wrap(void **state)
{
	struct ctx *c = *state;
	uint64_t buf = tmem_buf(&c->m, 16, 0);
	pfx_raw(&c->bad, 1, buf, 8, 0, pfx_avail_bits(false));
	pfx_raw(&c->bad, 0, buf, 8, 0, VQS_VRING_DESC_F_NEXT | pfx_avail_bits(true));
	assert_broken(c, VQS_VQ_ERR_WRAP);
}

/* The same across the ring end: the slot after the last one must be available with the
 * flipped wrap counter, and one still marked for the old round is corruption. */
static void chain_across_ring_end_without_wrap_flip_breaks_with_wrap(void **state)
{
	struct ctx *c = *state;
	struct vqs_vq_state st = {.last_avail_idx = NUM - 1, .used_idx = NUM - 1,
				  .avail_wrap = true, .used_wrap = true};
	assert_int_equal(vqs_vq_set_state(c->bad.vq, &st), 0);
	uint64_t buf = tmem_buf(&c->m, 16, 0);
	pfx_raw(&c->bad, 0, buf, 8, 0, pfx_avail_bits(true));
	pfx_raw(&c->bad, NUM - 1, buf, 8, 0, VQS_VRING_DESC_F_NEXT | pfx_avail_bits(true));
	assert_broken(c, VQS_VQ_ERR_WRAP);
}

static void readable_after_writable_breaks_with_write_order(void **state)
{
	struct ctx *c = *state;
	uint64_t buf = tmem_buf(&c->m, 16, 0);
	struct pfx_desc d[2] = {{buf, 8, 0, VQS_VRING_DESC_F_WRITE}, {buf + 8, 8, 0, 0}};
	pfx_chain(&c->bad, d, 2);
	assert_broken(c, VQS_VQ_ERR_WRITE_ORDER);
}

static void ring_outside_map_breaks_with_ring_unmapped(void **state)
{
	struct ctx *c = *state;
	struct vqs_vq_config cfg;
	pfx_ring_config(&c->bad, &cfg);
	cfg.desc_addr = PFX_GPA_BASE + PFX_ARENA;
	assert_int_equal(vqs_vq_configure(c->bad.vq, &cfg), 0);
	struct iovec iov[2];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(c->bad.vq, &e, iov, 2), -EIO);
	assert_int_equal(vqs_vq_error(c->bad.vq), VQS_VQ_ERR_RING_UNMAPPED);
	assert_other_queue_works(&c->m);
}

static void quiet(enum vqs_log_level level, const char *msg, void *opaque) {}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(buffer_id_not_below_queue_size_breaks_with_buffer_id),
		T(buffer_id_already_in_flight_breaks_with_buffer_id),
		T(chain_longer_than_queue_breaks_with_chain_len),
		T(indirect_table_flag_other_than_write_breaks_with_indirect_flags),
		T(nested_indirect_breaks_with_nested_indirect),
		T(indirect_inside_a_next_list_breaks_with_indirect_next),
		T(indirect_table_of_bad_length_breaks_with_indirect_len),
		T(indirect_without_the_feature_breaks_with_indirect_feature),
		T(indirect_table_outside_map_breaks_with_addr),
		T(buffer_outside_map_breaks_with_addr),
		T(buffer_address_overflow_breaks_with_addr),
		T(chain_descriptor_with_wrong_wrap_counter_breaks_with_wrap),
		T(chain_across_ring_end_without_wrap_flip_breaks_with_wrap),
		T(readable_after_writable_breaks_with_write_order),
		T(ring_outside_map_breaks_with_ring_unmapped),
	};
	vqs_set_log(quiet, NULL, VQS_LOG_WARN); /* broken queues are the point here */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
