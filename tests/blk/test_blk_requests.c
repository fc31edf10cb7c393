/* SPDX-License-Identifier: MIT */
/*
 * vqs-blk request handling (virtio 1.2, 5.2.6), including what a hostile guest may send: every
 * malformed request gets an error status (or, with no writable byte, nothing) and the device
 * keeps serving; nothing outside the disk is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "blk_fixture.h"

#define DISK (1u << 20)
#define SECTORS (DISK / 512u)

struct ctx {
	struct blk_env e;
	struct blk_slot s;
};

/* One vqs-blk for a group of tests; with `client`, vqs-blk connects to a listening frontend. */
static int start(void **state, uint16_t queues, bool client)
{
	struct ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return -1;
	*state = c;
	return blk_env_start(&c->e, DISK, queues, client) < 0 ||
			       blk_slot_alloc(&c->e, &c->s, 64 * 1024) < 0
		       ? -1
		       : 0;
}

static int setup(void **state) { return start(state, 1, false); }
static int setup_client(void **state) { return start(state, 2, true); }

/* Also after a failed setup or assertion: no vqs-blk is left running. */
static int teardown(void **state)
{
	struct ctx *c = *state;
	if (!c)
		return -1;
	int status = blk_env_stop(&c->e);
	free(c);
	return status == 0 ? 0 : -1;
}

static void set_hdr(struct ctx *c, uint32_t type, uint64_t sector)
{
	uint32_t *h = blk_host(&c->e, c->s.hdr, 16);
	h[0] = type;
	h[1] = 0;
	memcpy(h + 2, &sector, 8);
	*(uint8_t *)blk_host(&c->e, c->s.status, 1) = 0xff;
}

/* The usual chain: header, data (readable for OUT/DISCARD), status. Returns the status. */
static int rq(struct ctx *c, uint32_t type, uint64_t sector, uint32_t len)
{
	set_hdr(c, type, sector);
	struct vqs_drv_buf b[3] = { { c->s.hdr, 16 }, { c->s.data, len }, { c->s.status, 1 } };
	bool readable = type == BLK_T_OUT || type == BLK_T_DISCARD;
	int r = len ? blk_submit_wait(&c->e, 0, b, readable ? 2 : 1, readable ? 1 : 2)
		    : blk_submit_wait(&c->e, 0, (struct vqs_drv_buf[]){ b[0], b[2] }, 1, 1);
	if (r < 0)
		return r;
	return blk_slot_status(&c->e, &c->s);
}

static uint8_t *data(struct ctx *c, size_t len) { return blk_host(&c->e, c->s.data, len); }

static void test_write_read_roundtrip_and_flush(void **state)
{
	struct ctx *c = *state;
	memset(data(c, 4096), 0x5a, 4096);
	assert_int_equal(rq(c, BLK_T_OUT, 8, 4096), BLK_S_OK);
	memset(data(c, 4096), 0, 4096);
	assert_int_equal(rq(c, BLK_T_IN, 8, 4096), BLK_S_OK);
	for (unsigned i = 0; i < 4096; i++)
		assert_int_equal(data(c, 4096)[i], 0x5a);
	assert_int_equal(rq(c, BLK_T_FLUSH, 0, 0), BLK_S_OK);
}

static void test_read_reports_data_and_status_bytes_written(void **state)
{
	struct ctx *c = *state;
	set_hdr(c, BLK_T_IN, 0);
	struct vqs_drv_buf b[3] = { { c->s.hdr, 16 }, { c->s.data, 1024 }, { c->s.status, 1 } };
	assert_int_equal(blk_submit_wait(&c->e, 0, b, 1, 2), 1025);
}

static void test_get_id_returns_serial(void **state)
{
	struct ctx *c = *state;
	memset(data(c, 20), 0xee, 20);
	assert_int_equal(rq(c, BLK_T_GET_ID, 0, 20), BLK_S_OK);
	assert_memory_equal(data(c, 20), "vqs-test-disk\0\0\0\0\0\0\0", 20);
}

static void test_discard_reads_back_zeroes(void **state)
{
	struct ctx *c = *state;
	memset(data(c, 8192), 0x77, 8192);
	assert_int_equal(rq(c, BLK_T_OUT, 64, 8192), BLK_S_OK);
	struct { uint64_t sector; uint32_t num, flags; } seg = { 64, 16, 0 };
	memcpy(data(c, sizeof(seg)), &seg, sizeof(seg));
	assert_int_equal(rq(c, BLK_T_DISCARD, 0, sizeof(seg)), BLK_S_OK);
	assert_int_equal(rq(c, BLK_T_IN, 64, 8192), BLK_S_OK);
	for (unsigned i = 0; i < 8192; i++)
		assert_int_equal(data(c, 8192)[i], 0);
}

static void test_hostile_sector_past_capacity_is_ioerr(void **state)
{
	struct ctx *c = *state;
	assert_int_equal(rq(c, BLK_T_IN, SECTORS, 512), BLK_S_IOERR);
	assert_int_equal(rq(c, BLK_T_OUT, SECTORS - 1, 1024), BLK_S_IOERR);
	/* sector + length wrapping around 2^64 */
	assert_int_equal(rq(c, BLK_T_OUT, UINT64_MAX, 512), BLK_S_IOERR);
	assert_int_equal(rq(c, BLK_T_IN, UINT64_MAX >> 9, 512), BLK_S_IOERR);
	/* The last sector itself is fine. */
	assert_int_equal(rq(c, BLK_T_IN, SECTORS - 1, 512), BLK_S_OK);
}

static void test_hostile_length_not_sector_multiple_is_ioerr(void **state)
{
	struct ctx *c = *state;
	assert_int_equal(rq(c, BLK_T_IN, 0, 511), BLK_S_IOERR);
	assert_int_equal(rq(c, BLK_T_OUT, 0, 513), BLK_S_IOERR);
}

static void test_hostile_unknown_type_is_unsupp(void **state)
{
	struct ctx *c = *state;
	assert_int_equal(rq(c, 0x7777, 0, 0), BLK_S_UNSUPP);
}

static void test_hostile_short_header_is_ioerr(void **state)
{
	struct ctx *c = *state;
	set_hdr(c, BLK_T_IN, 0);
	struct vqs_drv_buf b[2] = { { c->s.hdr, 8 }, { c->s.status, 1 } };
	assert_int_equal(blk_submit_wait(&c->e, 0, b, 1, 1), 1);
	assert_int_equal(blk_slot_status(&c->e, &c->s), BLK_S_IOERR);
}

static void test_hostile_no_writable_byte_completes_with_nothing(void **state)
{
	struct ctx *c = *state;
	set_hdr(c, BLK_T_IN, 0);
	struct vqs_drv_buf b[1] = { { c->s.hdr, 16 } };
	assert_int_equal(blk_submit_wait(&c->e, 0, b, 1, 0), 0);
	/* and the device still serves */
	assert_int_equal(rq(c, BLK_T_IN, 0, 512), BLK_S_OK);
}

static void test_hostile_header_split_across_buffers_is_accepted(void **state)
{
	struct ctx *c = *state;
	/* VERSION_1 implies ANY_LAYOUT: the header may be cut anywhere. */
	set_hdr(c, BLK_T_IN, 2);
	struct vqs_drv_buf b[4] = { { c->s.hdr, 5 }, { c->s.hdr + 5, 11 }, { c->s.data, 512 },
				    { c->s.status, 1 } };
	assert_int_equal(blk_submit_wait(&c->e, 0, b, 2, 2), 513);
	assert_int_equal(blk_slot_status(&c->e, &c->s), BLK_S_OK);
}

/* seg_max (config) is what the device serves: a request with that many data segments works. */
static void test_request_with_seg_max_segments_is_served(void **state)
{
	struct ctx *c = *state;
	enum { SEGS = 64 }; /* well past the scheduler's default of 16 iovecs per request */
	struct vqs_drv_buf b[SEGS + 2];
	uint8_t *d = data(c, SEGS * 512);
	for (unsigned i = 0; i < SEGS * 512; i++)
		d[i] = (uint8_t)(i * 7 + 3);
	set_hdr(c, BLK_T_OUT, 16);
	b[0] = (struct vqs_drv_buf){ c->s.hdr, 16 };
	for (unsigned i = 0; i < SEGS; i++)
		b[1 + i] = (struct vqs_drv_buf){ c->s.data + i * 512, 512 };
	b[SEGS + 1] = (struct vqs_drv_buf){ c->s.status, 1 };
	assert_int_equal(blk_submit_wait(&c->e, 0, b, SEGS + 1, 1), 1);
	assert_int_equal(blk_slot_status(&c->e, &c->s), BLK_S_OK);
	memset(d, 0, SEGS * 512);
	set_hdr(c, BLK_T_IN, 16);
	assert_int_equal(blk_submit_wait(&c->e, 0, b, 1, SEGS + 1), SEGS * 512 + 1);
	assert_int_equal(blk_slot_status(&c->e, &c->s), BLK_S_OK);
	for (unsigned i = 0; i < SEGS * 512; i++)
		assert_int_equal(d[i], (uint8_t)(i * 7 + 3));
}

static void test_hostile_write_with_writable_data_is_ioerr(void **state)
{
	struct ctx *c = *state;
	/* OUT whose data sits in writable buffers: the device must not read guest-writable data
	 * as the payload nor report it written. */
	assert_int_equal(rq(c, BLK_T_OUT, 0, 0), BLK_S_OK); /* a zero-length write is fine */
	set_hdr(c, BLK_T_OUT, 0);
	struct vqs_drv_buf b[3] = { { c->s.hdr, 16 }, { c->s.data, 512 }, { c->s.status, 1 } };
	assert_int_equal(blk_submit_wait(&c->e, 0, b, 1, 2), 513);
	assert_int_equal(blk_slot_status(&c->e, &c->s), BLK_S_IOERR);
}

static void test_hostile_discard_segments_checked(void **state)
{
	struct ctx *c = *state;
	struct { uint64_t sector; uint32_t num, flags; } seg[2] = { { 0, 8, 0 }, { SECTORS, 8, 0 } };
	memcpy(data(c, sizeof(seg)), seg, sizeof(seg));
	assert_int_equal(rq(c, BLK_T_DISCARD, 0, sizeof(seg)), BLK_S_IOERR);
	seg[1] = (typeof(seg[1])){ 8, 8, 1 }; /* UNMAP is a WRITE_ZEROES flag only */
	memcpy(data(c, sizeof(seg)), seg, sizeof(seg));
	assert_int_equal(rq(c, BLK_T_DISCARD, 0, sizeof(seg)), BLK_S_UNSUPP);
	assert_int_equal(rq(c, BLK_T_DISCARD, 0, 15), BLK_S_IOERR); /* not whole segments */
	assert_int_equal(rq(c, BLK_T_DISCARD, 0, 0), BLK_S_IOERR);
}

/* vqs-blk --client connects to a listening frontend and serves it the same way. */
static void test_client_mode_serves_a_listening_frontend(void **state)
{
	struct ctx *c = *state;
	memset(data(c, 4096), 0x3c, 4096);
	assert_int_equal(rq(c, BLK_T_OUT, 16, 4096), BLK_S_OK);
	memset(data(c, 4096), 0, 4096);
	assert_int_equal(rq(c, BLK_T_IN, 16, 4096), BLK_S_OK);
	assert_int_equal(data(c, 4096)[4095], 0x3c);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_read_roundtrip_and_flush),
		cmocka_unit_test(test_read_reports_data_and_status_bytes_written),
		cmocka_unit_test(test_get_id_returns_serial),
		cmocka_unit_test(test_discard_reads_back_zeroes),
		cmocka_unit_test(test_hostile_sector_past_capacity_is_ioerr),
		cmocka_unit_test(test_hostile_length_not_sector_multiple_is_ioerr),
		cmocka_unit_test(test_hostile_unknown_type_is_unsupp),
		cmocka_unit_test(test_hostile_short_header_is_ioerr),
		cmocka_unit_test(test_hostile_no_writable_byte_completes_with_nothing),
		cmocka_unit_test(test_hostile_header_split_across_buffers_is_accepted),
		cmocka_unit_test(test_request_with_seg_max_segments_is_served),
		cmocka_unit_test(test_hostile_write_with_writable_data_is_ioerr),
		cmocka_unit_test(test_hostile_discard_segments_checked),
	};
	const struct CMUnitTest client[] = {
		cmocka_unit_test(test_client_mode_serves_a_listening_frontend),
	};
	int failed = cmocka_run_group_tests(tests, setup, teardown);
	return failed + cmocka_run_group_tests(client, setup_client, teardown);
}
