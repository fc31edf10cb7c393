/* SPDX-License-Identifier: MIT */
/*
 * Split ring configuration and state: validation of configure, get/set state for reconnect,
 * giving chains back (unpop), reset, and a memory table swapped under a configured queue.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "ring_fixture.h"

#define NUM 8

static int setup(void **state)
{
	fx_ctx_new(state, NUM, 0);
	return 0;
}

static uint16_t pop_id(struct vqs_vq *vq)
{
	struct iovec iov[2];
	struct vqs_elem e;
	assert_int_equal(fx_pop(vq, &e, iov, 2), 0);
	return e.id;
}

static void test_configure_rejects_bad_sizes_and_alignment(void **state)
{
	struct fx_ctx *c = *state;
	struct vqs_vq_config cfg, bad;
	fx_ring_config(&c->r, &cfg);
	const uint32_t nums[] = {0, 3, 12, 65536};
	for (unsigned i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
		bad = cfg;
		bad.num = nums[i];
		assert_int_equal(vqs_vq_configure(c->r.vq, &bad), -EINVAL);
	}
	bad = cfg;
	bad.desc_addr += 8;
	assert_int_equal(vqs_vq_configure(c->r.vq, &bad), -EINVAL);
	bad = cfg;
	bad.driver_addr += 1;
	assert_int_equal(vqs_vq_configure(c->r.vq, &bad), -EINVAL);
	bad = cfg;
	bad.device_addr += 2;
	assert_int_equal(vqs_vq_configure(c->r.vq, &bad), -EINVAL);
	bad = cfg;
	bad.size = 8;
	assert_int_equal(vqs_vq_configure(c->r.vq, &bad), -EINVAL);
	bad = cfg;
	bad.mem = NULL;
	assert_int_equal(vqs_vq_configure(c->r.vq, &bad), -EINVAL);
	/* The largest queue is fine (its areas are resolved lazily). */
	bad = cfg;
	bad.num = VQS_VQ_MAX_SIZE;
	assert_int_equal(vqs_vq_configure(c->r.vq, &bad), 0);
	assert_int_equal(vqs_vq_num(c->r.vq), VQS_VQ_MAX_SIZE);
}

static void test_state_get_reports_indices(void **state)
{
	struct fx_ctx *c = *state;
	for (unsigned i = 0; i < 3; i++)
		fx_simple_chain(&c->r, i, 8, true);
	struct iovec iov[3];
	struct vqs_elem e[3];
	for (unsigned i = 0; i < 3; i++)
		assert_int_equal(fx_pop(c->r.vq, &e[i], &iov[i], 1), 0);
	assert_int_equal(vqs_vq_fill(c->r.vq, &e[1], 0), 0);
	vqs_vq_flush(c->r.vq);
	struct vqs_vq_state st;
	vqs_vq_get_state(c->r.vq, &st);
	assert_int_equal(st.last_avail_idx, 3);
	assert_int_equal(st.used_idx, 1);
}

/* Reconnect: a new queue on the same ring, given the old one's state, continues where it
 * stopped (no chain popped twice, the used index continues). */
static void test_state_set_continues_on_new_queue(void **state)
{
	struct fx_ctx *c = *state;
	for (unsigned i = 0; i < 4; i++)
		fx_simple_chain(&c->r, i, 8, true);
	struct iovec iov[2];
	struct vqs_elem e;
	for (unsigned i = 0; i < 2; i++) {
		assert_int_equal(fx_pop(c->r.vq, &e, iov, 2), 0);
		assert_int_equal(vqs_vq_fill(c->r.vq, &e, 8), 0);
	}
	vqs_vq_flush(c->r.vq);
	struct vqs_vq_state st;
	vqs_vq_get_state(c->r.vq, &st);

	struct vqs_vq_config cfg;
	fx_ring_config(&c->r, &cfg);
	struct vqs_vq *vq2 = tmem_vq_create(&cfg);
	assert_int_equal(vqs_vq_set_state(vq2, &st), 0);
	assert_int_equal(pop_id(vq2), 2);
	assert_int_equal(fx_pop(vq2, &e, iov, 2), 0);
	assert_int_equal(e.id, 3);
	assert_int_equal(vqs_vq_fill(vq2, &e, 8), 0);
	vqs_vq_flush(vq2);
	assert_int_equal(fx_used_idx(&c->r), 3);
	assert_int_equal(c->r.used->ring[2].id, 3);
	vqs_vq_destroy(vq2);
}

/* Under backpressure chains go back unconsumed and come again, in order. */
static void test_unpop_returns_chains_in_pop_order(void **state)
{
	struct fx_ctx *c = *state;
	for (unsigned i = 0; i < 4; i++)
		fx_simple_chain(&c->r, (i * 3) % NUM, 8, false);
	struct iovec iov[4];
	struct vqs_elem e[4];
	for (unsigned i = 0; i < 4; i++)
		assert_int_equal(fx_pop(c->r.vq, &e[i], &iov[i], 1), 0);
	/* An earlier chain completed meanwhile does not prevent giving back the last ones. */
	assert_int_equal(vqs_vq_fill(c->r.vq, &e[0], 0), 0);
	assert_int_equal(vqs_vq_unpop(c->r.vq, &e[2], 2), 0);
	assert_int_equal(vqs_vq_avail_count(c->r.vq), 2);
	assert_int_equal(pop_id(c->r.vq), e[2].id);
	assert_int_equal(pop_id(c->r.vq), e[3].id);
	struct iovec none[1];
	struct vqs_elem x;
	assert_int_equal(fx_pop(c->r.vq, &x, none, 1), -EAGAIN);
}

static void test_unpop_rejects_filled_or_too_many(void **state)
{
	struct fx_ctx *c = *state;
	fx_simple_chain(&c->r, 0, 8, false);
	fx_simple_chain(&c->r, 1, 8, false);
	struct iovec iov[2];
	struct vqs_elem e[2];
	assert_int_equal(fx_pop(c->r.vq, &e[0], &iov[0], 1), 0);
	assert_int_equal(fx_pop(c->r.vq, &e[1], &iov[1], 1), 0);
	assert_int_equal(vqs_vq_fill(c->r.vq, &e[1], 0), 0);
	assert_int_equal(vqs_vq_unpop(c->r.vq, &e[1], 1), -EINVAL);
	assert_int_equal(vqs_vq_unpop(c->r.vq, e, 2), -EINVAL);
	struct vqs_vq_state st;
	vqs_vq_get_state(c->r.vq, &st);
	assert_int_equal(st.last_avail_idx, 2); /* a refused unpop changes nothing */
	assert_int_equal(vqs_vq_unpop(c->r.vq, e, 1), 0);
	assert_int_equal(vqs_vq_unpop(c->r.vq, e, 1), -EINVAL);
}

static void test_reset_unconfigures_and_clears_break(void **state)
{
	struct fx_ctx *c = *state;
	fx_publish(&c->r, NUM); /* head out of range */
	struct iovec iov[1];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->r.vq, &e, iov, 1), -EIO);
	vqs_vq_reset(c->r.vq);
	assert_false(vqs_vq_is_configured(c->r.vq));
	assert_false(vqs_vq_is_broken(c->r.vq));
	assert_int_equal(fx_pop(c->r.vq, &e, iov, 1), -EINVAL);
	struct vqs_vq_config cfg;
	fx_ring_config(&c->r, &cfg);
	assert_int_equal(vqs_vq_configure(c->r.vq, &cfg), 0);
	assert_true(vqs_vq_is_configured(c->r.vq));
	assert_false(vqs_vq_is_packed(c->r.vq));
}

/* Ring addresses given as frontend virtual addresses (vhost-user) resolve the same rings. */
static void test_configure_uaddr_address_space(void **state)
{
	struct fx_ctx *c = *state;
	struct vqs_mem_region reg;
	vqs_gmem_region(c->m.gmem, &reg);
	struct vqs_vq_config cfg;
	fx_ring_config(&c->r, &cfg);
	cfg.addr_space = VQS_ADDR_UADDR;
	cfg.desc_addr = cfg.desc_addr - reg.gpa + reg.uaddr;
	cfg.driver_addr = cfg.driver_addr - reg.gpa + reg.uaddr;
	cfg.device_addr = cfg.device_addr - reg.gpa + reg.uaddr;
	assert_int_equal(vqs_vq_configure(c->r.vq, &cfg), 0);
	fx_simple_chain(&c->r, 5, 8, true);
	assert_int_equal(pop_id(c->r.vq), 5);
}

/* The table is replaced by one mapping the same gpas to other memory: the queue must follow
 * (re-resolve its ring pointers), not keep using the old mapping. */
static void test_memory_table_swap_re_resolves_ring(void **state)
{
	struct fx_ctx *c = *state;
	fx_simple_chain(&c->r, 0, 8, true);
	assert_int_equal(pop_id(c->r.vq), 0);

	struct vqs_gmem *g2;
	assert_int_equal(vqs_gmem_create(&g2, FX_GPA_BASE, FX_ARENA), 0);
	memcpy(vqs_gmem_host(g2, FX_GPA_BASE, FX_ARENA), vqs_gmem_host(c->m.gmem, FX_GPA_BASE, FX_ARENA),
	       FX_ARENA);
	/* Only the copy gets the next chain. */
	struct vqs_vring_avail *avail2 =
		vqs_gmem_host(g2, c->r.avail_gpa, vqs_vring_avail_size(NUM));
	avail2->ring[1] = 4;
	struct vqs_vring_desc *desc2 = vqs_gmem_host(g2, c->r.desc_gpa, vqs_vring_desc_size(NUM));
	desc2[4] = (struct vqs_vring_desc){FX_GPA_BASE + 4096, 16, VQS_VRING_DESC_F_WRITE, 0};
	avail2->idx = 2;
	struct vqs_mem_region reg;
	vqs_gmem_region(g2, &reg);
	assert_int_equal(vqs_mem_set(c->m.mem, &reg, 1), 0);

	struct iovec iov[1];
	struct vqs_elem e;
	assert_int_equal(fx_pop(c->r.vq, &e, iov, 1), 0);
	assert_int_equal(e.id, 4);
	assert_ptr_equal(iov[0].iov_base, vqs_gmem_host(g2, FX_GPA_BASE + 4096, 16));
	assert_int_equal(vqs_vq_fill(c->r.vq, &e, 16), 0);
	assert_int_equal(vqs_vq_flush(c->r.vq), 1);
	struct vqs_vring_used *used2 = vqs_gmem_host(g2, c->r.used_gpa, vqs_vring_used_size(NUM));
	assert_int_equal(used2->idx, 1);
	assert_int_equal(used2->ring[0].id, 4);
	assert_int_equal(fx_used_idx(&c->r), 0); /* the old mapping is left alone */

	/* A table without the ring breaks the queue at its next pop. */
	assert_int_equal(vqs_mem_set(c->m.mem, NULL, 0), 0);
	assert_int_equal(fx_pop(c->r.vq, &e, iov, 1), -EIO);
	assert_int_equal(vqs_vq_error(c->r.vq), VQS_VQ_ERR_RING_UNMAPPED);
	fx_ctx_teardown(state);
	vqs_gmem_destroy(g2);
	setup(state);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, fx_ctx_teardown)
int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_configure_rejects_bad_sizes_and_alignment),
		T(test_state_get_reports_indices),
		T(test_state_set_continues_on_new_queue),
		T(test_unpop_returns_chains_in_pop_order),
		T(test_unpop_rejects_filled_or_too_many),
		T(test_reset_unconfigures_and_clears_break),
		T(test_configure_uaddr_address_space),
		T(test_memory_table_swap_re_resolves_ring),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
