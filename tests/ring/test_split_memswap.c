/* SPDX-License-Identifier: MIT */
/*
 * The memory table is replaced over and over while a device thread pops, writes buffers, fills
 * and flushes: every replacement maps the same guest memory at a new host address and unmaps the
 * old one once the grace period is over. A queue that kept a ring pointer or buffer address
 * from an old table would touch unmapped memory and crash.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
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

static void unmap_alias(void *opaque, const struct vqs_mem_region *r)
{
	(void)opaque;
	munmap(r->host, r->size);
}

/* Map the arena again at a fresh host address and make that the whole table. */
static void swap_table(struct run *r)
{
	void *alias = mmap(NULL, ARENA, PROT_READ | PROT_WRITE, MAP_SHARED, vqs_gmem_fd(r->p.gmem), 0);
	assert_true(alias != MAP_FAILED);
	struct vqs_mem_region reg = {.gpa = GPA, .size = ARENA, .uaddr = (uintptr_t)alias,
				     .host = alias, .release = unmap_alias};
	assert_int_equal(vqs_mem_set(r->p.mem, &reg, 1), 0);
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

static void test_memory_table_swaps_under_a_running_queue(void **state)
{
	(void)state;
	static struct run r;
	memset(&r, 0, sizeof(r));
	assert_int_equal(vqs_pair_init(&r.p, NUM, VQS_BIT(VQS_F_INDIRECT_DESC), GPA, ARENA), 0);
	uint64_t bufs = vqs_gmem_alloc(r.p.gmem, NUM * 256, 64);
	assert_true(bufs != 0);
	/* From here on every table's mapping is unmapped after it is replaced (the arena's own
	 * mapping, in the first table, never is). */
	swap_table(&r);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, device, &r), 0);

	unsigned long total = vqs_test_scaled(40000), added = 0, used = 0;
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_table_swaps_under_a_running_queue),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
