/* SPDX-License-Identifier: MIT */
/*
 * Request state indexed by chain id: a queue's request memory grows with its own size (one
 * request per id, nothing sized for the largest ring), and a ring that offers an id still in
 * flight breaks that queue only, with the ring's reason, leaving the request in flight whole.
 */
#include <errno.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>

#include "pair.h"

#define FEATURES (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX))
#define IOV 4

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();
	return mi.uordblks + mi.hblkhd;
}

/*
 * What attaching a queue of num entries costs the heap, per chain id. A request is its vqs_req
 * (32 bytes), its completion state (40) and IOV iovecs (64), in whole cache lines: 192 bytes;
 * its share of the batch pins (24), of the IN_ORDER record (2) and of the list of long chains'
 * requests (2) make 220. The bound leaves 4 bytes per id and 32 KiB for what does not grow with
 * the queue (the queue itself). The slots of the free list cost 256 per id
 * (each its own aligned allocation, with a pointer in the slot table, one in the free stack and
 * one in the order): over the bound at 32768.
 */
static void attach_bytes_per_id(unsigned num)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_DEDICATED;
	struct vqs_sched *sched;
	assert_int_equal(vqs_sched_create(&sched, &so), 0);
	struct vqs_served_pair sp;
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = vqs_test_complete_all;
	o.iov_per_req = IOV;
	/* The pair before the measure: the ring's own state is not the scheduler's. */
	assert_int_equal(vqs_pair_init(&sp.p, num, FEATURES, 0x100000, 8u << 20), 0);
	vqs_pair_fini(&sp.p);
	size_t before = heap_bytes();
	assert_int_equal(vqs_served_pair_attach(&sp, sched, num, FEATURES, 0x100000, 8u << 20, &o), 0);
	size_t with_pair = heap_bytes();
	struct vqs_pair bare;
	assert_int_equal(vqs_pair_init(&bare, num, FEATURES, 0x100000, 8u << 20), 0);
	size_t pair_bytes = heap_bytes() - with_pair;
	vqs_pair_fini(&bare);
	size_t queue = with_pair - before - pair_bytes;
	print_message("queue of %u: %zu bytes of scheduler state (%zu per id)\n", num, queue,
		      queue / num);
	assert_true(queue <= (size_t)num * 224 + 32768);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
	vqs_sched_destroy(sched);
}

static void test_bytes_per_id_256(void **state) { attach_bytes_per_id(256); }
static void test_bytes_per_id_32768(void **state) { attach_bytes_per_id(32768); }

#define NUM 16

struct held {
	atomic_int n;
	struct vqs_req *req[NUM];
	atomic_int broken_calls, why;
};

/* Keeps every request: completed by the test. */
static unsigned keep(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	struct held *h = opaque;
	for (unsigned i = 0; i < n; i++) {
		int k = atomic_load(&h->n);
		if (k < NUM) {
			h->req[k] = reqs[i];
			atomic_store(&h->n, k + 1); /* seq_cst: publishes req[k] to the test */
		}
	}
	return n;
}

static void on_broken(struct vqs_queue *q, enum vqs_vq_err why, void *opaque)
{
	struct held *h = opaque;
	atomic_store(&h->why, (int)why);
	atomic_fetch_add(&h->broken_calls, 1);
}

static bool wait_for(atomic_int *v, int at_least)
{
	for (int i = 0; i < 500 && atomic_load(v) < at_least; i++)
		vqs_test_sleep_ms(10);
	return atomic_load(v) >= at_least;
}

/* The driver offers the head of a chain the device holds again, its descriptor rewritten to
 * another shape: the ring refuses it (VQS_VQ_ERR_BUFFER_ID) before it writes the request of that
 * id, which the ring pops into, so the queue stops with that reason, the held request keeps its
 * chain whole (its completion is accepted and nothing is served twice), and another queue is
 * served. */
static void dup_id(enum vqs_policy policy)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = policy;
	struct vqs_sched *sched;
	assert_int_equal(vqs_sched_create(&sched, &so), 0);
	struct held h = {0};
	struct vqs_served_pair bad, good;
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = keep;
	o.opaque = &h;
	o.on_broken = on_broken;
	o.on_broken_opaque = &h;
	assert_int_equal(vqs_served_pair_attach(&bad, sched, NUM, FEATURES, 0x100000, 1 << 20, &o), 0);
	vqs_queue_opts_init(&o);
	o.handler = vqs_test_complete_all;
	assert_int_equal(vqs_served_pair_attach(&good, sched, NUM, FEATURES, 0x100000, 1 << 20, &o),
			 0);
	uint64_t gpa = vqs_gmem_alloc(bad.p.gmem, 64, 64);
	struct vqs_drv_buf b = {.gpa = gpa, .len = 64};
	int tok[2];
	assert_int_equal(vqs_pair_post(&bad.p, bad.kick, &b, false, 2, tok), 0);
	assert_true(wait_for(&h.n, 2));
	uint16_t id0 = h.req[0]->elem.id;

	/* The avail entry of the first chain, published again. */
	uint64_t desc, avail, used;
	vqs_drv_vq_addrs(bad.p.drv, &desc, &avail, &used);
	/* A readable buffer of 32 bytes elsewhere: popped over the held request, it would show. */
	struct vqs_vring_desc *d = vqs_gmem_host(bad.p.gmem, desc, vqs_vring_desc_size(NUM));
	void *base0 = h.req[0]->elem.iov[0].iov_base;
	__atomic_store_n(&d[id0].addr, vqs_gmem_alloc(bad.p.gmem, 64, 64), __ATOMIC_RELAXED);
	__atomic_store_n(&d[id0].len, 32, __ATOMIC_RELAXED);
	__atomic_store_n(&d[id0].flags, 0, __ATOMIC_RELAXED);
	struct vqs_vring_avail *a = vqs_gmem_host(bad.p.gmem, avail, vqs_vring_avail_size(NUM));
	uint16_t idx = __atomic_load_n(&a->idx, __ATOMIC_RELAXED);
	/* Atomic stores, as the device reads these fields; release pairs with its acquire load of
	 * avail->idx. */
	__atomic_store_n(&a->ring[idx % NUM], id0, __ATOMIC_RELAXED);
	__atomic_store_n(&a->idx, (uint16_t)(idx + 1), __ATOMIC_RELEASE);
	uint64_t one = 1;
	assert_int_equal(write(bad.kick, &one, sizeof(one)), sizeof(one));
	assert_true(wait_for(&h.broken_calls, 1));
	assert_int_equal(atomic_load(&h.why), VQS_VQ_ERR_BUFFER_ID);
	assert_string_equal(vqs_vq_err_name((enum vqs_vq_err)atomic_load(&h.why)), "buffer-id");
	vqs_test_sleep_ms(20);
	assert_int_equal(atomic_load(&h.n), 2); /* nothing popped twice */
	assert_int_equal(h.req[0]->elem.id, id0);
	assert_int_equal(h.req[0]->elem.out_num, 0);
	assert_int_equal(h.req[0]->elem.in_num, 1);
	assert_int_equal(h.req[0]->elem.out_len, 0);
	assert_int_equal(h.req[0]->elem.in_len, 64);
	assert_ptr_equal(h.req[0]->elem.iov[0].iov_base, base0);
	assert_int_equal(h.req[0]->elem.iov[0].iov_len, 64);
	assert_ptr_equal(vqs_req_queue(h.req[0]), bad.q);
	/* Completions of a broken queue are taken (the ring refuses them) and let detach end. */
	vqs_req_complete(h.req[0], 0);
	vqs_req_complete(h.req[1], 0);
	struct vqs_drv_buf gb = {.gpa = vqs_gmem_alloc(good.p.gmem, 64, 64), .len = 64};
	assert_true(vqs_pair_round_trip(&good.p, good.kick, good.call, &gb, 0, 1) >= 0);
	assert_int_equal(atomic_load(&h.broken_calls), 1);
	assert_int_equal(vqs_served_pair_fini(&bad), 0);
	assert_int_equal(vqs_served_pair_fini(&good), 0);
	vqs_sched_destroy(sched);
}

/* Where each request's iovecs were, as an offset from the request: a chain of IOV iovecs or
 * fewer is built in the request's own storage, at the same offset in every request. */
struct iov_at {
	atomic_long short_off; /* 0: none seen yet */
	atomic_int short_elsewhere, longs;
};

static unsigned record_iov(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			   void *opaque)
{
	struct iov_at *a = opaque;
	for (unsigned i = 0; i < n; i++) {
		const struct vqs_elem *e = &reqs[i]->elem;
		long off = (long)((const char *)e->iov - (const char *)reqs[i]);
		if (e->out_num + e->in_num > IOV) {
			atomic_fetch_add(&a->longs, 1);
		} else if (!atomic_load(&a->short_off)) {
			atomic_store(&a->short_off, off);
		} else if (atomic_load(&a->short_off) != off) {
			atomic_fetch_add(&a->short_elsewhere, 1);
		}
		vqs_req_complete(reqs[i], 0);
	}
	return n;
}

/* A chain longer than a request's IOV iovecs is built in the ring's long-chain area, and the
 * request's element names it there; once that request is free, the next chain of its id is
 * built in the request's own iovecs again (the pop writes where the element names), whatever
 * the driver reuses the id for. */
static void long_then_short(uint64_t features)
{
	struct iov_at at = {0};
	struct vqs_served_pair sp;
	struct vqs_queue_opts o;
	vqs_queue_opts_init(&o);
	o.handler = record_iov;
	o.opaque = &at;
	o.iov_per_req = IOV;
	assert_int_equal(
		vqs_served_pair_init(&sp, NUM, features, 0x100000, 1 << 20, VQS_POLICY_DEDICATED, &o), 0);
	struct vqs_drv_buf one = {.gpa = vqs_gmem_alloc(sp.p.gmem, 64, 64), .len = 64};
	struct vqs_drv_buf six[IOV + 2];
	for (unsigned i = 0; i < IOV + 2; i++)
		six[i] = (struct vqs_drv_buf){.gpa = vqs_gmem_alloc(sp.p.gmem, 64, 64), .len = 64};
	assert_true(vqs_pair_round_trip(&sp.p, sp.kick, sp.call, &one, 0, 1) >= 0);
	for (unsigned round = 0; round < 3; round++) {
		assert_true(vqs_pair_round_trip(&sp.p, sp.kick, sp.call, six, 0, IOV + 2) >= 0);
		/* every id the driver may hand out next, the long chain's among them */
		for (unsigned i = 0; i < NUM; i++)
			assert_true(vqs_pair_round_trip(&sp.p, sp.kick, sp.call, &one, 0, 1) >= 0);
	}
	assert_int_equal(atomic_load(&at.longs), 3);
	assert_int_equal(atomic_load(&at.short_elsewhere), 0);
	assert_int_equal(vqs_served_pair_fini(&sp), 0);
}

static void test_long_then_short_split(void **state) { long_then_short(FEATURES); }
static void test_long_then_short_packed(void **state)
{
	long_then_short(FEATURES | VQS_BIT(VQS_F_RING_PACKED));
}

static void test_dup_id_dedicated(void **state) { dup_id(VQS_POLICY_DEDICATED); }
static void test_dup_id_pool(void **state) { dup_id(VQS_POLICY_POOL); }

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bytes_per_id_256),
		cmocka_unit_test(test_bytes_per_id_32768),
		cmocka_unit_test(test_dup_id_dedicated),
		cmocka_unit_test(test_dup_id_pool),
		cmocka_unit_test(test_long_then_short_split),
		cmocka_unit_test(test_long_then_short_packed),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
