/* SPDX-License-Identifier: MIT */
/*
 * The device side of a packed ring against the MUST clauses of virtio 1.x 2.8, with the test
 * playing the driver on a hand-built ring.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "packed_fixture.h"

#define F_IND VQS_BIT(VQS_F_INDIRECT_DESC)
#define F_EVIDX VQS_BIT(VQS_F_EVENT_IDX)
#define WRAP_BIT (1u << VQS_VRING_PACKED_EVENT_F_WRAP_CTR)

struct ctx {
	struct tmem m;
};

static int setup(void **state)
{
	static struct ctx c;
	memset(&c, 0, sizeof(c));
	tmem_init(&c.m, PFX_GPA_BASE, PFX_ARENA);
	*state = &c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	tmem_fini(&c->m);
	return 0;
}

/* 2.8.1: "The device MUST NOT use a descriptor unless it observed its AVAIL flag set and its
 * USED flag clear relative to the Device Ring Wrap Counter". */
static void device_must_not_use_descriptor_not_available_with_wrap_counter(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	struct iovec iov[4];
	struct vqs_elem e;
	uint64_t buf = tmem_buf(&c->m, 32, 1);
	/* Neither bit, both bits, and "available" for the other wrap counter: none is ours. */
	const uint16_t not_ours[] = {0, PFX_F_AVAIL | PFX_F_USED, pfx_avail_bits(false)};
	for (unsigned i = 0; i < 3; i++) {
		pfx_raw(&r, 0, buf, 32, 0, not_ours[i]);
		assert_int_equal(pfx_pop(r.vq, &e, iov, 4), -EAGAIN);
		assert_false(vqs_vq_is_broken(r.vq));
	}
	pfx_raw(&r, 0, buf, 32, 0, pfx_avail_bits(true));
	assert_int_equal(pfx_pop(r.vq, &e, iov, 4), 0);
	assert_int_equal(e.id, 0);
	assert_int_equal(e.out_len, 32);
	pfx_ring_fini(&r);
}

/* 2.8.21.2 (device side of 2.8.7): id and len of a used descriptor are written before its flags,
 * and the flags of the first used descriptor of a batch are written last, by the flush. */
static void device_must_write_used_flags_after_id_and_len(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	pfx_simple(&r, 2, 64, true);
	pfx_simple(&r, 1, 64, true);
	struct iovec iov[4];
	struct vqs_elem a, b;
	assert_int_equal(pfx_pop(r.vq, &a, iov, 2), 0);
	assert_int_equal(pfx_pop(r.vq, &b, iov + 2, 2), 0);
	uint16_t before = pfx_flags(&r, 0);
	assert_int_equal(vqs_vq_fill(r.vq, &b, 10), 0);
	assert_int_equal(vqs_vq_fill(r.vq, &a, 20), 0);
	/* Staged: id and len are in place, but the first descriptor still reads as available,
	 * so the driver sees nothing yet. */
	assert_int_equal(r.desc[0].id, 1);
	assert_int_equal(r.desc[0].len, 10);
	assert_int_equal(pfx_flags(&r, 0), before);
	uint16_t id;
	uint32_t len;
	assert_false(pfx_get_used(&r, 1, &id, &len));
	assert_int_equal(vqs_vq_flush(r.vq), 2);
	assert_true(pfx_get_used(&r, 1, &id, &len));
	assert_int_equal(id, 1);
	assert_int_equal(len, 10);
	assert_true(pfx_get_used(&r, 1, &id, &len));
	assert_int_equal(id, 2);
	assert_int_equal(len, 20);
	/* Written bytes: WRITE is set in a used descriptor that reports them. */
	assert_true(pfx_flags(&r, 0) & VQS_VRING_DESC_F_WRITE);
	pfx_ring_fini(&r);
}

/* 2.8.6/2.8.7: the buffer id is taken from the chain's last descriptor, and the used
 * descriptor is followed by as many skipped slots as the chain occupied. */
static void device_uses_last_descriptor_id_and_skips_chain_slots(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 8, 0);
	struct pfx_desc chain[3] = {{tmem_buf(&c->m, 16, 1), 16, 7, 0},
				    {tmem_buf(&c->m, 16, 2), 16, 7, 0},
				    {tmem_buf(&c->m, 32, 3), 32, 5, VQS_VRING_DESC_F_WRITE}};
	pfx_chain(&r, chain, 3);
	pfx_simple(&r, 6, 8, false);
	struct iovec iov[8];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(r.vq, &e, iov, 8), 0);
	assert_int_equal(e.id, 5);
	assert_int_equal(e.ndescs, 3);
	assert_int_equal(e.out_num, 2);
	assert_int_equal(e.in_num, 1);
	assert_int_equal(e.out_len, 32);
	assert_int_equal(e.in_len, 32);
	assert_int_equal(vqs_vq_fill(r.vq, &e, 32), 0);
	assert_int_equal(vqs_vq_flush(r.vq), 1);
	assert_int_equal(pfx_complete_one(&r, 0), 6);
	uint16_t id;
	uint32_t len;
	assert_true(pfx_get_used(&r, 3, &id, &len));
	assert_int_equal(id, 5);
	assert_true(pfx_get_used(&r, 1, &id, &len)); /* found at slot 3, not slot 1 */
	assert_int_equal(id, 6);
	struct vqs_vq_state st;
	vqs_vq_get_state(r.vq, &st);
	assert_int_equal(st.last_avail_idx, 4);
	assert_int_equal(st.used_idx, 4);
	pfx_ring_fini(&r);
}

/* 2.8.19: the device reads the indirect table's entries in order and ignores WRITE on the
 * descriptor that refers to the table. */
static void device_reads_indirect_table_and_ignores_write_on_it(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, F_IND);
	uint64_t tab_gpa = tmem_alloc(&c->m, 3 * 16, 16);
	struct vqs_vring_packed_desc *tab = tmem_host(&c->m, tab_gpa, 3 * 16);
	tab[0] = (struct vqs_vring_packed_desc){tmem_buf(&c->m, 10, 1), 10, 0, 0};
	tab[1] = (struct vqs_vring_packed_desc){tmem_buf(&c->m, 20, 2), 20, 0, 0};
	tab[2] = (struct vqs_vring_packed_desc){tmem_buf(&c->m, 30, 3), 30, 0,
						VQS_VRING_DESC_F_WRITE};
	struct pfx_desc d = {tab_gpa, 3 * 16, 3,
			     VQS_VRING_DESC_F_INDIRECT | VQS_VRING_DESC_F_WRITE};
	pfx_chain(&r, &d, 1);
	struct iovec iov[4];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(r.vq, &e, iov, 4), 0);
	assert_int_equal(e.id, 3);
	assert_int_equal(e.ndescs, 1);
	assert_int_equal(e.out_num, 2);
	assert_int_equal(e.in_num, 1);
	assert_int_equal(e.out_len, 30);
	assert_int_equal(e.in_len, 30);
	assert_int_equal(iov[1].iov_len, 20);
	assert_int_equal(((uint8_t *)iov[1].iov_base)[0], 2);
	pfx_ring_fini(&r);
}

/* 2.8.1-2.8.3: many rounds over a ring whose size is not a power of two: both wrap counters
 * flip at the end of the ring, and every round's descriptors are found and used. */
static void device_wrap_counters_flip_over_many_rounds(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 5, 0);
	uint64_t buf = tmem_buf(&c->m, 64, 0);
	for (unsigned round = 0; round < 200; round++) {
		/* Chains of 1 and 2 descriptors, so that chains straddle the ring end. */
		unsigned n = 1 + round % 2;
		struct pfx_desc d[2] = {{buf, 16, (uint16_t)(round % 5), 0},
					{buf + 16, 16, (uint16_t)(round % 5), VQS_VRING_DESC_F_WRITE}};
		pfx_chain(&r, d, n);
		struct iovec iov[4];
		struct vqs_elem e, none;
		assert_int_equal(pfx_pop(r.vq, &e, iov, 2), 0);
		assert_int_equal(e.id, round % 5);
		assert_int_equal(e.ndescs, n);
		assert_int_equal(pfx_pop(r.vq, &none, iov + 2, 2), -EAGAIN);
		assert_int_equal(vqs_vq_fill(r.vq, &e, n == 2 ? 16 : 0), 0);
		assert_int_equal(vqs_vq_flush(r.vq), 1);
		uint16_t id;
		uint32_t len;
		assert_true(pfx_get_used(&r, n, &id, &len));
		assert_int_equal(id, round % 5);
		struct vqs_vq_state st;
		vqs_vq_get_state(r.vq, &st);
		assert_int_equal(st.last_avail_idx, r.avail_idx);
		assert_int_equal(st.avail_wrap, r.avail_wrap);
		assert_int_equal(st.used_idx, r.used_idx);
		assert_int_equal(st.used_wrap, r.used_wrap);
	}
	assert_false(vqs_vq_is_broken(r.vq));
	pfx_ring_fini(&r);
}

/* 2.8.10: driver event suppression. DISABLE: the device MUST NOT send notifications; ENABLE:
 * it sends them; DESC (EVENT_IDX only): once the used position passes off_wrap. */
static void device_must_follow_driver_event_suppression(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, F_EVIDX);
	pfx_set_driver_event(&r, 0, VQS_RING_EVENT_FLAGS_DISABLE);
	pfx_simple(&r, 0, 8, false);
	pfx_complete_one(&r, 0);
	assert_false(vqs_vq_need_call(r.vq));
	pfx_set_driver_event(&r, 0, VQS_RING_EVENT_FLAGS_ENABLE);
	pfx_simple(&r, 1, 8, false);
	pfx_complete_one(&r, 0);
	assert_true(vqs_vq_need_call(r.vq));
	/* Nothing new published: no call. */
	assert_false(vqs_vq_need_call(r.vq));
	/* Ask for an event at slot 3 of this round: slot 2 does not reach it, slot 3 does. */
	pfx_set_driver_event(&r, 3 | WRAP_BIT, VQS_RING_EVENT_FLAGS_DESC);
	pfx_simple(&r, 2, 8, false);
	pfx_complete_one(&r, 0);
	assert_false(vqs_vq_need_call(r.vq));
	pfx_simple(&r, 3, 8, false);
	pfx_complete_one(&r, 0);
	assert_true(vqs_vq_need_call(r.vq));
	/* An event in the next round (wrap counter 0) at slot 1: slot 0 does not reach it. */
	pfx_set_driver_event(&r, 1, VQS_RING_EVENT_FLAGS_DESC);
	pfx_simple(&r, 0, 8, false);
	pfx_complete_one(&r, 0);
	assert_false(vqs_vq_need_call(r.vq));
	pfx_simple(&r, 1, 8, false);
	pfx_complete_one(&r, 0);
	assert_true(vqs_vq_need_call(r.vq));
	pfx_ring_fini(&r);
}

/* After set_state (a backend restarted on a running ring) the device does not know what the
 * previous backend told the driver: its first call decision is unconditional, even when the
 * driver's event lies behind the restored used position (the crashed backend passed it, maybe
 * without the call). Later decisions follow the event again. Split rings and DPDK do the same. */
static void device_calls_unconditionally_first_after_set_state(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 8, F_EVIDX);
	struct vqs_vq_state st = {.last_avail_idx = 5, .used_idx = 5, .avail_wrap = true,
				  .used_wrap = true};
	assert_int_equal(vqs_vq_set_state(r.vq, &st), 0);
	r.avail_idx = r.used_idx = 5;
	pfx_set_driver_event(&r, 2 | WRAP_BIT, VQS_RING_EVENT_FLAGS_DESC);
	pfx_simple(&r, 0, 8, false);
	pfx_complete_one(&r, 0);
	assert_true(vqs_vq_need_call(r.vq));
	pfx_simple(&r, 1, 8, false);
	pfx_complete_one(&r, 0);
	assert_false(vqs_vq_need_call(r.vq));
	pfx_ring_fini(&r);
}

/* Without EVENT_IDX, DESC is not a valid mode: the device falls back to notifying. */
static void device_treats_desc_mode_without_event_idx_as_enable(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	pfx_set_driver_event(&r, 3 | WRAP_BIT, VQS_RING_EVENT_FLAGS_DESC);
	pfx_simple(&r, 0, 8, false);
	pfx_complete_one(&r, 0);
	assert_true(vqs_vq_need_call(r.vq));
	pfx_ring_fini(&r);
}

/* 2.8.10: device event suppression written by the device: DISABLE, then ENABLE (or DESC at
 * its next slot with EVENT_IDX), and the re-check that closes the race with a skipped kick. */
static void device_event_suppression_and_enable_recheck(void **state)
{
	struct ctx *c = *state;
	for (int evidx = 0; evidx < 2; evidx++) {
		struct pfx_ring r;
		pfx_ring_init(&r, &c->m, 4, evidx ? F_EVIDX : 0);
		uint16_t off_wrap, flags;
		pfx_simple(&r, 0, 8, false);
		pfx_complete_one(&r, 0);
		vqs_vq_disable_notify(r.vq);
		pfx_device_event(&r, &off_wrap, &flags);
		assert_int_equal(flags, VQS_RING_EVENT_FLAGS_DISABLE);
		/* Nothing arrived while disabled: safe to sleep. */
		assert_false(vqs_vq_enable_notify(r.vq));
		pfx_device_event(&r, &off_wrap, &flags);
		if (evidx) {
			assert_int_equal(flags, VQS_RING_EVENT_FLAGS_DESC);
			assert_int_equal(off_wrap, 1 | WRAP_BIT);
		} else {
			assert_int_equal(flags, VQS_RING_EVENT_FLAGS_ENABLE);
		}
		/* A chain arriving while disabled (its kick suppressed) is reported. */
		vqs_vq_disable_notify(r.vq);
		pfx_simple(&r, 1, 8, false);
		assert_true(vqs_vq_enable_notify(r.vq));
		pfx_ring_fini(&r);
	}
}

/* Unpop rewinds by the chains' descriptor counts, across the ring end (wrap counter back). */
static void device_unpop_rewinds_across_the_ring_end(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	pfx_simple(&r, 0, 8, false);
	pfx_simple(&r, 1, 8, false);
	pfx_complete_one(&r, 0);
	pfx_complete_one(&r, 0);
	uint64_t buf = tmem_buf(&c->m, 64, 0);
	struct pfx_desc three[3] = {{buf, 8, 2, 0}, {buf + 8, 8, 2, 0}, {buf + 16, 8, 2, 0}};
	pfx_chain(&r, three, 3); /* slots 2, 3, 0 */
	struct iovec iov[8];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(r.vq, &e, iov, 8), 0);
	struct vqs_vq_state st;
	vqs_vq_get_state(r.vq, &st);
	assert_int_equal(st.last_avail_idx, 1);
	assert_false(st.avail_wrap);
	assert_int_equal(vqs_vq_unpop(r.vq, &e, 1), 0);
	vqs_vq_get_state(r.vq, &st);
	assert_int_equal(st.last_avail_idx, 2);
	assert_true(st.avail_wrap);
	/* Giving back more than was popped is refused. */
	assert_int_equal(vqs_vq_unpop(r.vq, &e, 1), -EINVAL);
	assert_int_equal(pfx_pop(r.vq, &e, iov, 8), 0);
	assert_int_equal(e.id, 2);
	assert_int_equal(e.ndescs, 3);
	assert_int_equal(vqs_vq_fill(r.vq, &e, 0), 0);
	/* A filled chain cannot be given back. */
	assert_int_equal(vqs_vq_unpop(r.vq, &e, 1), -EINVAL);
	assert_int_equal(vqs_vq_flush(r.vq), 1);
	pfx_ring_fini(&r);
}

/* Fill and unpop step over the slots each chain took as the pop counted them, whatever the
 * caller's element says: an element whose ndescs was changed after the pop neither moves the
 * used entries off their slots nor rewinds over a chain still in flight. */
static void device_fill_and_unpop_go_by_the_slots_popped(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 8, 0);
	pfx_simple(&r, 0, 8, false);
	pfx_simple(&r, 1, 8, false);
	struct iovec iov[4];
	struct vqs_elem e[2];
	assert_int_equal(pfx_pop(r.vq, &e[0], iov, 2), 0);
	assert_int_equal(pfx_pop(r.vq, &e[1], iov + 2, 2), 0);
	e[0].ndescs = 2;
	assert_int_equal(vqs_vq_fill(r.vq, &e[0], 0), 0);
	assert_int_equal(vqs_vq_fill(r.vq, &e[1], 0), 0);
	assert_int_equal(vqs_vq_flush(r.vq), 2);
	uint16_t id;
	uint32_t len;
	assert_true(pfx_get_used(&r, 1, &id, &len));
	assert_int_equal(id, 0);
	assert_true(pfx_get_used(&r, 1, &id, &len));
	assert_int_equal(id, 1);
	struct vqs_vq_state st;
	vqs_vq_get_state(r.vq, &st);
	assert_int_equal(st.used_idx, 2);
	/* unpop of the second of two chains of one slot, told it took two: one slot back */
	pfx_simple(&r, 2, 8, false);
	pfx_simple(&r, 3, 8, false);
	assert_int_equal(pfx_pop(r.vq, &e[0], iov, 2), 0);
	assert_int_equal(pfx_pop(r.vq, &e[1], iov + 2, 2), 0);
	e[1].ndescs = 2;
	assert_int_equal(vqs_vq_unpop(r.vq, &e[1], 1), 0);
	vqs_vq_get_state(r.vq, &st);
	assert_int_equal(st.last_avail_idx, 3);
	assert_int_equal(pfx_pop(r.vq, &e[1], iov + 2, 2), 0);
	assert_int_equal(e[1].id, 3);
	assert_false(vqs_vq_is_broken(r.vq));
	pfx_ring_fini(&r);
}

/* Too little iovec storage: the chain is served from the queue's long-chain area. */
static void device_short_iov_storage_is_served(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	uint64_t buf = tmem_buf(&c->m, 64, 0);
	struct pfx_desc d[3] = {{buf, 8, 0, 0}, {buf + 8, 8, 0, 0}, {buf + 16, 8, 1, 0}};
	pfx_chain(&r, d, 3);
	struct iovec iov[3];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(r.vq, &e, iov, 2), 0);
	assert_int_equal(e.id, 1);
	assert_int_equal(e.out_num, 3);
	assert_ptr_equal(e.iov[2].iov_base, tmem_host(&c->m, buf + 16, 8));
	assert_int_equal(vqs_vq_fill(r.vq, &e, 0), 0);
	assert_int_equal(vqs_vq_flush(r.vq), 1);
	pfx_ring_fini(&r);
}

/* get/set_state carry both wrap counters; out-of-range slots are refused. */
static void device_state_round_trip_with_wrap_counters(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	struct vqs_vq_state st = {.last_avail_idx = 2, .used_idx = 2, .avail_wrap = false,
				  .used_wrap = false};
	assert_int_equal(vqs_vq_set_state(r.vq, &st), 0);
	r.avail_idx = r.used_idx = 2;
	r.avail_wrap = r.used_wrap = false;
	pfx_simple(&r, 3, 8, false);
	assert_int_equal(pfx_complete_one(&r, 0), 3);
	uint16_t id;
	uint32_t len;
	assert_true(pfx_get_used(&r, 1, &id, &len));
	struct vqs_vq_state got;
	vqs_vq_get_state(r.vq, &got);
	assert_int_equal(got.last_avail_idx, 3);
	assert_false(got.avail_wrap);
	assert_int_equal(got.used_idx, 3);
	assert_false(got.used_wrap);
	struct vqs_vq_state bad = {.last_avail_idx = 4};
	assert_int_equal(vqs_vq_set_state(r.vq, &bad), -EINVAL);
	bad = (struct vqs_vq_state){.used_idx = 4};
	assert_int_equal(vqs_vq_set_state(r.vq, &bad), -EINVAL);
	pfx_ring_fini(&r);
}

/* Fill refuses what is not in flight and lengths beyond the writable bytes. */
static void device_fill_rejects_unknown_id_and_overlong_write(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	pfx_simple(&r, 1, 16, true);
	struct iovec iov[2];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(r.vq, &e, iov, 2), 0);
	assert_int_equal(vqs_vq_fill(r.vq, &e, 17), -EINVAL);
	struct vqs_elem other = e;
	other.id = 2;
	assert_int_equal(vqs_vq_fill(r.vq, &other, 0), -EINVAL);
	assert_int_equal(vqs_vq_fill(r.vq, &e, 16), 0);
	assert_int_equal(vqs_vq_fill(r.vq, &e, 16), -EINVAL); /* no longer in flight */
	assert_int_equal(vqs_vq_flush(r.vq), 1);
	pfx_ring_fini(&r);
}

/* avail_count (a session's begin) reads one descriptor's flags, the next slot's: 0 when it is not
 * available, else the most chains the driver can have made available, the queue size less the
 * descriptors popped and not yet filled; a pop finds how many there are. */
static void device_avail_count_is_zero_or_the_room_for_chains(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 8, 0);
	assert_int_equal(vqs_vq_avail_count(r.vq), 0);
	uint64_t buf = tmem_buf(&c->m, 64, 0);
	struct pfx_desc two[2] = {{buf, 8, 1, 0}, {buf + 8, 8, 1, 0}};
	pfx_simple(&r, 0, 8, false);
	pfx_chain(&r, two, 2);
	pfx_simple(&r, 2, 8, false);
	assert_int_equal(vqs_vq_avail_count(r.vq), 8);
	struct iovec iov[3][2];
	struct vqs_elem e[3];
	assert_int_equal(pfx_pop(r.vq, &e[0], iov[0], 2), 0);
	assert_int_equal(vqs_vq_avail_count(r.vq), 7);
	assert_int_equal(pfx_pop(r.vq, &e[1], iov[1], 2), 0);
	assert_int_equal(vqs_vq_avail_count(r.vq), 5);
	/* give-backs make the room again */
	assert_int_equal(vqs_vq_unpop(r.vq, &e[1], 1), 0);
	assert_int_equal(vqs_vq_avail_count(r.vq), 7);
	assert_int_equal(pfx_pop(r.vq, &e[1], iov[1], 2), 0);
	assert_int_equal(pfx_pop(r.vq, &e[2], iov[2], 2), 0);
	assert_int_equal(vqs_vq_avail_count(r.vq), 0);
	/* fills make room, and a chain offered in it counts */
	assert_int_equal(vqs_vq_fill(r.vq, &e[0], 0), 0);
	assert_int_equal(vqs_vq_flush(r.vq), 1);
	assert_int_equal(pfx_get_used(&r, 1, &(uint16_t){0}, &(uint32_t){0}), true);
	pfx_simple(&r, 0, 8, false);
	assert_int_equal(vqs_vq_avail_count(r.vq), 5);
	pfx_ring_fini(&r);
}

/* A legal chain longer than any look ahead (up to the queue size, 2.8.18) is counted, so a caller
 * that pops only what the count shows (the scheduler) pops it; before the count took the whole
 * look, it said 0 and such a chain was never served. */
static void device_avail_count_sees_a_chain_longer_than_its_look(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	enum { NUM = 512, LONG = 300 };
	pfx_ring_init(&r, &c->m, NUM, 0);
	uint64_t buf = tmem_buf(&c->m, LONG, 0);
	static struct pfx_desc d[LONG];
	for (unsigned i = 0; i < LONG; i++)
		d[i] = (struct pfx_desc){buf + i, 1, 7, 0};
	pfx_chain(&r, d, LONG);
	assert_true(vqs_vq_avail_count(r.vq) >= 1);
	static struct iovec iov[LONG];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(r.vq, &e, iov, LONG), 0);
	assert_int_equal(e.out_len, LONG);
	assert_int_equal(vqs_vq_avail_count(r.vq), 0);
	pfx_ring_fini(&r);
}

/* Each descriptor's flags are read once: the head's flags that begin read (and found available)
 * are the ones its pop goes by, even when the slot says otherwise by the time of the pop. Before,
 * the pop read them again and found nothing. */
static void device_pop_goes_by_the_flags_begin_read(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 8, 0);
	uint64_t buf = tmem_buf(&c->m, 64, 0);
	pfx_raw(&r, 0, buf, 16, 3, VQS_VRING_DESC_F_WRITE | pfx_avail_bits(true));
	struct iovec iov[1];
	struct vqs_elem e = {.iov = iov, .iov_cap = 1}, *pe = &e;
	vqs_mem_read_lock();
	struct vqs_vq_session ss;
	assert_true(vqs_vq_session_begin(r.vq, &ss) > 0);
	/* a driver that takes the slot back: no longer available, no WRITE */
	pfx_raw(&r, 0, buf, 16, 3, pfx_avail_bits(false));
	assert_int_equal(vqs_vq_session_pop(&ss, &(struct vqs_pop_to){.base = pe}, 1), 1);
	vqs_vq_session_pause(&ss);
	vqs_mem_read_unlock();
	assert_int_equal(e.id, 3);
	assert_int_equal(e.in_num, 1);
	assert_int_equal(e.in_len, 16);
	assert_false(vqs_vq_is_broken(r.vq));
	pfx_ring_fini(&r);
}

/* vhost-user hands ring areas over as frontend virtual addresses; buffers stay guest physical. */
static void device_resolves_ring_areas_given_as_uaddr(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	struct vqs_mem_region reg;
	vqs_gmem_region(c->m.gmem, &reg);
	struct vqs_vq_config cfg;
	pfx_ring_config(&r, &cfg);
	cfg.addr_space = VQS_ADDR_UADDR;
	cfg.desc_addr = reg.uaddr + (r.desc_gpa - reg.gpa);
	cfg.driver_addr = reg.uaddr + (r.driver_gpa - reg.gpa);
	cfg.device_addr = reg.uaddr + (r.device_gpa - reg.gpa);
	assert_int_equal(vqs_vq_configure(r.vq, &cfg), 0);
	pfx_simple(&r, 1, 24, true);
	assert_int_equal(pfx_complete_one(&r, 24), 1);
	uint16_t id;
	uint32_t len;
	assert_true(pfx_get_used(&r, 1, &id, &len));
	assert_int_equal(len, 24);
	pfx_ring_fini(&r);
}

/* A replaced memory table (same guest memory, new generation) is picked up between pops: the
 * ring areas are resolved again, and staged used entries still publish. */
static void device_survives_memory_table_replacement(void **state)
{
	struct ctx *c = *state;
	struct pfx_ring r;
	pfx_ring_init(&r, &c->m, 4, 0);
	pfx_simple(&r, 0, 8, true);
	pfx_simple(&r, 1, 8, true);
	struct iovec iov[2];
	struct vqs_elem a, b;
	assert_int_equal(pfx_pop(r.vq, &a, iov, 1), 0);
	assert_int_equal(vqs_vq_fill(r.vq, &a, 8), 0);
	struct vqs_mem_region reg;
	vqs_gmem_region(c->m.gmem, &reg);
	assert_int_equal(vqs_mem_set(c->m.mem, &reg, 1), 0);
	assert_int_equal(pfx_pop(r.vq, &b, iov + 1, 1), 0);
	assert_int_equal(vqs_vq_fill(r.vq, &b, 8), 0);
	assert_int_equal(vqs_vq_flush(r.vq), 2);
	uint16_t id;
	uint32_t len;
	assert_true(pfx_get_used(&r, 1, &id, &len));
	assert_true(pfx_get_used(&r, 1, &id, &len));
	assert_int_equal(id, 1);
	pfx_ring_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(device_must_not_use_descriptor_not_available_with_wrap_counter),
		cmocka_unit_test(device_must_write_used_flags_after_id_and_len),
		cmocka_unit_test(device_uses_last_descriptor_id_and_skips_chain_slots),
		cmocka_unit_test(device_reads_indirect_table_and_ignores_write_on_it),
		cmocka_unit_test(device_wrap_counters_flip_over_many_rounds),
		cmocka_unit_test(device_must_follow_driver_event_suppression),
		cmocka_unit_test(device_calls_unconditionally_first_after_set_state),
		cmocka_unit_test(device_treats_desc_mode_without_event_idx_as_enable),
		cmocka_unit_test(device_event_suppression_and_enable_recheck),
		cmocka_unit_test(device_unpop_rewinds_across_the_ring_end),
		cmocka_unit_test(device_fill_and_unpop_go_by_the_slots_popped),
		cmocka_unit_test(device_short_iov_storage_is_served),
		cmocka_unit_test(device_state_round_trip_with_wrap_counters),
		cmocka_unit_test(device_fill_rejects_unknown_id_and_overlong_write),
		cmocka_unit_test(device_avail_count_is_zero_or_the_room_for_chains),
		cmocka_unit_test(device_pop_goes_by_the_flags_begin_read),
		cmocka_unit_test(device_avail_count_sees_a_chain_longer_than_its_look),
		cmocka_unit_test(device_resolves_ring_areas_given_as_uaddr),
		cmocka_unit_test(device_survives_memory_table_replacement),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
