/* SPDX-License-Identifier: MIT */
/*
 * The memory table is replaced over and over while a device thread pops, writes buffers, fills
 * and flushes: every replacement maps the same guest memory at a new host address and unmaps the
 * old one once the grace period is over. A queue that kept a ring pointer or buffer address
 * from an old table would touch unmapped memory and crash. The same with a device that holds a
 * pin on the table instead of staying inside the read-side section: it pops through the table it
 * pinned, or is told that table is no longer current.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <cmocka.h>

#include "pair.h"
#include "scale.h"

#define NUM 64
#define GPA 0x100000ull
#define ARENA (1u << 20)
#define DEADLINE_NS (60ull * 1000000000ull)

struct run {
	struct vqs_pair p;
	_Atomic bool done;
	_Atomic unsigned long completed;
};

/* Aliases mapped and not yet unmapped (the release hooks run on liburcu's thread). */
static _Atomic int mapped_aliases;

static void unmap_alias(void *opaque, const struct vqs_mem_region *r)
{
	(void)opaque;
	munmap(r->host, r->size);
	atomic_fetch_sub(&mapped_aliases, 1);
}

/* Map the arena again at a fresh host address and make that the whole table; returns it. */
static uint8_t *swap_table(struct run *r)
{
	void *alias = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_SHARED, vqs_gmem_fd(r->p.gmem), 0);
	assert_true(alias != MAP_FAILED);
	atomic_fetch_add(&mapped_aliases, 1);
	struct vqs_mem_region reg = {.gpa = GPA, .size = ARENA, .uaddr = (uintptr_t)alias,
				     .host = alias, .release = unmap_alias};
	assert_int_equal(vqs_mem_set(r->p.mem, &reg, 1), 0);
	return alias;
}

/* Pin the current table, outside any read-side section afterwards. */
static const struct vqs_mem_table *pin(struct vqs_mem *m)
{
	vqs_mem_read_lock();
	const struct vqs_mem_table *t = vqs_mem_table_get(m);
	vqs_mem_read_unlock();
	return t;
}

/* Pop one chain in a ring session, then hold only a pin on the table it was translated through
 * (the session's): *t when it is that table, else a pin taken inside the session's section; when
 * the table was replaced since the session began, the chain goes back and is popped again. */
static int pop_pinned(struct vqs_vq *vq, struct vqs_mem *m, const struct vqs_mem_table **t,
		      struct vqs_elem *e)
{
	for (;;) {
		struct vqs_vq_session ss;
		int rc = vqs_vq_session_begin(vq, &ss);
		if (rc > 0)
			rc = vqs_vq_session_pop(&ss, &(struct vqs_pop_to){.base = e}, 1);
		const struct vqs_mem_table *cur = rc == 1 ? vqs_mem_table_get(m) : NULL;
		vqs_vq_session_pause(&ss);
		if (rc != 1)
			return rc == 0 ? -EAGAIN : rc;
		if (cur == ss.table) {
			vqs_mem_table_put(*t);
			*t = cur;
			return 0;
		}
		vqs_mem_table_put(cur);
		if (vqs_vq_unpop(vq, e, 1))
			return -EINVAL;
	}
}

static void *device(void *arg)
{
	struct run *r = arg;
	struct iovec iov[4];
	while (!atomic_load(&r->done)) {
		struct vqs_elem e = {.iov = iov, .iov_cap = 4};
		vqs_mem_read_lock();
		int rc = vqs_vq_pop(r->p.dev, &e);
		if (rc == 0)
			for (unsigned i = e.out_num; i < e.out_num + e.in_num; i++)
				memset(iov[i].iov_base, 0x5a, iov[i].iov_len);
		vqs_mem_read_unlock();
		if (rc == -EAGAIN) {
			vqs_vq_flush(r->p.dev);
			sched_yield();
			continue;
		}
		if (rc)
			return NULL;
		vqs_vq_fill(r->p.dev, &e, e.in_len);
		atomic_fetch_add(&r->completed, 1);
	}
	vqs_vq_flush(r->p.dev);
	return NULL;
}

/* A device holding a pin and no read-side section: its chain's iovecs lie in the mapping of the
 * table it pinned, never in a newer one nothing keeps alive, and stay mapped until the pin goes. */
static void test_pinned_pop_translates_through_the_pinned_table(void **state)
{
	(void)state;
	static struct run r;
	memset(&r, 0, sizeof(r));
	assert_int_equal(vqs_pair_init(&r.p, NUM, 0, GPA, ARENA), 0);
	uint64_t buf = vqs_gmem_alloc(r.p.gmem, 256, 64);
	memset(vqs_gmem_host(r.p.gmem, buf, 256), 0x3c, 256);
	swap_table(&r);
	const struct vqs_mem_table *t = pin(r.p.mem);
	struct vqs_drv_buf b = {buf, 256};
	int token;
	assert_int_equal(vqs_drv_add(r.p.drv, &b, 1, 0, &token, false), 0);
	vqs_drv_kick_prepare(r.p.drv);
	/* replaced after the pin: popping through the newer table would leave iovecs nothing
	 * keeps mapped */
	uint8_t *alias = swap_table(&r);
	struct iovec iov[4];
	struct vqs_elem e = {.iov = iov, .iov_cap = 4};
	assert_int_equal(pop_pinned(r.p.dev, r.p.mem, &t, &e), 0);
	assert_ptr_equal(e.iov[0].iov_base, alias + (buf - GPA));
	/* the table goes, and its grace period ends: the pin keeps the mapping */
	swap_table(&r);
	vqs_mem_synchronize(r.p.mem);
	for (unsigned i = 0; i < 256; i++)
		assert_int_equal(((uint8_t *)e.iov[0].iov_base)[i], 0x3c);
	assert_int_equal(vqs_vq_fill(r.p.dev, &e, 0), 0);
	assert_int_equal(vqs_vq_flush(r.p.dev), 1);
	int before = atomic_load(&mapped_aliases);
	vqs_mem_table_put(t);
	assert_int_equal(atomic_load(&mapped_aliases), before - 1);
	assert_false(vqs_vq_is_broken(r.p.dev));
	vqs_pair_fini(&r.p);
}

/* The device thread of the swap test, holding pins instead of read-side sections: a pin on the
 * table of its latest pop, renewed every few chains. */
static void *pinned_device(void *arg)
{
	struct run *r = arg;
	struct iovec iov[4];
	const struct vqs_mem_table *t = pin(r->p.mem);
	for (unsigned n = 0; !atomic_load(&r->done);) {
		struct vqs_elem e = {.iov = iov, .iov_cap = 4};
		int rc = pop_pinned(r->p.dev, r->p.mem, &t, &e);
		if (rc == -EAGAIN) {
			vqs_vq_flush(r->p.dev);
			sched_yield();
			continue;
		}
		if (rc)
			break;
		for (unsigned i = e.out_num; i < e.out_num + e.in_num; i++)
			memset(e.iov[i].iov_base, 0x5a, e.iov[i].iov_len);
		vqs_vq_fill(r->p.dev, &e, e.in_len);
		atomic_fetch_add(&r->completed, 1);
		if (++n % 8 == 0) {
			vqs_mem_table_put(t);
			t = pin(r->p.mem);
		}
	}
	vqs_mem_table_put(t);
	vqs_vq_flush(r->p.dev);
	return NULL;
}

/* Drive one device thread through `chains` chains while the table is replaced every 64. */
static void swap_under(void *(*dev_fn)(void *), unsigned long chains)
{
	static struct run r;
	memset(&r, 0, sizeof(r));
	assert_int_equal(vqs_pair_init(&r.p, NUM, VQS_BIT(VQS_F_INDIRECT_DESC), GPA, ARENA), 0);
	uint64_t bufs = vqs_gmem_alloc(r.p.gmem, NUM * 256, 64);
	assert_true(bufs != 0);
	/* From here on every table's mapping is unmapped after it is replaced (the arena's own
	 * mapping, in the first table, never is). */
	swap_table(&r);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, dev_fn, &r), 0);

	unsigned long total = vqs_test_scaled(chains), added = 0, used = 0;
	uint64_t deadline = vqs_now_ns() + DEADLINE_NS;
	int token;
	while (used < total && vqs_now_ns() < deadline) {
		struct vqs_drv_buf b[2] = {{bufs + (added % NUM) * 256, 64},
					   {bufs + (added % NUM) * 256 + 64, 192}};
		if (added < total && vqs_drv_add(r.p.drv, b, 1, 1, &token, added % 3 == 0) == 0) {
			added++;
			vqs_drv_kick_prepare(r.p.drv);
			if (added % 64 == 0)
				swap_table(&r);
		}
		uint32_t len;
		while (vqs_drv_get_used(r.p.drv, &len)) {
			assert_int_equal(len, 192);
			used++;
		}
	}
	atomic_store(&r.done, true);
	pthread_join(t, NULL);
	assert_int_equal(used, total);
	assert_false(vqs_vq_is_broken(r.p.dev));
	vqs_pair_fini(&r.p);
}

static void test_memory_table_swaps_under_a_running_queue(void **state)
{
	(void)state;
	swap_under(device, 40000);
}

static void test_memory_table_swaps_under_a_pinned_device(void **state)
{
	(void)state;
	/* fewer: every swap also costs the device a stale pin, a new one and an unmap */
	swap_under(pinned_device, 10000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_table_swaps_under_a_running_queue),
		cmocka_unit_test(test_pinned_pop_translates_through_the_pinned_table),
		cmocka_unit_test(test_memory_table_swaps_under_a_pinned_device),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
