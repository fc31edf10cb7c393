/* SPDX-License-Identifier: MIT */
/* The guest memory map: validation, translation at the edges, region lifetimes, RCU replacement. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>
#include <vqsched/vqsched.h>

#include "scale.h"

#define PAGE 4096u

/* Host memory for regions: one buffer whose bytes are their own offset (mod 251), so any
 * translated address can be checked by content. */
static uint8_t *host_buf;
#define HOST_SIZE (16 * PAGE)

static int setup(void **state)
{
	host_buf = malloc(HOST_SIZE);
	for (unsigned i = 0; i < HOST_SIZE; i++)
		host_buf[i] = (uint8_t)(i % 251);
	return 0;
}

static int teardown(void **state)
{
	free(host_buf);
	return 0;
}

static struct vqs_mem_region region(uint64_t gpa, uint64_t size, size_t host_off)
{
	return (struct vqs_mem_region){.gpa = gpa, .size = size, .uaddr = gpa,
				       .host = host_buf + host_off};
}

static struct vqs_mem *map_of(const struct vqs_mem_region *r, unsigned n)
{
	struct vqs_mem *m;
	assert_int_equal(vqs_mem_create(&m), 0);
	assert_int_equal(vqs_mem_set(m, r, n), 0);
	return m;
}

/* ---- release hook bookkeeping ---- */

struct hook_log {
	atomic_int calls;
	atomic_int while_reachable; /* calls made while the region was still in the current table */
	struct vqs_mem *_Atomic m;  /* map to look the region up in; NULL once it is being destroyed */
};

static void count_release(void *opaque, const struct vqs_mem_region *r)
{
	struct hook_log *log = opaque;
	struct vqs_mem *m = atomic_load(&log->m);
	if (m) {
		vqs_mem_read_lock();
		if (vqs_mem_gpa_to_host(vqs_mem_current(m), r->gpa, r->size) == r->host)
			atomic_fetch_add(&log->while_reachable, 1);
		vqs_mem_read_unlock();
	}
	atomic_fetch_add(&log->calls, 1);
}

static struct vqs_mem_region hooked(struct vqs_mem_region r, struct hook_log *log)
{
	r.release = count_release;
	r.release_opaque = log;
	return r;
}

/* ---- translation ---- */

static void translate_first_last_and_one_past_end(void **state)
{
	struct vqs_mem_region r = region(0x10000, PAGE, 0);
	struct vqs_mem *m = map_of(&r, 1);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	const struct vqs_mem_table *t = vqs_mem_current(m);
	struct iovec iov[2];
	unsigned hint = 0;

	assert_int_equal(vqs_mem_translate(t, 0x10000, 1, iov, 2, &hint), 1);
	assert_ptr_equal(iov[0].iov_base, host_buf);
	assert_int_equal(iov[0].iov_len, 1);
	assert_int_equal(vqs_mem_translate(t, 0x10000 + PAGE - 1, 1, iov, 2, &hint), 1);
	assert_ptr_equal(iov[0].iov_base, host_buf + PAGE - 1);
	assert_int_equal(vqs_mem_translate(t, 0x10000, PAGE, iov, 2, &hint), 1);
	assert_int_equal(iov[0].iov_len, PAGE);

	assert_int_equal(vqs_mem_translate(t, 0x10000 + PAGE, 1, iov, 2, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, 0x10000, PAGE + 1, iov, 2, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, 0x10000 - 1, 1, iov, 2, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, 0x10000 - 1, 2, iov, 2, &hint), -EFAULT);

	assert_non_null(vqs_mem_gpa_to_host(t, 0x10000 + PAGE - 8, 8));
	assert_null(vqs_mem_gpa_to_host(t, 0x10000 + PAGE - 8, 9));
	assert_null(vqs_mem_gpa_to_host(t, 0x10000 + PAGE, 1));
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
}

static void translate_len_zero_gives_no_iovec(void **state)
{
	struct vqs_mem_region r = region(0x10000, PAGE, 0);
	struct vqs_mem *m = map_of(&r, 1);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	unsigned hint = 0;
	/* Even at an unmapped address and with no storage: nothing is accessed. */
	assert_int_equal(vqs_mem_translate(vqs_mem_current(m), 0x10000, 0, NULL, 0, &hint), 0);
	assert_int_equal(vqs_mem_translate(vqs_mem_current(m), 0x999999, 0, NULL, 0, &hint), 0);
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
}

static void translate_wrapping_range_faults(void **state)
{
	/* A region ending exactly at the top of the address space is legal... */
	struct vqs_mem_region r = region(UINT64_MAX - PAGE + 1, PAGE, 0);
	struct vqs_mem *m = map_of(&r, 1);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	const struct vqs_mem_table *t = vqs_mem_current(m);
	struct iovec iov[2];
	unsigned hint = 0;
	char buf[4];

	assert_int_equal(vqs_mem_translate(t, UINT64_MAX, 1, iov, 2, &hint), 1);
	assert_ptr_equal(iov[0].iov_base, host_buf + PAGE - 1);
	assert_int_equal(vqs_mem_translate(t, UINT64_MAX - PAGE + 1, PAGE, iov, 2, &hint), 1);
	/* ...but no range may run past it, back to gpa 0. */
	assert_int_equal(vqs_mem_translate(t, UINT64_MAX, 2, iov, 2, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, UINT64_MAX - 1, UINT64_MAX, iov, 2, &hint), -EFAULT);
	assert_int_equal(vqs_mem_copy_from(t, UINT64_MAX - 1, buf, 4), -EFAULT);
	assert_null(vqs_mem_gpa_to_host(t, UINT64_MAX, 2));
	assert_int_equal(vqs_mem_copy_from(t, UINT64_MAX - 1, buf, 2), 0);
	assert_memory_equal(buf, host_buf + PAGE - 2, 2);
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
}

static void translate_spans_adjacent_regions(void **state)
{
	/* Adjacent in gpa, apart in host memory: one iovec per region. Given out of order. */
	struct vqs_mem_region r[3] = {region(0x3000, PAGE, 8 * PAGE), region(0x1000, PAGE, 0),
				      region(0x2000, PAGE, 4 * PAGE)};
	struct vqs_mem *m = map_of(r, 3);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	const struct vqs_mem_table *t = vqs_mem_current(m);
	struct iovec iov[4];
	unsigned hint = 0;

	assert_int_equal(vqs_mem_translate(t, 0x1ff0, 0x1020, iov, 4, &hint), 3);
	assert_ptr_equal(iov[0].iov_base, host_buf + 0xff0);
	assert_int_equal(iov[0].iov_len, 0x10);
	assert_ptr_equal(iov[1].iov_base, host_buf + 4 * PAGE);
	assert_int_equal(iov[1].iov_len, PAGE);
	assert_ptr_equal(iov[2].iov_base, host_buf + 8 * PAGE);
	assert_int_equal(iov[2].iov_len, 0x10);

	uint8_t out[0x1020], want[0x1020];
	memcpy(want, host_buf + 0xff0, 0x10);
	memcpy(want + 0x10, host_buf + 4 * PAGE, PAGE);
	memcpy(want + 0x10 + PAGE, host_buf + 8 * PAGE, 0x10);
	assert_int_equal(vqs_mem_copy_from(t, 0x1ff0, out, sizeof(out)), 0);
	assert_memory_equal(out, want, sizeof(out));

	/* Contiguous in gpa is not enough for a ring area. */
	assert_null(vqs_mem_gpa_to_host(t, 0x1ff0, 0x20));
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
}

static void translate_gap_between_regions_faults(void **state)
{
	struct vqs_mem_region r[2] = {region(0x1000, PAGE, 0), region(0x3000, PAGE, PAGE)};
	struct vqs_mem *m = map_of(r, 2);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	const struct vqs_mem_table *t = vqs_mem_current(m);
	struct iovec iov[4];
	unsigned hint = 0;
	uint8_t out[16];

	assert_int_equal(vqs_mem_translate(t, 0x1ff8, 16, iov, 4, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, 0x2ff8, 16, iov, 4, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, 0x2000, 1, iov, 4, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, 0x1000, 3 * PAGE, iov, 4, &hint), -EFAULT);
	assert_int_equal(vqs_mem_copy_from(t, 0x1ff8, out, sizeof(out)), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, 0, 1, iov, 4, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(t, 0x4000, 1, iov, 4, &hint), -EFAULT);
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
}

static void translate_too_few_iovecs_is_enobufs_unless_unmapped(void **state)
{
	struct vqs_mem_region r[3] = {region(0x1000, PAGE, 0), region(0x2000, PAGE, 2 * PAGE),
				      region(0x3000, PAGE, 4 * PAGE)};
	struct vqs_mem *m = map_of(r, 3);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	const struct vqs_mem_table *t = vqs_mem_current(m);
	struct iovec iov[3];
	unsigned hint = 0;

	assert_int_equal(vqs_mem_translate(t, 0x1000, 3 * PAGE, iov, 2, &hint), -ENOBUFS);
	assert_int_equal(vqs_mem_translate(t, 0x1000, 1, iov, 0, &hint), -ENOBUFS);
	assert_int_equal(vqs_mem_translate(t, 0x1000, 3 * PAGE, iov, 3, &hint), 3);
	/* Storage runs out in region 2, but byte 0x4000 is unmapped: the guest's fault. */
	assert_int_equal(vqs_mem_translate(t, 0x1000, 3 * PAGE + 1, iov, 2, &hint), -EFAULT);
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
}

static void translate_hint_any_value_gives_same_result(void **state)
{
	struct vqs_mem_region r[4] = {region(0x1000, PAGE, 0), region(0x5000, PAGE, PAGE),
				      region(0x9000, PAGE, 2 * PAGE), region(0xd000, PAGE, 3 * PAGE)};
	struct vqs_mem *m = map_of(r, 4);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	const struct vqs_mem_table *t = vqs_mem_current(m);
	const uint64_t probes[] = {0x1000, 0x1fff, 0x5800, 0x9000, 0xdfff, 0xe000, 0x0, 0x4fff};
	const unsigned hints[] = {0, 1, 2, 3, 4, 100, UINT32_MAX};

	for (unsigned p = 0; p < sizeof(probes) / sizeof(probes[0]); p++) {
		struct iovec want;
		unsigned h0 = 0;
		int want_rc = vqs_mem_translate(t, probes[p], 1, &want, 1, &h0);
		for (unsigned h = 0; h < sizeof(hints) / sizeof(hints[0]); h++) {
			struct iovec got;
			unsigned hint = hints[h];
			assert_int_equal(vqs_mem_translate(t, probes[p], 1, &got, 1, &hint), want_rc);
			if (want_rc == 1) {
				assert_ptr_equal(got.iov_base, want.iov_base);
				/* The hint now names the region hit: the next lookup there is a hit. */
				assert_true(hint < 4);
				assert_int_equal(r[hint].gpa, probes[p] & ~(uint64_t)(PAGE - 1));
			}
		}
	}
	/* A hint left over from a bigger table must not be trusted by a smaller one. */
	unsigned hint = 3;
	assert_int_equal(vqs_mem_set(m, r, 1), 0);
	struct iovec got;
	assert_int_equal(vqs_mem_translate(vqs_mem_current(m), 0xd000, 1, &got, 1, &hint), -EFAULT);
	assert_int_equal(vqs_mem_translate(vqs_mem_current(m), 0x1000, 1, &got, 1, &hint), 1);
	assert_ptr_equal(got.iov_base, host_buf);
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
}

static void uaddr_translation(void **state)
{
	/* Frontend addresses unrelated to (and ordered differently from) gpas. */
	struct vqs_mem_region r[2] = {region(0x1000, PAGE, 0), region(0x2000, PAGE, 2 * PAGE)};
	r[0].uaddr = 0x7f0000002000;
	r[1].uaddr = 0x7f0000001000;
	struct vqs_mem *m = map_of(r, 2);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	const struct vqs_mem_table *t = vqs_mem_current(m);
	uint64_t gpa = 0;

	assert_ptr_equal(vqs_mem_uaddr_to_host(t, 0x7f0000002010, 16), host_buf + 0x10);
	assert_ptr_equal(vqs_mem_uaddr_to_host(t, 0x7f0000001fff, 1), host_buf + 3 * PAGE - 1);
	assert_int_equal(vqs_mem_uaddr_to_gpa(t, 0x7f0000001010, 8, &gpa), 0);
	assert_int_equal(gpa, 0x2010);
	assert_int_equal(vqs_mem_uaddr_to_gpa(t, 0x7f0000002fff, 1, &gpa), 0);
	assert_int_equal(gpa, 0x1fff);
	/* Adjacent in uaddr but not in gpa: no single gpa range, so refused. */
	assert_int_equal(vqs_mem_uaddr_to_gpa(t, 0x7f0000001ff8, 16, &gpa), -EFAULT);
	assert_null(vqs_mem_uaddr_to_host(t, 0x7f0000001ff8, 16));
	assert_null(vqs_mem_uaddr_to_host(t, 0x7f0000003000, 1));
	assert_null(vqs_mem_uaddr_to_host(t, 0x7f0000000fff, 1));
	assert_int_equal(vqs_mem_uaddr_to_gpa(t, 0x1000, 1, &gpa), -EFAULT);
	assert_null(vqs_mem_uaddr_to_host(t, UINT64_MAX, 2));
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
}

/* ---- validation ---- */

/* set must fail with rc, leaving the map (regions, generation) as it was, no hook called. */
static void expect_set_rejected(const struct vqs_mem_region *r, unsigned n, int rc)
{
	struct hook_log log = {0};
	struct vqs_mem_region keep = hooked(region(0x100000, PAGE, 0), &log);
	struct vqs_mem *m = map_of(&keep, 1);
	uint64_t gen = vqs_mem_table_gen(vqs_mem_current(m));
	struct vqs_mem_region *rh = calloc(n + 1, sizeof(*rh));
	for (unsigned i = 0; i < n; i++)
		rh[i] = hooked(r[i], &log);
	assert_int_equal(vqs_mem_set(m, rh, n), rc);
	vqs_mem_synchronize(m);
	assert_int_equal(vqs_mem_nregions(m), 1);
	assert_int_equal(vqs_mem_table_gen(vqs_mem_current(m)), gen);
	assert_int_equal(atomic_load(&log.calls), 0);
	vqs_mem_destroy(m);
	assert_int_equal(atomic_load(&log.calls), 1);
	free(rh);
}

static void set_rejects_overlap_in_gpa(void **state)
{
	struct vqs_mem_region r[3] = {region(0x1000, PAGE, 0), region(0x8000, PAGE, PAGE),
				      region(0x1fff, PAGE, 2 * PAGE)};
	r[2].uaddr = 0x20000;
	expect_set_rejected(r, 3, -EINVAL);
	struct vqs_mem_region same[2] = {region(0x1000, 1, 0), region(0x1000, 1, PAGE)};
	same[1].uaddr = 0x20000;
	expect_set_rejected(same, 2, -EINVAL);
}

static void set_rejects_overlap_in_uaddr(void **state)
{
	struct vqs_mem_region r[2] = {region(0x1000, PAGE, 0), region(0x8000, PAGE, PAGE)};
	r[1].uaddr = 0x1800;
	expect_set_rejected(r, 2, -EINVAL);
}

static void set_rejects_size_zero_and_null_host(void **state)
{
	struct vqs_mem_region r = region(0x1000, 0, 0);
	expect_set_rejected(&r, 1, -EINVAL);
	r = region(0x1000, PAGE, 0);
	r.host = NULL;
	expect_set_rejected(&r, 1, -EINVAL);
}

static void set_rejects_null_array(void **state)
{
	struct vqs_mem *m;
	assert_int_equal(vqs_mem_create(&m), 0);
	assert_int_equal(vqs_mem_set(m, NULL, 1), -EINVAL);
	assert_int_equal(vqs_mem_set(m, NULL, 0), 0);
	assert_int_equal(vqs_mem_nregions(m), 0);
	vqs_mem_destroy(m);
}

static void set_rejects_wrapping_size(void **state)
{
	struct vqs_mem_region r = region(UINT64_MAX - PAGE + 2, PAGE, 0); /* gpa + size wraps */
	r.uaddr = 0x1000;
	expect_set_rejected(&r, 1, -EINVAL);
	r = region(0x1000, PAGE, 0);
	r.uaddr = UINT64_MAX - 10; /* uaddr + size wraps */
	expect_set_rejected(&r, 1, -EINVAL);
	r = region(0x1000, UINT64_MAX, 0);
	expect_set_rejected(&r, 1, -EINVAL);
}

static void set_rejects_more_than_max_regions(void **state)
{
	struct vqs_mem_region *r = calloc(VQS_MEM_MAX_REGIONS + 1, sizeof(*r));
	for (unsigned i = 0; i <= VQS_MEM_MAX_REGIONS; i++)
		r[i] = region((uint64_t)i * 2 * PAGE, 8, 8 * (i % 64));
	expect_set_rejected(r, VQS_MEM_MAX_REGIONS + 1, -E2BIG);

	struct vqs_mem *m = map_of(r, VQS_MEM_MAX_REGIONS);
	vqs_mem_read_lock(); /* the tables used below stay valid */
	assert_int_equal(vqs_mem_nregions(m), VQS_MEM_MAX_REGIONS);
	assert_int_equal(vqs_mem_add(m, &r[VQS_MEM_MAX_REGIONS]), -E2BIG);
	unsigned hint = 0;
	struct iovec iov;
	assert_int_equal(vqs_mem_translate(vqs_mem_current(m), 511 * 2 * PAGE + 7, 1, &iov, 1,
					   &hint), 1);
	assert_ptr_equal(iov.iov_base, host_buf + 8 * (511 % 64) + 7);
	vqs_mem_read_unlock();
	vqs_mem_destroy(m);
	free(r);
}

/* ---- add, remove, lifetimes ---- */

static void add_remove_share_regions_between_tables(void **state)
{
	struct hook_log la = {0}, lb = {0};
	struct vqs_mem *m;
	assert_int_equal(vqs_mem_create(&m), 0);
	atomic_store(&la.m, m);
	atomic_store(&lb.m, m);
	assert_int_equal(vqs_mem_nregions(m), 0);
	uint64_t gen0 = vqs_mem_table_gen(vqs_mem_current(m));
	assert_true(gen0 > 0);

	struct vqs_mem_region a = hooked(region(0x1000, PAGE, 0), &la);
	struct vqs_mem_region b = hooked(region(0x2000, PAGE, PAGE), &lb);
	assert_int_equal(vqs_mem_add(m, &a), 0);
	assert_int_equal(vqs_mem_add(m, &b), 0);
	assert_int_equal(vqs_mem_nregions(m), 2);
	assert_true(vqs_mem_table_gen(vqs_mem_current(m)) == gen0 + 2);
	/* Overlapping add is refused and the caller keeps the region: no hook. */
	struct hook_log lc = {0};
	struct vqs_mem_region c = hooked(region(0x2800, PAGE, 2 * PAGE), &lc);
	assert_int_equal(vqs_mem_add(m, &c), -EINVAL);
	assert_int_equal(vqs_mem_add(m, NULL), -EINVAL);

	/* Only an exact gpa+size match removes. */
	assert_int_equal(vqs_mem_remove(m, 0x1000, PAGE - 1), -ENOENT);
	assert_int_equal(vqs_mem_remove(m, 0x1001, PAGE), -ENOENT);
	assert_int_equal(vqs_mem_remove(m, 0x1000, PAGE), 0);
	assert_int_equal(vqs_mem_remove(m, 0x1000, PAGE), -ENOENT);
	assert_int_equal(vqs_mem_nregions(m), 1);
	vqs_mem_synchronize(m);
	/* a went with the table that last listed it, b lived on through three tables. */
	assert_int_equal(atomic_load(&la.calls), 1);
	assert_int_equal(atomic_load(&lb.calls), 0);
	assert_null(vqs_mem_gpa_to_host(vqs_mem_current(m), 0x1000, 1));
	assert_non_null(vqs_mem_gpa_to_host(vqs_mem_current(m), 0x2000, 1));

	atomic_store(&lb.m, NULL);
	vqs_mem_destroy(m);
	assert_int_equal(atomic_load(&la.calls), 1);
	assert_int_equal(atomic_load(&lb.calls), 1);
	assert_int_equal(atomic_load(&la.while_reachable), 0);
	assert_int_equal(atomic_load(&lc.calls), 0);
}

static void release_hooks_run_once_after_table_left(void **state)
{
	struct hook_log log = {0};
	struct vqs_mem *m;
	assert_int_equal(vqs_mem_create(&m), 0);
	atomic_store(&log.m, m);
	enum { ROUNDS = 50 };
	for (unsigned i = 0; i < ROUNDS; i++) {
		/* Same gpas every round, fresh host addresses: a hook can tell its region from
		 * the one that replaced it. */
		struct vqs_mem_region r[2] = {hooked(region(0x1000, 64, i * 128), &log),
					      hooked(region(0x9000, 64, i * 128 + 64), &log)};
		assert_int_equal(vqs_mem_set(m, r, 2), 0);
	}
	vqs_mem_synchronize(m);
	assert_int_equal(atomic_load(&log.calls), 2 * (ROUNDS - 1));
	assert_int_equal(atomic_load(&log.while_reachable), 0);
	assert_int_equal(vqs_mem_set(m, NULL, 0), 0);
	vqs_mem_synchronize(m);
	assert_int_equal(atomic_load(&log.calls), 2 * ROUNDS);
	vqs_mem_destroy(m);
	assert_int_equal(atomic_load(&log.calls), 2 * ROUNDS);
	assert_int_equal(atomic_load(&log.while_reachable), 0);
}

static void pins_delay_release(void **state)
{
	struct hook_log log = {0};
	struct vqs_mem_region r = hooked(region(0x1000, PAGE, 0), &log);
	struct vqs_mem *m = map_of(&r, 1);
	atomic_store(&log.m, m);

	vqs_mem_read_lock();
	const struct vqs_mem_table *pin1 = vqs_mem_table_get(m);
	const struct vqs_mem_table *pin2 = vqs_mem_table_get(m);
	vqs_mem_read_unlock();
	assert_ptr_equal(pin1, pin2);

	assert_int_equal(vqs_mem_set(m, NULL, 0), 0);
	vqs_mem_synchronize(m);
	assert_int_equal(atomic_load(&log.calls), 0);
	/* The pinned table still translates to the (still owned) mapping. */
	uint8_t b;
	assert_int_equal(vqs_mem_copy_from(pin1, 0x1005, &b, 1), 0);
	assert_int_equal(b, 5);
	assert_true(vqs_mem_table_gen(vqs_mem_current(m)) > vqs_mem_table_gen(pin1));

	vqs_mem_table_put(pin1);
	assert_int_equal(atomic_load(&log.calls), 0);
	vqs_mem_table_put(pin2); /* the last reference: the hook runs right here */
	assert_int_equal(atomic_load(&log.calls), 1);
	assert_int_equal(atomic_load(&log.while_reachable), 0);
	vqs_mem_destroy(m);
	assert_int_equal(atomic_load(&log.calls), 1);
}

/* Two threads adding and removing their own regions: every change lands, none is lost. */
struct writer_arg {
	struct vqs_mem *m;
	struct hook_log *log;
	uint64_t gpa;
	unsigned rounds;
	int failures;
};

static void *add_remove_loop(void *p)
{
	struct writer_arg *w = p;
	for (unsigned i = 0; i < w->rounds; i++) {
		struct vqs_mem_region r = hooked(region(w->gpa, 64, w->gpa % 8192), w->log);
		if (vqs_mem_add(w->m, &r) || vqs_mem_remove(w->m, w->gpa, 64))
			w->failures++;
	}
	return NULL;
}

static void concurrent_writers_serialise(void **state)
{
	struct hook_log log = {0};
	struct vqs_mem *m;
	assert_int_equal(vqs_mem_create(&m), 0);
	uint64_t gen0 = vqs_mem_table_gen(vqs_mem_current(m));
	unsigned rounds = (unsigned)vqs_test_scaled(2000);
	struct writer_arg w[2] = {{m, &log, 0x1000, rounds, 0}, {m, &log, 0x2000, rounds, 0}};
	pthread_t th[2];
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, add_remove_loop, &w[i]), 0);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(w[0].failures + w[1].failures, 0);
	assert_int_equal(vqs_mem_nregions(m), 0);
	assert_int_equal(vqs_mem_table_gen(vqs_mem_current(m)), gen0 + 4 * rounds);
	vqs_mem_destroy(m);
	assert_int_equal(atomic_load(&log.calls), 2 * rounds);
}

/* ---- replacement under concurrent readers ---- */

#define STRESS_GPA 0x40000
#define STRESS_REGION (4 * PAGE)

struct stress {
	struct vqs_mem *m;
	atomic_bool stop;
	atomic_ulong reads[2];
	atomic_ulong released;
	atomic_int bad; /* reads that saw a torn table */
};

struct reader_arg {
	struct stress *s;
	unsigned id;
};

static void *stress_reader(void *p)
{
	struct reader_arg *a = p;
	struct stress *s = a->s;
	unsigned hint = 0;
	uint8_t copy[256];
	while (!atomic_load_explicit(&s->stop, memory_order_relaxed)) {
		vqs_mem_read_lock();
		const struct vqs_mem_table *t = vqs_mem_current(s->m);
		struct iovec iov[2];
		/* Straddle the two regions, each a separate mmap filled with the table's byte. */
		int n = vqs_mem_translate(t, STRESS_GPA + STRESS_REGION - 128, 256, iov, 2, &hint);
		if (n == 2) {
			const volatile uint8_t *p0 = iov[0].iov_base, *p1 = iov[1].iov_base;
			uint8_t v = p0[0];
			for (size_t i = 0; i < iov[0].iov_len; i++)
				if (p0[i] != v)
					atomic_fetch_add(&s->bad, 1);
			for (size_t i = 0; i < iov[1].iov_len; i++)
				if (p1[i] != v)
					atomic_fetch_add(&s->bad, 1);
			if (vqs_mem_copy_from(t, STRESS_GPA + STRESS_REGION - 128, copy, 256) ||
			    copy[0] != v || copy[255] != v)
				atomic_fetch_add(&s->bad, 1);
			atomic_fetch_add_explicit(&s->reads[a->id], 1, memory_order_relaxed);
		} else {
			atomic_fetch_add(&s->bad, 1);
		}
		vqs_mem_read_unlock();
	}
	return NULL;
}

static void unmap_release(void *opaque, const struct vqs_mem_region *r)
{
	struct stress *s = opaque;
	munmap(r->host, r->size);
	atomic_fetch_add(&s->released, 1);
}

static void stress_publish(struct stress *s, unsigned round)
{
	struct vqs_mem_region r[2];
	for (unsigned i = 0; i < 2; i++) {
		void *host = mmap(NULL, STRESS_REGION, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		assert_true(host != MAP_FAILED);
		memset(host, (int)(round & 0xff), STRESS_REGION);
		r[i] = (struct vqs_mem_region){.gpa = STRESS_GPA + i * STRESS_REGION,
					       .size = STRESS_REGION, .uaddr = (uintptr_t)host,
					       .host = host, .release = unmap_release,
					       .release_opaque = s};
	}
	assert_int_equal(vqs_mem_set(s->m, r, 2), 0);
}

static bool readers_started(struct stress *s)
{
	return atomic_load(&s->reads[0]) && atomic_load(&s->reads[1]);
}

static void replace_while_reading(void **state)
{
	struct stress s = {0};
	assert_int_equal(vqs_mem_create(&s.m), 0);
	stress_publish(&s, 0);
	pthread_t th[2];
	struct reader_arg args[2] = {{&s, 0}, {&s, 1}};
	for (unsigned i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&th[i], NULL, stress_reader, &args[i]), 0);
	uint64_t deadline = vqs_now_ns() + 10000000000ull;
	while (!readers_started(&s) && vqs_now_ns() < deadline)
		sched_yield();
	assert_true(readers_started(&s));

	unsigned long rounds = vqs_test_scaled(20000);
	for (unsigned long i = 1; i <= rounds; i++) {
		stress_publish(&s, (unsigned)i);
		/* Bound the mappings awaiting their grace period (vm.max_map_count). */
		if (i % 1000 == 0)
			vqs_mem_synchronize(s.m);
	}
	atomic_store(&s.stop, true);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	vqs_mem_destroy(s.m);
	assert_int_equal(atomic_load(&s.bad), 0);
	assert_int_equal(atomic_load(&s.released), 2 * (rounds + 1));
	print_message("%lu replacements, %lu + %lu reads\n", rounds, atomic_load(&s.reads[0]),
		      atomic_load(&s.reads[1]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(translate_first_last_and_one_past_end),
		cmocka_unit_test(translate_len_zero_gives_no_iovec),
		cmocka_unit_test(translate_wrapping_range_faults),
		cmocka_unit_test(translate_spans_adjacent_regions),
		cmocka_unit_test(translate_gap_between_regions_faults),
		cmocka_unit_test(translate_too_few_iovecs_is_enobufs_unless_unmapped),
		cmocka_unit_test(translate_hint_any_value_gives_same_result),
		cmocka_unit_test(uaddr_translation),
		cmocka_unit_test(set_rejects_overlap_in_gpa),
		cmocka_unit_test(set_rejects_overlap_in_uaddr),
		cmocka_unit_test(set_rejects_size_zero_and_null_host),
		cmocka_unit_test(set_rejects_null_array),
		cmocka_unit_test(set_rejects_wrapping_size),
		cmocka_unit_test(set_rejects_more_than_max_regions),
		cmocka_unit_test(add_remove_share_regions_between_tables),
		cmocka_unit_test(release_hooks_run_once_after_table_left),
		cmocka_unit_test(pins_delay_release),
		cmocka_unit_test(concurrent_writers_serialise),
		cmocka_unit_test(replace_while_reading),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
