/* SPDX-License-Identifier: MIT */
/*
 * The driver side's batch calls, vqs_drv_add_batch and vqs_drv_get_used_batch, on both layouts:
 * chains of every shape reach the device (vqsched's own) as added, come back with their tokens
 * and lengths, a batch stops at the first chain that is malformed or does not fit (nothing of
 * that chain reaches the ring), and a reap stops at a used entry that names no chain in flight.
 * The one-request calls, vqs_drv_add and vqs_drv_get_used, which take a path of their own for
 * chains of one or two descriptors, do the same a chain at a time.
 */
#include <endian.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#define BASE 0x100000ull
#define ARENA (1u << 20)
#define NUM 16u

struct fx {
	struct vqs_gmem *g;
	struct vqs_mem *mem;
	struct vqs_drv_vq *dq;
	struct vqs_vq *vq;
	uint64_t buf; /* NUM * 4 buffers of 64 bytes */
	int tok[NUM * 2];
	void *tokens[NUM * 2];
};

static void setup_num(struct fx *f, bool packed, bool indirect, unsigned num)
{
	memset(f, 0, sizeof(*f));
	uint64_t feat = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
			(packed ? VQS_BIT(VQS_F_RING_PACKED) : 0) |
			(indirect ? VQS_BIT(VQS_F_INDIRECT_DESC) : 0);
	struct vqs_mem_region reg;
	assert_int_equal(vqs_gmem_create(&f->g, BASE, ARENA), 0);
	assert_int_equal(vqs_mem_create(&f->mem), 0);
	vqs_gmem_region(f->g, &reg);
	assert_int_equal(vqs_mem_set(f->mem, &reg, 1), 0);
	struct vqs_drv_vq_config dc = {.size = sizeof(dc), .num = num, .features = feat,
				       .gmem = f->g};
	assert_int_equal(vqs_drv_vq_create(&f->dq, &dc), 0);
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = num, .features = feat,
				   .addr_space = VQS_ADDR_GPA, .mem = f->mem};
	vqs_drv_vq_addrs(f->dq, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	assert_int_equal(vqs_vq_create(&f->vq), 0);
	assert_int_equal(vqs_vq_configure(f->vq, &vc), 0);
	f->buf = vqs_gmem_alloc(f->g, NUM * 4 * 64, 64);
	assert_true(f->buf != 0);
	for (unsigned i = 0; i < NUM * 2; i++)
		f->tokens[i] = &f->tok[i];
}

static void setup(struct fx *f, bool packed, bool indirect)
{
	setup_num(f, packed, indirect, NUM);
}

static void teardown(struct fx *f)
{
	vqs_vq_destroy(f->vq);
	vqs_drv_vq_destroy(f->dq);
	vqs_mem_destroy(f->mem);
	vqs_gmem_destroy(f->g);
}

/* n chains of `total` buffers, the first out_num readable; buffer k of chain c is 8 + c + k
 * bytes long at its own address. */
static void make_bufs(struct fx *f, struct vqs_drv_buf *b, unsigned n, unsigned total)
{
	for (unsigned c = 0; c < n; c++)
		for (unsigned k = 0; k < total; k++)
			b[c * total + k] = (struct vqs_drv_buf){
				f->buf + (uint64_t)((c * total + k) % (NUM * 4)) * 64, 8 + c + k};
}

/* The device pops n chains and checks each against its buffers; fills chain c with c bytes. */
static void device_serve(struct fx *f, const struct vqs_drv_buf *b, unsigned n, unsigned out_num,
			 unsigned total)
{
	struct iovec iov[8];
	vqs_mem_read_lock(); /* the iovecs are valid inside */
	for (unsigned c = 0; c < n; c++) {
		struct vqs_elem e = {.iov = iov, .iov_cap = 8};
		assert_int_equal(vqs_vq_pop(f->vq, &e), 0);
		assert_int_equal(e.out_num, out_num);
		assert_int_equal(e.in_num, total - out_num);
		uint32_t in_len = 0;
		for (unsigned k = 0; k < total; k++) {
			const struct vqs_drv_buf *bk = &b[c * total + k];
			assert_ptr_equal(iov[k].iov_base, vqs_gmem_host(f->g, bk->gpa, bk->len));
			assert_int_equal(iov[k].iov_len, bk->len);
			if (k >= out_num)
				in_len += bk->len;
		}
		assert_int_equal(e.in_len, in_len);
		assert_int_equal(vqs_vq_fill(f->vq, &e, in_len ? c % (in_len + 1) : 0), 0);
	}
	struct vqs_elem e = {.iov = iov, .iov_cap = 8};
	assert_int_equal(vqs_vq_pop(f->vq, &e), -EAGAIN); /* nothing more was published */
	vqs_mem_read_unlock();
	vqs_vq_flush(f->vq);
}

/* n chains of b: one batch call, or (one) a vqs_drv_add a chain; the result as add_batch's. */
static int add_n(struct fx *f, const struct vqs_drv_buf *b, unsigned out_num, unsigned total,
		 void *const *tokens, unsigned n, bool indirect, bool one)
{
	if (!one)
		return vqs_drv_add_batch(f->dq, b, out_num, total - out_num, tokens, n, indirect);
	unsigned c = 0;
	for (; c < n; c++) {
		int rc = vqs_drv_add(f->dq, b + c * total, out_num, total - out_num, tokens[c],
				     indirect);
		assert_true(rc <= 0);
		if (rc < 0)
			return c ? (int)c : rc;
	}
	return (int)c;
}

/* Up to max completions: one batch call, or (one) a vqs_drv_get_used each. */
static unsigned get_used_n(struct fx *f, void **got, uint32_t *lens, unsigned max, bool one)
{
	if (!one)
		return vqs_drv_get_used_batch(f->dq, got, lens, max);
	unsigned c = 0;
	for (void *t; c < max && (t = vqs_drv_get_used(f->dq, &lens[c])); c++)
		got[c] = t;
	return c;
}

static void round_trip(bool packed, unsigned out_num, unsigned total, bool indirect, bool one)
{
	struct fx f;
	setup(&f, packed, indirect);
	struct vqs_drv_buf b[NUM * 4];
	unsigned ndescs = indirect ? 1 : total;
	for (unsigned round = 0; round < 5; round++) { /* past the end of the ring, both wraps */
		unsigned n = NUM / ndescs < 7 ? NUM / ndescs : 7;
		make_bufs(&f, b, n, total);
		assert_int_equal(add_n(&f, b, out_num, total, f.tokens, n, indirect, one), (int)n);
		assert_int_equal(vqs_drv_free_count(f.dq), NUM - n * ndescs);
		vqs_drv_kick_prepare(f.dq);
		device_serve(&f, b, n, out_num, total);
		void *got[NUM];
		uint32_t lens[NUM];
		/* a reap of fewer than are there, then the rest, in the order they were used */
		assert_int_equal(get_used_n(&f, got, lens, 2, one), 2);
		assert_int_equal(get_used_n(&f, got + 2, lens + 2, NUM, one), n - 2);
		assert_int_equal(get_used_n(&f, got, lens, NUM, one), 0);
		for (unsigned c = 0; c < n; c++) {
			uint32_t in_len = 0;
			for (unsigned k = out_num; k < total; k++)
				in_len += b[c * total + k].len;
			assert_ptr_equal(got[c], f.tokens[c]);
			assert_int_equal(lens[c], in_len ? c % (in_len + 1) : 0);
		}
		assert_int_equal(vqs_drv_free_count(f.dq), NUM);
	}
	teardown(&f);
}

static void round_trip_every_shape(bool packed, bool one)
{
	round_trip(packed, 0, 1, false, one);
	round_trip(packed, 1, 1, false, one);
	round_trip(packed, 1, 2, false, one);
	round_trip(packed, 2, 2, false, one); /* readable only */
	round_trip(packed, 1, 3, false, one); /* past the short shapes */
	round_trip(packed, 2, 3, true, one);
}

static void test_split_batch_round_trip_every_shape(void **state)
{
	(void)state;
	round_trip_every_shape(false, false);
}

static void test_packed_batch_round_trip_every_shape(void **state)
{
	(void)state;
	round_trip_every_shape(true, false);
}

static void test_one_request_calls_round_trip_every_shape(void **state)
{
	(void)state;
	round_trip_every_shape(false, true);
	round_trip_every_shape(true, true);
}

/* A NULL token or a chain of 2^32 bytes or more in the middle of a batch: the chains before it
 * are added, nothing of it is, and a call starting at it says why. */
static void stops_at_malformed(bool packed, unsigned total, bool one)
{
	struct fx f;
	setup(&f, packed, false);
	struct vqs_drv_buf b[NUM * 4];
	make_bufs(&f, b, 6, total);
	f.tokens[3] = NULL;
	assert_int_equal(add_n(&f, b, 1, total, f.tokens, 6, false, one), 3);
	assert_int_equal(add_n(&f, b + 3 * total, 1, total, f.tokens + 3, 3, false, one), -EINVAL);
	f.tokens[3] = &f.tok[3];
	b[4 * total].len = UINT32_MAX; /* chain 4 (with its other buffers) exceeds 2^32-1 */
	assert_int_equal(add_n(&f, b + 3 * total, 1, total, f.tokens + 3, 3, false, one), 1);
	assert_int_equal(vqs_drv_free_count(f.dq), NUM - 4 * total);
	vqs_drv_kick_prepare(f.dq);
	device_serve(&f, b, 4, 1, total);
	teardown(&f);
}

static void test_batch_stops_at_malformed_chain(void **state)
{
	(void)state;
	for (int one = 0; one < 2; one++) {
		stops_at_malformed(false, 2, one);
		stops_at_malformed(true, 2, one);
		stops_at_malformed(false, 3, one);
		stops_at_malformed(true, 3, one);
	}
}

/* More chains than the ring has room for: as many as fit, then -ENOSPC; one descriptor left
 * takes a chain of one, not of two. */
static void test_batch_stops_when_full(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++) {
		bool packed = k & 1, one = k & 2;
		struct fx f;
		setup(&f, packed, false);
		struct vqs_drv_buf b[NUM * 4];
		make_bufs(&f, b, NUM, 2);
		assert_int_equal(add_n(&f, b, 0, 1, f.tokens, 1, false, one), 1);
		assert_int_equal(add_n(&f, b, 1, 2, f.tokens, NUM, false, one), NUM / 2 - 1);
		assert_int_equal(vqs_drv_free_count(f.dq), 1);
		assert_int_equal(add_n(&f, b, 1, 2, f.tokens, 1, false, one), -ENOSPC);
		assert_int_equal(add_n(&f, b, 0, 1, f.tokens, 1, false, one), 1);
		assert_int_equal(add_n(&f, b, 0, 1, f.tokens, 1, false, one), -ENOSPC);
		assert_int_equal(add_n(&f, b, 1, 1, f.tokens, 0, false, one), 0);
		teardown(&f);
	}
}

/* A queue of one descriptor: a chain of two can never fit, so it is malformed, not -ENOSPC,
 * for both calls. */
static void test_chain_longer_than_queue_is_einval(void **state)
{
	(void)state;
	for (int k = 0; k < 4; k++) {
		bool packed = k & 1, one = k & 2;
		struct fx f;
		setup_num(&f, packed, false, 1);
		struct vqs_drv_buf b[2];
		make_bufs(&f, b, 1, 2);
		assert_int_equal(add_n(&f, b, 1, 2, f.tokens, 1, false, one), -EINVAL);
		assert_int_equal(add_n(&f, b, 0, 1, f.tokens, 1, false, one), 1);
		teardown(&f);
	}
}

/* A fresh queue with n chains of a request and a response buffer added, kicked, and served by
 * the device (device_serve), not yet reaped. */
static void served_pairs(struct fx *f, bool packed, struct vqs_drv_buf *b, unsigned n)
{
	setup(f, packed, false);
	make_bufs(f, b, n, 2);
	assert_int_equal(vqs_drv_add_batch(f->dq, b, 1, 1, f->tokens, n, false), (int)n);
	vqs_drv_kick_prepare(f->dq);
	device_serve(f, b, n, 1, 2);
}

/* A used entry naming no chain in flight after two good ones: the reap hands out the two and
 * stops; the queue is broken. */
static void reap_stops_at_bad_used_id(bool packed)
{
	struct fx f;
	struct vqs_drv_buf b[NUM * 4];
	served_pairs(&f, packed, b, 4);
	uint64_t d, a, u;
	vqs_drv_vq_addrs(f.dq, &d, &a, &u);
	if (packed) {
		struct vqs_vring_packed_desc *desc =
			vqs_gmem_host(f.g, d, vqs_vring_packed_desc_size(NUM));
		desc[4].id = htole16(NUM + 3); /* the third used descriptor (chains of two slots) */
	} else {
		struct vqs_vring_used *used = vqs_gmem_host(f.g, u, vqs_vring_used_size(NUM));
		used->ring[2].id = htole32(NUM + 3);
	}
	void *got[NUM];
	uint32_t lens[NUM];
	assert_int_equal(vqs_drv_get_used_batch(f.dq, got, lens, NUM), 2);
	assert_ptr_equal(got[1], f.tokens[1]);
	assert_int_equal(vqs_drv_get_used_batch(f.dq, got, lens, NUM), 0);
	assert_int_equal(vqs_drv_add_batch(f.dq, b, 1, 1, f.tokens, 1, false), -EIO);
	teardown(&f);
}

static void test_split_reap_stops_at_bad_used_id(void **state)
{
	(void)state;
	reap_stops_at_bad_used_id(false);
}

static void test_packed_reap_stops_at_bad_used_id(void **state)
{
	(void)state;
	reap_stops_at_bad_used_id(true);
}

/* With EVENT_IDX and interrupts wanted, a reap asks for the interrupt of the next completion
 * once, after its last: used_event is the used index it reached. */
static void test_split_reap_requests_next_used_event(void **state)
{
	(void)state;
	struct fx f;
	struct vqs_drv_buf b[NUM * 4];
	served_pairs(&f, false, b, 5);
	uint64_t d, a, u;
	vqs_drv_vq_addrs(f.dq, &d, &a, &u);
	struct vqs_vring_avail *avail = vqs_gmem_host(f.g, a, vqs_vring_avail_size(NUM));
	void *got[NUM];
	uint32_t lens[NUM];
	assert_int_equal(vqs_drv_get_used_batch(f.dq, got, lens, 3), 3);
	assert_int_equal(le16toh(avail->ring[NUM]), 3);
	assert_int_equal(vqs_drv_get_used_batch(f.dq, got, lens, NUM), 2);
	assert_int_equal(le16toh(avail->ring[NUM]), 5);
	teardown(&f);
}

/*
 * A reap steps from each used descriptor over the slots of the chain it names (2.8.7), which the
 * device may complete in any order: chains of 1, 2 and 3 descriptors, completed in reverse, each
 * lap's mix rotated so that runs of one length start and end anywhere, over laps of the ring
 * (both wrap counters), each lap's completions reaped by one call and then by calls of two.
 */
static void test_packed_reap_mixed_lengths_any_order(void **state)
{
	(void)state;
	static const unsigned shape[] = {1, 2, 2, 3, 1, 1, 3};
	enum { N = sizeof(shape) / sizeof(shape[0]) }; /* 13 slots of NUM */
	struct fx f;
	setup(&f, true, false);
	for (unsigned lap = 0; lap < 8; lap++) {
		struct vqs_drv_buf b[N][3];
		struct iovec iov[N][4];
		struct vqs_elem e[N];
		unsigned in_len[N];
		for (unsigned c = 0; c < N; c++) {
			unsigned total = shape[(c + lap) % N];
			for (unsigned k = 0; k < total; k++)
				b[c][k] = (struct vqs_drv_buf){f.buf + 64ull * (3 * c + k), 8 + c + k};
			/* all but the last readable: the last, writable, takes the bytes */
			in_len[c] = b[c][total - 1].len;
			assert_int_equal(vqs_drv_add_batch(f.dq, b[c], total - 1, 1, &f.tokens[c], 1,
							   false),
					 1);
		}
		vqs_drv_kick_prepare(f.dq);
		vqs_mem_read_lock();
		for (unsigned c = 0; c < N; c++) {
			e[c] = (struct vqs_elem){.iov = iov[c], .iov_cap = 4};
			assert_int_equal(vqs_vq_pop(f.vq, &e[c]), 0);
			assert_int_equal(e[c].ndescs, shape[(c + lap) % N]);
		}
		for (unsigned c = N; c-- > 0;)
			assert_int_equal(vqs_vq_fill(f.vq, &e[c], c % in_len[c]), 0);
		vqs_mem_read_unlock();
		vqs_vq_flush(f.vq);
		void *got[NUM];
		uint32_t lens[NUM];
		unsigned n = lap % 2 ? 0 : vqs_drv_get_used_batch(f.dq, got, lens, NUM);
		while (n < N) {
			unsigned k = vqs_drv_get_used_batch(f.dq, got + n, lens + n, 2);
			assert_true(k > 0);
			n += k;
		}
		assert_int_equal(n, N);
		assert_int_equal(vqs_drv_get_used_batch(f.dq, got, lens, NUM), 0);
		for (unsigned i = 0; i < N; i++) {
			assert_ptr_equal(got[i], f.tokens[N - 1 - i]);
			assert_int_equal(lens[i], (N - 1 - i) % in_len[N - 1 - i]);
		}
		assert_int_equal(vqs_drv_free_count(f.dq), NUM);
	}
	teardown(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_batch_round_trip_every_shape),
		cmocka_unit_test(test_packed_batch_round_trip_every_shape),
		cmocka_unit_test(test_one_request_calls_round_trip_every_shape),
		cmocka_unit_test(test_chain_longer_than_queue_is_einval),
		cmocka_unit_test(test_batch_stops_at_malformed_chain),
		cmocka_unit_test(test_batch_stops_when_full),
		cmocka_unit_test(test_split_reap_stops_at_bad_used_id),
		cmocka_unit_test(test_packed_reap_stops_at_bad_used_id),
		cmocka_unit_test(test_split_reap_requests_next_used_event),
		cmocka_unit_test(test_packed_reap_mixed_lengths_any_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
