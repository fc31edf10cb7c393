/* SPDX-License-Identifier: MIT */
/*
 * The dirty page log (issue 20): while the map logs, exactly the guest pages a queue's device
 * wrote are marked: the written bytes of its buffers (across pages and regions), and with
 * log_ring the used entries and index flush published and the notification fields it switched
 * (used flags, avail_event; packed device event area). Nothing is marked while it is off, and
 * nothing is ever written past the bitmap. Public API only: a driver queue and a device queue
 * over an arena split into two regions.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

#define BASE 0x100000ull
#define ARENA (1u << 20)
#define HALF (ARENA / 2)
#define PAGE VQS_MEM_LOG_PAGE
#define LOG_BYTES ((BASE + ARENA) / PAGE / 8)
#define GUARD 16

struct fix {
	struct vqs_gmem *g;
	struct vqs_mem *mem;
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	uint8_t *log; /* LOG_BYTES + GUARD bytes; the map sees LOG_BYTES */
	uint64_t used_gpa;
	uint64_t event_gpa; /* packed: the device event area */
	bool packed;
	int released;
};

static void release_log(void *opaque, void *bitmap, uint64_t len)
{
	struct fix *x = opaque;
	x->released++;
}

static void fix_init_ring(struct fix *x, bool packed, uint64_t features, uint32_t num,
			  uint64_t log_len)
{
	memset(x, 0, sizeof(*x));
	x->packed = packed;
	assert_int_equal(vqs_gmem_create(&x->g, BASE, ARENA), 0);
	struct vqs_mem_region r[2];
	vqs_gmem_region(x->g, &r[0]);
	r[1] = r[0];
	r[0].size = r[1].size = HALF;
	r[1].gpa += HALF;
	r[1].uaddr += HALF;
	r[1].host = (char *)r[1].host + HALF;
	assert_int_equal(vqs_mem_create(&x->mem), 0);
	assert_int_equal(vqs_mem_set(x->mem, r, 2), 0);
	uint64_t f = VQS_BIT(VQS_F_VERSION_1) | (packed ? VQS_BIT(VQS_F_RING_PACKED) : 0) | features;
	struct vqs_drv_vq_config dc = { .size = sizeof(dc), .num = num, .features = f, .gmem = x->g };
	assert_int_equal(vqs_drv_vq_create(&x->drv, &dc), 0);
	struct vqs_vq_config vc = { .size = sizeof(vc), .num = num, .features = f,
				    .addr_space = VQS_ADDR_GPA, .mem = x->mem, .log_ring = true };
	vqs_drv_vq_addrs(x->drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	/* split: the used ring; packed: the descriptor ring is where the device writes */
	vc.log_addr = x->used_gpa = packed ? vc.desc_addr : vc.device_addr;
	vc.log_event_addr = x->event_gpa = vc.device_addr;
	assert_int_equal(vqs_vq_create(&x->dev), 0);
	assert_int_equal(vqs_vq_configure(x->dev, &vc), 0);
	x->log = calloc(1, LOG_BYTES + GUARD);
	struct vqs_mem_log l = { .bitmap = x->log, .len = log_len, .release = release_log,
				 .release_opaque = x };
	assert_int_equal(vqs_mem_set_log(x->mem, &l), 0);
	assert_int_equal(vqs_mem_log_enable(x->mem, true), 0);
}

static void fix_init(struct fix *x, bool packed, uint64_t log_len)
{
	fix_init_ring(x, packed, 0, 16, log_len);
}

static void fix_fini(struct fix *x)
{
	vqs_vq_destroy(x->dev);
	vqs_drv_vq_destroy(x->drv);
	vqs_mem_destroy(x->mem);
	assert_int_equal(x->released, 1);
	vqs_gmem_destroy(x->g);
	free(x->log);
}

/* One chain: a readable buffer, then writable ones; the device writes `written` bytes. */
static void serve_one(struct fix *x, const struct vqs_drv_buf *bufs, unsigned in,
		      uint32_t written)
{
	static int token;
	assert_int_equal(vqs_drv_add(x->drv, bufs, 1, in, &token, false), 0);
	vqs_drv_kick_prepare(x->drv);
	struct iovec iov[8];
	struct vqs_elem e = { .iov = iov, .iov_cap = 8 };
	vqs_mem_read_lock();
	assert_int_equal(vqs_vq_pop(x->dev, &e), 0);
	vqs_mem_read_unlock();
	assert_int_equal(vqs_vq_fill(x->dev, &e, written), 0);
	assert_int_equal(vqs_vq_flush(x->dev), 1);
	uint32_t len;
	assert_ptr_equal(vqs_drv_get_used(x->drv, &len), &token);
}

static void set_pages(uint8_t *want, uint64_t gpa, uint64_t len)
{
	for (uint64_t p = gpa / PAGE; p <= (gpa + len - 1) / PAGE; p++)
		want[p / 8] |= (uint8_t)(1u << (p % 8));
}

static void expect_log(const struct fix *x, const uint8_t *want)
{
	for (unsigned i = 0; i < LOG_BYTES + GUARD; i++)
		if (x->log[i] != want[i])
			fail_msg("log byte %u (pages %u..%u): %#x, want %#x", i, i * 8, i * 8 + 7,
				 x->log[i], want[i]);
}

/* Buffers at fixed places: a readable one, one across the regions' boundary, one across three
 * pages of which the device writes into two. */
#define RD (BASE + 0x40000)
#define ACROSS (BASE + HALF - 100)
#define LONG (BASE + 0x1ff0)

static void marks_exactly_the_written_pages(bool packed)
{
	struct fix x;
	fix_init(&x, packed, LOG_BYTES);
	struct vqs_drv_buf bufs[3] = { { RD, 64 }, { ACROSS, 300 }, { LONG, 0x2020 } };
	serve_one(&x, bufs, 2, 300 + 0x1010);
	uint8_t want[LOG_BYTES + GUARD] = { 0 };
	set_pages(want, ACROSS, 300);
	set_pages(want, LONG, 0x1010);
	if (packed)
		set_pages(want, x.used_gpa, sizeof(struct vqs_vring_packed_desc));
	else
		set_pages(want, x.used_gpa, 4 + sizeof(struct vqs_vring_used_elem));
	expect_log(&x, want);
	fix_fini(&x);
}

static void test_log_marks_exactly_written_pages_split(void **state)
{
	marks_exactly_the_written_pages(false);
}

static void test_log_marks_exactly_written_pages_packed(void **state)
{
	marks_exactly_the_written_pages(true);
}

/* Writing less than the buffers hold marks only what was written; a chain of readable buffers
 * only (written 0) marks the used ring alone. */
static void test_log_follows_written_length(void **state)
{
	struct fix x;
	fix_init(&x, false, LOG_BYTES);
	struct vqs_drv_buf bufs[2] = { { RD, 64 }, { LONG, 0x2020 } };
	serve_one(&x, bufs, 1, 0x10);
	uint8_t want[LOG_BYTES + GUARD] = { 0 };
	set_pages(want, LONG, 0x10);
	set_pages(want, x.used_gpa, 12);
	expect_log(&x, want);
	fix_fini(&x);
}

static void test_log_off_marks_nothing(void **state)
{
	struct fix x;
	fix_init(&x, false, LOG_BYTES);
	assert_int_equal(vqs_mem_log_enable(x.mem, false), 0);
	struct vqs_drv_buf bufs[2] = { { RD, 64 }, { ACROSS, 300 } };
	serve_one(&x, bufs, 1, 300);
	uint8_t want[LOG_BYTES + GUARD] = { 0 };
	expect_log(&x, want);
	/* and on again, live, for the next chain */
	assert_int_equal(vqs_mem_log_enable(x.mem, true), 0);
	serve_one(&x, bufs, 1, 300);
	set_pages(want, ACROSS, 300);
	set_pages(want, x.used_gpa, 4 + 2 * sizeof(struct vqs_vring_used_elem));
	expect_log(&x, want);
	fix_fini(&x);
}

/* CVE-2019-14835 class: a log shorter than guest memory is never written past its end. */
static void test_log_never_written_past_its_end(void **state)
{
	struct fix x;
	/* covers pages up to 0x107: the ring page and LONG, not ACROSS */
	uint64_t len = (BASE + 0x8000) / PAGE / 8;
	fix_init(&x, false, len);
	struct vqs_drv_buf bufs[3] = { { RD, 64 }, { LONG, 0x2020 }, { ACROSS, 300 } };
	serve_one(&x, bufs, 2, 0x2020 + 300);
	uint8_t want[LOG_BYTES + GUARD] = { 0 };
	set_pages(want, LONG, 0x2020);
	set_pages(want, x.used_gpa, 12);
	expect_log(&x, want);
	vqs_mem_read_lock();
	vqs_mem_log_write(vqs_mem_current(x.mem), UINT64_MAX - 10, 100);
	vqs_mem_read_unlock();
	expect_log(&x, want);
	fix_fini(&x);
}

/* Did the log's eventfd get a signal since the last look? */
static bool signalled(int efd)
{
	uint64_t v;
	return read(efd, &v, sizeof(v)) == (ssize_t)sizeof(v) && v > 0;
}

/*
 * Switching notifications marks the bytes the device wrote: used->flags without EVENT_IDX (on
 * both switches), avail_event with it (on enable only; it lies past the 1024 used entries, on
 * another page than the index), the packed device event area (on both). A destination's driver
 * reads them as the source's device left them, and the log's eventfd (SET_LOG_FD) says so, as
 * after a batch's marks.
 */
static void marks_notify_fields(bool packed, bool event_idx)
{
	struct fix x;
	fix_init_ring(&x, packed, event_idx ? VQS_BIT(VQS_F_EVENT_IDX) : 0, 1024, LOG_BYTES);
	int efd = eventfd(0, EFD_NONBLOCK);
	assert_true(efd >= 0);
	assert_int_equal(vqs_mem_set_log_fd(x.mem, efd), 0);
	uint64_t field = packed ? x.event_gpa : x.used_gpa;
	uint64_t len = packed ? sizeof(struct vqs_vring_packed_event) : 2;
	if (!packed && event_idx) {
		field += 4 + 1024 * sizeof(struct vqs_vring_used_elem);
		assert_true(field / PAGE != (x.used_gpa + 2) / PAGE);
	}
	uint8_t want[LOG_BYTES + GUARD] = { 0 };
	vqs_vq_disable_notify(x.dev);
	if (packed || !event_idx)
		set_pages(want, field, len);
	expect_log(&x, want);
	assert_int_equal(signalled(efd), packed || !event_idx);

	memset(x.log, 0, LOG_BYTES);
	memset(want, 0, sizeof(want));
	assert_false(vqs_vq_enable_notify(x.dev));
	set_pages(want, field, len);
	expect_log(&x, want);
	assert_true(signalled(efd));

	/* Not logging: nothing. */
	memset(x.log, 0, LOG_BYTES);
	memset(want, 0, sizeof(want));
	assert_int_equal(vqs_mem_log_enable(x.mem, false), 0);
	vqs_vq_disable_notify(x.dev);
	assert_false(vqs_vq_enable_notify(x.dev));
	expect_log(&x, want);
	assert_false(signalled(efd));
	assert_int_equal(vqs_mem_set_log_fd(x.mem, -1), 0);
	vqs_mem_synchronize(x.mem);
	close(efd);
	fix_fini(&x);
}

static void test_log_marks_used_flags(void **state) { marks_notify_fields(false, false); }
static void test_log_marks_avail_event(void **state) { marks_notify_fields(false, true); }
static void test_log_marks_packed_device_event(void **state) { marks_notify_fields(true, true); }

static void test_log_replaced_is_released(void **state)
{
	struct fix x;
	fix_init(&x, false, LOG_BYTES);
	assert_int_equal(vqs_mem_set_log(x.mem, NULL), 0);
	vqs_mem_synchronize(x.mem);
	assert_int_equal(x.released, 1);
	x.released = 0;
	uint8_t other[8];
	struct vqs_mem_log l = { .bitmap = other, .len = 8, .release = release_log,
				 .release_opaque = &x };
	assert_int_equal(vqs_mem_set_log(x.mem, &l), 0);
	struct vqs_mem_log bad = { .bitmap = other, .len = 0 };
	assert_int_equal(vqs_mem_set_log(x.mem, &bad), -EINVAL);
	fix_fini(&x);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_marks_exactly_written_pages_split),
		cmocka_unit_test(test_log_marks_exactly_written_pages_packed),
		cmocka_unit_test(test_log_follows_written_length),
		cmocka_unit_test(test_log_off_marks_nothing),
		cmocka_unit_test(test_log_never_written_past_its_end),
		cmocka_unit_test(test_log_replaced_is_released),
		cmocka_unit_test(test_log_marks_used_flags),
		cmocka_unit_test(test_log_marks_avail_event),
		cmocka_unit_test(test_log_marks_packed_device_event),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
