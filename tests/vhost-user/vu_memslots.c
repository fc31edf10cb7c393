/* SPDX-License-Identifier: MIT */
/*
 * Memory hotplug at scale (issue 20): GET_MAX_MEM_SLOTS says 509, as libvhost-user and rust-vmm
 * (virtio-mem needs them); ADD_MEM_REG fills every slot while a ring runs, a request whose
 * buffers lie in the regions added last is served through them, a region beyond the limit is
 * refused, and REM_MEM_REG of them all leaves no mapping behind.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc_count.h"
#include "vu_fixture.h"

#define SLOT_BYTES 4096u
#define ADDED (VQS_VU_MAX_MEM_SLOTS - 1) /* the arena holds one slot */
#define GPA(k) (0x40000000ull + (uint64_t)(k) * 2 * SLOT_BYTES)
#define UADDR(k) (0x7f0000000000ull + (uint64_t)(k) * 2 * SLOT_BYTES)

static int mem_reg(struct vqs_vu_frontend *f, uint32_t req, unsigned k, int fd)
{
	struct vqs_vu_mem_reg reg = { 0, { GPA(k), SLOT_BYTES, UADDR(k), (uint64_t)k * SLOT_BYTES } };
	return vqs_vu_frontend_request(f, req, &reg, sizeof(reg), fd >= 0 ? &fd : NULL, fd >= 0,
				       true, NULL, 0, NULL);
}

/* Echo 64 bytes from the arena into slot k's region; the device's copy read through our own
 * mapping of the slots' memfd. */
static void echo_into_slot(struct vqs_vu_frontend *f, const uint8_t *slots, unsigned k)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	uint64_t out = vqs_gmem_alloc(g, 64, 64);
	uint8_t *src = vqs_gmem_host(g, out, 64);
	for (unsigned i = 0; i < 64; i++)
		src[i] = (uint8_t)(k + i);
	/* the last 32 bytes of slot k-1's page are not mapped: stay inside slot k */
	struct vqs_drv_buf bufs[2] = { { out, 64 }, { GPA(k) + 100, 64 } };
	int token;
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, 0);
	assert_int_equal(vqs_drv_add(dq, bufs, 1, 1, &token, false), 0);
	uint64_t one = 1;
	if (vqs_drv_kick_prepare(dq))
		assert_int_equal(write(vqs_vu_frontend_kick_fd(f, 0), &one, 8), 8);
	uint32_t len = 0;
	assert_ptr_equal(vu_wait_used(f, 0, &len), &token);
	assert_int_equal(len, 64);
	assert_memory_equal(slots + (size_t)k * SLOT_BYTES + 100, src, 64);
}

static void test_509_memory_slots(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(&env, &o);
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 10, 64), 0);
	unsigned maps0 = vqs_test_count_maps(true);

	uint64_t max = 0;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_MAX_MEM_SLOTS, NULL, 0, NULL, 0,
						 false, &max, 8, NULL),
			 8);
	assert_int_equal(max, 509);
	/* One memfd behind every slot, each region its own page of it. */
	int fd = memfd_create("vu-slots", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)(ADDED + 2) * SLOT_BYTES), 0);
	uint8_t *slots = mmap(NULL, (size_t)(ADDED + 2) * SLOT_BYTES, PROT_READ | PROT_WRITE,
			      MAP_SHARED, fd, 0);
	assert_true(slots != MAP_FAILED);
	for (unsigned k = 1; k <= ADDED; k++) {
		assert_int_equal(mem_reg(f, VQS_VU_ADD_MEM_REG, k, fd), 0);
		if (k % 127 == 0) /* the ring keeps running while the table grows */
			assert_int_equal(vu_echo_roundtrip(f, 0, 2, 64), 0);
	}
	assert_int_equal(mem_reg(f, VQS_VU_ADD_MEM_REG, ADDED + 1, fd), -EPROTO);
	echo_into_slot(f, slots, ADDED);
	echo_into_slot(f, slots, 1);
	echo_into_slot(f, slots, 300);
	assert_int_equal(vqs_test_count_maps(true), maps0 + ADDED + 1);

	for (unsigned k = 1; k <= ADDED; k++)
		assert_int_equal(mem_reg(f, VQS_VU_REM_MEM_REG, k, -1), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 10, 64), 0);
	munmap(slots, (size_t)(ADDED + 2) * SLOT_BYTES);
	close(fd);
	assert_int_equal(vqs_test_count_maps(true), maps0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_509_memory_slots),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
