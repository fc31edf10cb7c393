/* SPDX-License-Identifier: MIT */
/*
 * Split rings leave a ring field that already holds the value they would store as it is (its
 * cache line stays shared with the other side): the driver its descriptors and avail entries,
 * the device its used entries. The library's driver and device on one ring, as one request in
 * flight at a time uses it (the same head, buffers and length each time); the ring's pages are
 * made read-only around the calls that must not store, so a store there faults, and the fault is
 * counted and the pages made writable again (the store then goes on: a call that stores inside
 * its read-side section still leaves it). Values that did change still reach the other side.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#define NUM 256u
#define GPA 0x100000ull
#define ARENA (1u << 20)
/* more than the ring's size: every avail and used position is met again */
#define ROUNDS (2 * NUM + 3)

struct fx {
	struct vqs_gmem *gmem;
	struct vqs_mem *mem;
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	uint64_t out, in;
	char *lo, *hi; /* the pages of the three ring areas */
};

static struct fx fx;
static volatile sig_atomic_t faults;
static struct sigaction old_segv;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	char *at = si->si_addr;
	if (at < fx.lo || at >= fx.hi) { /* not ours: as before */
		sigaction(sig, &old_segv, NULL);
		return;
	}
	faults++;
	mprotect(fx.lo, (size_t)(fx.hi - fx.lo), PROT_READ | PROT_WRITE);
}

static void area_pages(struct fx *f, uint64_t gpa, size_t len)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	char *p = vqs_gmem_host(f->gmem, gpa, len);
	char *lo = (char *)((uintptr_t)p & ~(page - 1));
	char *hi = (char *)(((uintptr_t)p + len + page - 1) & ~(page - 1));
	f->lo = !f->lo || lo < f->lo ? lo : f->lo;
	f->hi = hi > f->hi ? hi : f->hi;
}

static int setup(void **state)
{
	(void)state;
	struct fx *f = &fx;
	memset(f, 0, sizeof(*f));
	uint64_t feat = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX);
	struct vqs_mem_region reg;
	if (vqs_gmem_create(&f->gmem, GPA, ARENA) || vqs_mem_create(&f->mem))
		return -1;
	vqs_gmem_region(f->gmem, &reg);
	struct vqs_drv_vq_config dc = {.size = sizeof(dc), .num = NUM, .features = feat,
				       .gmem = f->gmem};
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = NUM, .features = feat,
				   .addr_space = VQS_ADDR_GPA, .mem = f->mem};
	if (vqs_mem_set(f->mem, &reg, 1) || vqs_drv_vq_create(&f->drv, &dc))
		return -1;
	vqs_drv_vq_addrs(f->drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	if (vqs_vq_create(&f->dev) || vqs_vq_configure(f->dev, &vc))
		return -1;
	vqs_drv_disable_cb(f->drv); /* a polling driver, as the benchmark's */
	vqs_vq_disable_notify(f->dev);
	area_pages(f, vc.desc_addr, vqs_vring_desc_size(NUM));
	area_pages(f, vc.driver_addr, vqs_vring_avail_size(NUM));
	area_pages(f, vc.device_addr, vqs_vring_used_size(NUM));
	f->out = vqs_gmem_alloc(f->gmem, 64, 64);
	f->in = vqs_gmem_alloc(f->gmem, 64, 64);
	return f->out && f->in ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	vqs_vq_destroy(fx.dev);
	vqs_drv_vq_destroy(fx.drv);
	vqs_mem_destroy(fx.mem);
	vqs_gmem_destroy(fx.gmem);
	return 0;
}

/* Count faults in the ring's pages from here to watch_end (cmocka installs its own handler
 * around each test function, so inside it). */
static void watch_begin(void)
{
	faults = 0;
	struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO};
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGSEGV, &sa, &old_segv), 0);
}

static unsigned watch_end(void)
{
	sigaction(SIGSEGV, &old_segv, NULL);
	return (unsigned)faults;
}

static void ring_writable(struct fx *f, bool w)
{
	assert_int_equal(mprotect(f->lo, (size_t)(f->hi - f->lo), PROT_READ | (w ? PROT_WRITE : 0)),
			 0);
}

/* One request (a readable buffer at out, a writable one at in) through both sides, the device
 * answering `written` bytes; the ring read-only during the driver's add (ro_add) and the
 * device's fill (ro_fill). Returns the address the device found in the chain's first
 * descriptor. */
static uint64_t round_trip(struct fx *f, uint64_t out, uint32_t written, bool ro_add,
			   bool ro_fill)
{
	static int token;
	struct vqs_drv_buf b[2] = {{out, 64}, {f->in, 64}};
	if (ro_add)
		ring_writable(f, false);
	int rc = vqs_drv_add(f->drv, b, 1, 1, &token, false);
	ring_writable(f, true);
	assert_int_equal(rc, 0);
	vqs_drv_kick_prepare(f->drv);

	struct iovec iov[4];
	struct vqs_elem e = {.iov = iov, .iov_cap = 4};
	const struct vqs_elem *pe = &e;
	struct vqs_vq_session ss;
	bool call;
	assert_int_equal(vqs_vq_session_begin(f->dev, &ss), 1);
	assert_int_equal(vqs_vq_session_pop(&ss, &(struct vqs_pop_to){.base = &e}, 1), 1);
	uint64_t found = (uint64_t)(uintptr_t)iov[0].iov_base;
	if (ro_fill)
		ring_writable(f, false);
	rc = vqs_vq_session_fill(&ss, &pe, &written, 1);
	ring_writable(f, true);
	assert_int_equal(rc, 1);
	assert_int_equal(vqs_vq_session_end(&ss, &call), 1);

	uint32_t len = UINT32_MAX;
	assert_ptr_equal(vqs_drv_get_used(f->drv, &len), &token);
	assert_int_equal(len, written);
	return found;
}

/* The driver adds the chain it just got back, with the same buffers, at every avail position:
 * its descriptors and the avail entry already hold those values, and nothing is stored. */
static void test_driver_stores_nothing_unchanged(void **state)
{
	(void)state;
	round_trip(&fx, fx.out, 0, false, false);
	watch_begin();
	for (unsigned i = 0; i < ROUNDS; i++)
		round_trip(&fx, fx.out, 0, true, false);
	assert_int_equal(watch_end(), 0);
}

/* The device answers the same head with the same length at every used position: the entry
 * already holds it, and nothing is stored. */
static void test_device_stores_no_unchanged_used_entry(void **state)
{
	(void)state;
	for (unsigned i = 0; i < NUM; i++)
		round_trip(&fx, fx.out, 0, false, false);
	watch_begin();
	for (unsigned i = 0; i < ROUNDS; i++)
		round_trip(&fx, fx.out, 0, false, true);
	assert_int_equal(watch_end(), 0);
}

/* What changed is stored: a new buffer address reaches the device, a new length the driver
 * (each round_trip checks the length the driver reads), at every position. */
static void test_changed_values_are_stored(void **state)
{
	(void)state;
	uint64_t other = vqs_gmem_alloc(fx.gmem, 64, 64);
	assert_true(other != 0);
	for (unsigned i = 0; i < ROUNDS; i++) {
		uint64_t out = i % 2 ? other : fx.out;
		uint64_t found = round_trip(&fx, out, i % 3 ? 0 : 1 + i % 64, false, false);
		assert_int_equal(found, (uint64_t)(uintptr_t)vqs_gmem_host(fx.gmem, out, 64));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_driver_stores_nothing_unchanged, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_device_stores_no_unchanged_used_entry, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_changed_values_are_stored, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
