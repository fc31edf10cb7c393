/* SPDX-License-Identifier: MIT */
/*
 * vqs_queue_opts.prefetch_lines: the worker prefetches each popped chain's first buffer (for
 * writing when the chain has no readable buffer). A hint only, so what is tested is that every
 * setting serves requests exactly as without it, also for buffers that end on the last byte of
 * guest memory (a prefetch must stay within the buffer's lines), and that a caller built before
 * the field existed (a shorter opts size) still attaches and gets the default.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "pair.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define NUM 16
#define BASE 0x100000u
#define ARENA (1u << 20)
#define LEN 200u

/* Readable chain: echo its first 8 bytes back through the completion length. Write-only chain:
 * fill it with 0x5a. */
static unsigned handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *op)
{
	for (unsigned i = 0; i < n; i++) {
		struct vqs_elem *e = &reqs[i]->elem;
		uint32_t written = 0;
		if (e->out_num == 0 && e->in_num == 1) {
			memset(e->iov[0].iov_base, 0x5a, e->iov[0].iov_len);
			written = (uint32_t)e->iov[0].iov_len;
		}
		vqs_req_complete(reqs[i], written);
	}
	return n;
}

/* o's fields as given, with opts_size as its size (a caller built against an older struct). */
static void fx_init(struct vqs_served_pair *f, const struct vqs_queue_opts *o_in,
		    uint32_t opts_size)
{
	struct vqs_queue_opts o = *o_in;
	o.size = opts_size;
	o.handler = handler;
	assert_int_equal(vqs_served_pair_init(f, NUM, FEATURES, BASE, ARENA, VQS_POLICY_DEDICATED, &o),
			 0);
}

static void fx_fini(struct vqs_served_pair *f)
{
	assert_int_equal(vqs_served_pair_fini(f), 0);
}

/* One chain of LEN bytes ending on the arena's last byte, readable or writable; returns the
 * length the device reported (-1: it never came back). */
static long round_trip(struct vqs_served_pair *f, bool writable)
{
	struct vqs_drv_buf b = {.gpa = BASE + ARENA - LEN, .len = LEN};
	return vqs_pair_round_trip(&f->p, f->kick, f->call, &b, writable ? 0 : 1, writable ? 1 : 0);
}

static void serves_like_without(unsigned lines)
{
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.prefetch_lines = (uint8_t)lines;
	struct vqs_served_pair f;
	fx_init(&f, &o, sizeof(o));
	uint8_t *end = vqs_gmem_host(f.p.gmem, BASE + ARENA - LEN, LEN);
	assert_non_null(end);
	for (int round = 0; round < 8; round++) {
		memset(end, 0, LEN);
		assert_int_equal(round_trip(&f, false), 0);
		assert_int_equal(round_trip(&f, true), LEN);
		for (unsigned i = 0; i < LEN; i++)
			assert_int_equal(end[i], 0x5a);
	}
	assert_false(vqs_vq_is_broken(f.p.dev));
	fx_fini(&f);
}

static void test_prefetch_off_serves_requests(void **state)
{
	serves_like_without(0);
}

static void test_prefetch_default_serves_buffers_ending_at_memory_end(void **state)
{
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	assert_int_equal(o.prefetch_lines, 1);
	serves_like_without(1);
}

static void test_prefetch_more_lines_than_the_buffer_has(void **state)
{
	serves_like_without(255); /* 16 KB asked, 200 bytes there: only the buffer's lines */
}

static void test_opts_from_before_prefetch_lines_attach_with_default(void **state)
{
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.prefetch_lines = 0; /* beyond the older size: must not be read */
	struct vqs_served_pair f;
	fx_init(&f, &o, (uint32_t)offsetof(struct vqs_queue_opts, prefetch_lines));
	assert_int_equal(round_trip(&f, true), LEN);
	fx_fini(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prefetch_off_serves_requests),
		cmocka_unit_test(test_prefetch_default_serves_buffers_ending_at_memory_end),
		cmocka_unit_test(test_prefetch_more_lines_than_the_buffer_has),
		cmocka_unit_test(test_opts_from_before_prefetch_lines_attach_with_default),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
