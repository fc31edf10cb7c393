/* SPDX-License-Identifier: MIT */
/* The guest-memory arena: a shareable memfd mapping with a bump allocator. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <vqsched/vqsched.h>

#define BASE 0x100000ull
#define SIZE (64 * 1024u)

static void create_rejects_bad_geometry(void **state)
{
	struct vqs_gmem *g = NULL;
	assert_int_equal(vqs_gmem_create(&g, BASE, 0), -EINVAL);
	assert_int_equal(vqs_gmem_create(&g, BASE + 8, SIZE), -EINVAL); /* not page aligned */
	assert_int_equal(vqs_gmem_create(&g, UINT64_MAX - 4095, 8192), -EINVAL); /* wraps */
	assert_null(g);
	/* Ending exactly at the top of the address space is fine. */
	assert_int_equal(vqs_gmem_create(&g, UINT64_MAX - 4095, 4096), 0);
	assert_int_equal(vqs_gmem_alloc(g, 4096, 1), UINT64_MAX - 4095);
	vqs_gmem_destroy(g);
}

static void alloc_aligns_zeroes_and_stops_when_full(void **state)
{
	struct vqs_gmem *g;
	assert_int_equal(vqs_gmem_create(&g, BASE, SIZE), 0);
	assert_int_equal(vqs_gmem_base(g), BASE);
	assert_int_equal(vqs_gmem_size(g), SIZE);

	uint64_t a = vqs_gmem_alloc(g, 3, 1);
	assert_int_equal(a, BASE);
	uint64_t b = vqs_gmem_alloc(g, 100, 64);
	assert_int_equal(b, BASE + 64);
	uint64_t c = vqs_gmem_alloc(g, 1, 4096);
	assert_int_equal(c, BASE + 4096);
	uint8_t *hb = vqs_gmem_host(g, b, 100);
	assert_non_null(hb);
	assert_int_equal((uintptr_t)hb % 64, 0);
	for (unsigned i = 0; i < 100; i++)
		assert_int_equal(hb[i], 0);
	memset(hb, 0xab, 100);
	assert_ptr_equal(vqs_gmem_host(g, b + 99, 1), hb + 99);

	/* Bad requests, and requests past the end, return 0 and allocate nothing. */
	assert_int_equal(vqs_gmem_alloc(g, 0, 8), 0);
	assert_int_equal(vqs_gmem_alloc(g, 8, 0), 0);
	assert_int_equal(vqs_gmem_alloc(g, 8, 24), 0);
	assert_int_equal(vqs_gmem_alloc(g, SIZE, 1), 0);
	assert_int_equal(vqs_gmem_alloc(g, SIZE_MAX, 1), 0);
	assert_int_equal(vqs_gmem_alloc(g, 8, (size_t)1 << 63), 0);
	uint64_t rest = vqs_gmem_alloc(g, SIZE - 4097, 1);
	assert_int_equal(rest, BASE + 4097);
	assert_int_equal(vqs_gmem_alloc(g, 1, 1), 0);
	vqs_gmem_destroy(g);
}

static void alloc_never_returns_gpa_zero(void **state)
{
	/* 0 means "full", so an arena at gpa 0 must not hand it out. */
	struct vqs_gmem *g;
	assert_int_equal(vqs_gmem_create(&g, 0, 4096), 0);
	uint64_t a = vqs_gmem_alloc(g, 16, 16);
	assert_int_equal(a, 16);
	assert_non_null(vqs_gmem_host(g, 0, 1));
	vqs_gmem_destroy(g);
}

static void host_rejects_ranges_outside(void **state)
{
	struct vqs_gmem *g;
	assert_int_equal(vqs_gmem_create(&g, BASE, SIZE), 0);
	assert_non_null(vqs_gmem_host(g, BASE, SIZE));
	assert_non_null(vqs_gmem_host(g, BASE + SIZE - 1, 1));
	assert_null(vqs_gmem_host(g, BASE + SIZE, 1));
	assert_null(vqs_gmem_host(g, BASE, SIZE + 1));
	assert_null(vqs_gmem_host(g, BASE - 1, 1));
	assert_null(vqs_gmem_host(g, BASE + 8, SIZE_MAX));
	assert_null(vqs_gmem_host(g, UINT64_MAX, 1));
	vqs_gmem_destroy(g);
}

static void fd_maps_the_same_memory(void **state)
{
	/* What a vhost-user peer does with the fd: map it and see the driver's writes. */
	struct vqs_gmem *g;
	assert_int_equal(vqs_gmem_create(&g, BASE, SIZE), 0);
	uint64_t a = vqs_gmem_alloc(g, 8, 8);
	memcpy(vqs_gmem_host(g, a, 8), "virtio!", 8);
	int fd = vqs_gmem_fd(g);
	assert_true(fd >= 0);
	uint8_t *peer = mmap(NULL, SIZE, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(peer != MAP_FAILED);
	assert_string_equal((const char *)peer + (a - BASE), "virtio!");
	munmap(peer, SIZE);
	vqs_gmem_destroy(g);
}

static void region_translates_through_a_map(void **state)
{
	struct vqs_gmem *g;
	assert_int_equal(vqs_gmem_create(&g, BASE, SIZE), 0);
	struct vqs_mem_region r;
	vqs_gmem_region(g, &r);
	assert_int_equal(r.gpa, BASE);
	assert_int_equal(r.size, SIZE);
	assert_ptr_equal(r.host, vqs_gmem_host(g, BASE, 1));
	assert_int_equal(r.uaddr, (uintptr_t)r.host);
	assert_null(r.release);

	struct vqs_mem *m;
	assert_int_equal(vqs_mem_create(&m), 0);
	assert_int_equal(vqs_mem_set(m, &r, 1), 0);
	uint64_t a = vqs_gmem_alloc(g, 32, 16);
	vqs_mem_read_lock();
	assert_ptr_equal(vqs_mem_gpa_to_host(vqs_mem_current(m), a, 32), vqs_gmem_host(g, a, 32));
	assert_ptr_equal(vqs_mem_uaddr_to_host(vqs_mem_current(m), r.uaddr + (a - BASE), 32),
			 vqs_gmem_host(g, a, 32));
	vqs_mem_read_unlock();
	/* The map never owned the arena: it is still usable after the map is gone. */
	vqs_mem_destroy(m);
	memset(vqs_gmem_host(g, a, 32), 1, 32);
	vqs_gmem_destroy(g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(create_rejects_bad_geometry),
		cmocka_unit_test(alloc_aligns_zeroes_and_stops_when_full),
		cmocka_unit_test(alloc_never_returns_gpa_zero),
		cmocka_unit_test(host_rejects_ranges_outside),
		cmocka_unit_test(fd_maps_the_same_memory),
		cmocka_unit_test(region_translates_through_a_map),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
