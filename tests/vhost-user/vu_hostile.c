/* SPDX-License-Identifier: MIT */
/*
 * A frontend that misbehaves on purpose (issue 6, "vhost-user messages"): one named case per
 * malformed or out-of-place message. Each case expects an error reply or the connection closed,
 * then a second, well-behaved frontend must still get service from the same backend, and the
 * process's fds and mappings must be back where they were.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc_count.h"
#include "vu_fixture.h"

static struct vu_env env;

enum stage {
	STAGE_CONNECTED,  /* no message sent yet */
	STAGE_NEGOTIATED, /* features, protocol features (REPLY_ACK), memory table */
	STAGE_NEGOTIATED_BARE, /* the same with REPLY_ACK the only protocol feature */
	STAGE_RUNNING,    /* full setup, ring 0 running */
};

static uint64_t disconnects;

static struct vqs_vu_frontend *frontend_at(enum stage s);

/* One good session first, so that thread-local allocator arenas and the like exist before any
 * case takes its baseline of mappings. */
static int group_setup(void **state)
{
	int r = vu_env_start(&env, 1, false);
	if (r < 0)
		return r;
	struct vqs_vu_frontend *f = frontend_at(STAGE_RUNNING);
	r = vu_echo_roundtrip(f, 0, 10, 64);
	vqs_vu_frontend_destroy(f);
	return r < 0 || !vu_env_wait_disconnects(&env, ++disconnects) ? -1 : 0;
}

static int group_teardown(void **state)
{
	vu_env_stop(&env);
	return 0;
}

static struct vqs_vu_frontend *frontend_at(enum stage s)
{
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(&env, &o);
	if (s == STAGE_NEGOTIATED_BARE)
		o.protocol_features = VQS_BIT(VQS_VU_PROTOCOL_F_REPLY_ACK);
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	if (s == STAGE_NEGOTIATED || s == STAGE_NEGOTIATED_BARE)
		assert_int_equal(vqs_vu_frontend_negotiate(f), 0);
	if (s == STAGE_RUNNING)
		assert_int_equal(vqs_vu_frontend_setup(f), 0);
	return f;
}

/* The backend answered with an error ack, or closed the connection. */
static void expect_refused(struct vqs_vu_frontend *f)
{
	struct vqs_vu_hdr h;
	uint64_t v = 0;
	int r = vqs_vu_frontend_recv_raw(f, &h, &v, sizeof(v), 3000);
	if (r == -ECONNRESET)
		return;
	assert_int_equal(r, 8);
	assert_true(h.flags & VQS_VU_FLAG_REPLY);
	assert_int_not_equal(v, 0);
}

/* After the bad frontend left: service for the next one, and nothing leaked. */
static void expect_still_serving(struct vqs_vu_frontend *bad, unsigned fds0, unsigned maps0)
{
	vqs_vu_frontend_destroy(bad);
	assert_true(vu_env_wait_disconnects(&env, ++disconnects));
	struct vqs_vu_frontend *good = frontend_at(STAGE_RUNNING);
	assert_int_equal(vu_echo_roundtrip(good, 0, 10, 64), 0);
	vqs_vu_frontend_destroy(good);
	assert_true(vu_env_wait_disconnects(&env, ++disconnects));
	assert_int_equal(vu_wait_fds(fds0), fds0);
	assert_int_equal(vqs_test_count_maps(true), maps0);
}

/* Send header + payload as given (payload_len may differ from hdr.size on purpose). */
static void send_msg(struct vqs_vu_frontend *f, uint32_t req, uint32_t flags, uint32_t size,
		     const void *payload, uint32_t payload_len, const int *fds, unsigned nfds)
{
	uint8_t buf[sizeof(struct vqs_vu_hdr) + 512];
	struct vqs_vu_hdr h = { req, VQS_VU_VERSION | flags, size };
	memcpy(buf, &h, sizeof(h));
	assert_true(payload_len <= 512);
	if (payload_len)
		memcpy(buf + sizeof(h), payload, payload_len);
	assert_int_equal(vqs_vu_frontend_send_raw(f, buf, sizeof(h) + payload_len, fds, nfds), 0);
}

#define NEED VQS_VU_FLAG_NEED_REPLY

/* One hostile case: build the frontend at `stage`, let `misbehave` send, expect refusal. */
#define HOSTILE_CASE(name, stage, ...)                                                          \
	static void name(void **state)                                                           \
	{                                                                                        \
		unsigned fds0 = vqs_test_count_fds(), maps0 = vqs_test_count_maps(true);                   \
		struct vqs_vu_frontend *f = frontend_at(stage);                                  \
		__VA_ARGS__;                                                                     \
		expect_refused(f);                                                               \
		expect_still_serving(f, fds0, maps0);                                            \
	}

static int memfd_of(size_t size)
{
	int fd = memfd_create("vu-hostile", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	return fd;
}

static void send_mem_table(struct vqs_vu_frontend *f, const struct vqs_vu_mem_region *r,
			   unsigned nregions, const int *fds, unsigned nfds)
{
	struct vqs_vu_memory m = { .nregions = nregions };
	memcpy(m.regions, r, nregions * sizeof(*r));
	send_msg(f, VQS_VU_SET_MEM_TABLE, NEED, 8 + nregions * 32, &m, 8 + nregions * 32, fds,
		 nfds);
}

static void send_state(struct vqs_vu_frontend *f, uint32_t req, uint32_t index, uint32_t num)
{
	struct vqs_vu_vring_state s = { index, num };
	send_msg(f, req, NEED, sizeof(s), &s, sizeof(s), NULL, 0);
}

/* ---- framing ---- */

HOSTILE_CASE(test_short_header, STAGE_CONNECTED, {
	static const uint8_t half[6] = { VQS_VU_GET_FEATURES, 0, 0, 0, 1, 0 };
	assert_int_equal(vqs_vu_frontend_send_raw(f, half, sizeof(half), NULL, 0), 0);
})

HOSTILE_CASE(test_short_payload, STAGE_CONNECTED, {
	uint64_t v = 0;
	send_msg(f, VQS_VU_SET_FEATURES, NEED, 8, &v, 4, NULL, 0);
})

HOSTILE_CASE(test_declared_size_larger_than_sent, STAGE_NEGOTIATED, {
	struct vqs_vu_vring_state s = { 0, 64 };
	send_msg(f, VQS_VU_SET_VRING_NUM, NEED, 200, &s, sizeof(s), NULL, 0);
})

HOSTILE_CASE(test_declared_size_above_any_payload, STAGE_CONNECTED,
	     { send_msg(f, VQS_VU_SET_FEATURES, NEED, 0x100000, NULL, 0, NULL, 0); })

HOSTILE_CASE(test_payload_size_wrong_for_request, STAGE_NEGOTIATED, {
	uint32_t idx = 0;
	send_msg(f, VQS_VU_SET_VRING_NUM, NEED, 4, &idx, 4, NULL, 0);
})

HOSTILE_CASE(test_bad_version_flags, STAGE_CONNECTED, {
	uint8_t buf[12] = { VQS_VU_GET_FEATURES, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0 };
	assert_int_equal(vqs_vu_frontend_send_raw(f, buf, sizeof(buf), NULL, 0), 0);
})

HOSTILE_CASE(test_truncated_control_data, STAGE_NEGOTIATED, {
	/* More fds than the backend's control buffer holds: MSG_CTRUNC. */
	int fds[VQS_VU_MAX_FDS + 4];
	for (unsigned i = 0; i < VQS_VU_MAX_FDS + 4; i++)
		fds[i] = eventfd(0, EFD_CLOEXEC);
	uint64_t idx = 0;
	send_msg(f, VQS_VU_SET_VRING_CALL, NEED, 8, &idx, 8, fds, VQS_VU_MAX_FDS + 4);
	for (unsigned i = 0; i < VQS_VU_MAX_FDS + 4; i++)
		close(fds[i]);
})

HOSTILE_CASE(test_extra_fds, STAGE_NEGOTIATED, {
	int fd = eventfd(0, EFD_CLOEXEC);
	struct vqs_vu_vring_state s = { 0, 64 };
	send_msg(f, VQS_VU_SET_VRING_NUM, NEED, sizeof(s), &s, sizeof(s), &fd, 1);
	close(fd);
})

HOSTILE_CASE(test_missing_fd, STAGE_NEGOTIATED, {
	uint64_t idx = 0; /* no NOFD flag, no fd */
	send_msg(f, VQS_VU_SET_VRING_KICK, NEED, 8, &idx, 8, NULL, 0);
})

HOSTILE_CASE(test_unknown_request_code_with_ack, STAGE_NEGOTIATED,
	     { send_msg(f, 999, NEED, 0, NULL, 0, NULL, 0); })

HOSTILE_CASE(test_unknown_request_code_without_ack, STAGE_NEGOTIATED,
	     { send_msg(f, VQS_VU_IOTLB_MSG, 0, 0, NULL, 0, NULL, 0); })

HOSTILE_CASE(test_reply_flag_from_frontend, STAGE_CONNECTED,
	     { send_msg(f, VQS_VU_GET_FEATURES, VQS_VU_FLAG_REPLY, 0, NULL, 0, NULL, 0); })

/* ---- memory table ---- */

HOSTILE_CASE(test_mem_table_more_regions_than_fds, STAGE_NEGOTIATED, {
	int fd = memfd_of(65536);
	struct vqs_vu_mem_region r[2] = { { 0x100000, 65536, 0x100000, 0 },
					  { 0x200000, 65536, 0x200000, 0 } };
	send_mem_table(f, r, 2, &fd, 1);
	close(fd);
})

HOSTILE_CASE(test_mem_table_over_region_limit, STAGE_NEGOTIATED, {
	struct vqs_vu_mem_region r[VQS_VU_MEM_TABLE_MAX + 1];
	int fds[VQS_VU_MAX_FDS];
	for (unsigned i = 0; i <= VQS_VU_MEM_TABLE_MAX; i++)
		r[i] = (struct vqs_vu_mem_region){ 0x100000ull * (i + 1), 4096, 0x100000ull * (i + 1),
						   0 };
	for (unsigned i = 0; i < VQS_VU_MAX_FDS; i++)
		fds[i] = memfd_of(4096);
	/* nregions says 9: declared size and nregions disagree with any valid shape. */
	struct {
		uint32_t n, pad;
		struct vqs_vu_mem_region r[VQS_VU_MEM_TABLE_MAX + 1];
	} m = { VQS_VU_MEM_TABLE_MAX + 1, 0, { { 0 } } };
	memcpy(m.r, r, sizeof(r));
	send_msg(f, VQS_VU_SET_MEM_TABLE, NEED, 8 + 8 * 32, &m, 8 + 8 * 32, fds, VQS_VU_MAX_FDS);
	for (unsigned i = 0; i < VQS_VU_MAX_FDS; i++)
		close(fds[i]);
})

HOSTILE_CASE(test_mem_region_size_zero, STAGE_NEGOTIATED, {
	int fd = memfd_of(65536);
	struct vqs_vu_mem_region r = { 0x100000, 0, 0x100000, 0 };
	send_mem_table(f, &r, 1, &fd, 1);
	close(fd);
})

HOSTILE_CASE(test_mem_regions_overlapping, STAGE_NEGOTIATED, {
	int fds[2] = { memfd_of(65536), memfd_of(65536) };
	struct vqs_vu_mem_region r[2] = { { 0x100000, 65536, 0x100000, 0 },
					  { 0x108000, 65536, 0x300000, 0 } };
	send_mem_table(f, r, 2, fds, 2);
	close(fds[0]);
	close(fds[1]);
})

HOSTILE_CASE(test_mem_region_gpa_overflowing, STAGE_NEGOTIATED, {
	int fd = memfd_of(65536);
	struct vqs_vu_mem_region r = { UINT64_MAX - 4095, 65536, 0x100000, 0 };
	send_mem_table(f, &r, 1, &fd, 1);
	close(fd);
})

HOSTILE_CASE(test_mem_region_offset_overflowing, STAGE_NEGOTIATED, {
	int fd = memfd_of(65536);
	struct vqs_vu_mem_region r = { 0x100000, 65536, 0x100000, UINT64_MAX - 4095 };
	send_mem_table(f, &r, 1, &fd, 1);
	close(fd);
})

HOSTILE_CASE(test_mem_region_larger_than_fd, STAGE_NEGOTIATED, {
	int fd = memfd_of(65536);
	struct vqs_vu_mem_region r = { 0x100000, 1u << 20, 0x100000, 0 };
	send_mem_table(f, &r, 1, &fd, 1);
	close(fd);
})

HOSTILE_CASE(test_add_mem_reg_without_fd, STAGE_NEGOTIATED, {
	struct vqs_vu_mem_reg reg = { 0, { 0x40000000, 4096, 0x40000000, 0 } };
	send_msg(f, VQS_VU_ADD_MEM_REG, NEED, sizeof(reg), &reg, sizeof(reg), NULL, 0);
})

/* ---- dirty log (the frontend's arena, 1 MiB at 1 MiB, needs a log of 64 bytes) ---- */

static void send_log_base(struct vqs_vu_frontend *f, uint64_t size, uint64_t off, size_t fd_size)
{
	int fd = memfd_of(fd_size);
	struct vqs_vu_log l = { size, off };
	send_msg(f, VQS_VU_SET_LOG_BASE, NEED, sizeof(l), &l, sizeof(l), &fd, 1);
	close(fd);
}

HOSTILE_CASE(test_log_base_not_negotiated, STAGE_NEGOTIATED_BARE,
	     { send_log_base(f, 4096, 0, 4096); })

HOSTILE_CASE(test_log_base_size_zero, STAGE_NEGOTIATED, { send_log_base(f, 0, 0, 4096); })

/* CVE-2020-10722: offset and size unchecked against the fd. */
HOSTILE_CASE(test_log_base_offset_beyond_fd, STAGE_NEGOTIATED,
	     { send_log_base(f, 64, 8192, 4096); })

HOSTILE_CASE(test_log_base_size_beyond_fd, STAGE_NEGOTIATED,
	     { send_log_base(f, 1u << 20, 0, 4096); })

HOSTILE_CASE(test_log_base_offset_overflowing, STAGE_NEGOTIATED,
	     { send_log_base(f, 64, UINT64_MAX - 8, 4096); })

/* A bitmap that cannot cover guest memory would have pages written unlogged (or past its end:
 * CVE-2019-14835). */
HOSTILE_CASE(test_log_base_too_small_for_memory, STAGE_NEGOTIATED,
	     { send_log_base(f, 32, 0, 4096); })

HOSTILE_CASE(test_log_base_without_fd, STAGE_NEGOTIATED, {
	struct vqs_vu_log l = { 64, 0 };
	send_msg(f, VQS_VU_SET_LOG_BASE, NEED, sizeof(l), &l, sizeof(l), NULL, 0);
})

HOSTILE_CASE(test_log_fd_not_negotiated, STAGE_NEGOTIATED_BARE, {
	int fd = eventfd(0, EFD_CLOEXEC);
	send_msg(f, VQS_VU_SET_LOG_FD, NEED, 0, NULL, 0, &fd, 1);
	close(fd);
})

/* Only an eventfd: a pipe's writer blocks once it is full, and the queues write to it. */
HOSTILE_CASE(test_log_fd_not_an_eventfd, STAGE_NEGOTIATED, {
	int p[2];
	assert_int_equal(pipe(p), 0);
	send_msg(f, VQS_VU_SET_LOG_FD, NEED, 0, NULL, 0, &p[1], 1);
	close(p[0]);
	close(p[1]);
})

HOSTILE_CASE(test_log_fd_payload_size_wrong, STAGE_NEGOTIATED, {
	int fd = eventfd(0, EFD_CLOEXEC);
	uint32_t v = 0;
	send_msg(f, VQS_VU_SET_LOG_FD, NEED, sizeof(v), &v, sizeof(v), &fd, 1);
	close(fd);
})

HOSTILE_CASE(test_reset_device_not_negotiated, STAGE_NEGOTIATED_BARE,
	     { send_msg(f, VQS_VU_RESET_DEVICE, NEED, 0, NULL, 0, NULL, 0); })

HOSTILE_CASE(test_reset_device_with_payload, STAGE_NEGOTIATED, {
	uint64_t v = 0;
	send_msg(f, VQS_VU_RESET_DEVICE, NEED, 8, &v, 8, NULL, 0);
})

/* ---- SEND_RARP: refused before the device hears of it ---- */

static void rarp_refused(enum stage stage, uint32_t size, const uint8_t *payload, bool with_fd)
{
	unsigned fds0 = vqs_test_count_fds(), maps0 = vqs_test_count_maps(true);
	unsigned rarps0 = atomic_load(&env.echo.rarps);
	struct vqs_vu_frontend *f = frontend_at(stage);
	int fd = with_fd ? eventfd(0, EFD_CLOEXEC) : -1;
	send_msg(f, VQS_VU_SEND_RARP, NEED, size, payload, size, &fd, with_fd);
	if (fd >= 0)
		close(fd);
	expect_refused(f);
	assert_int_equal(atomic_load(&env.echo.rarps), rarps0);
	expect_still_serving(f, fds0, maps0);
}

static const uint8_t RARP_MAC[8] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static void test_send_rarp_not_negotiated(void **state)
{
	rarp_refused(STAGE_NEGOTIATED_BARE, 8, RARP_MAC, false);
}

/* The MAC without the u64's padding. */
static void test_send_rarp_short_payload(void **state)
{
	rarp_refused(STAGE_NEGOTIATED, VQS_VU_MAC_LEN, RARP_MAC, false);
}

static void test_send_rarp_with_fd(void **state)
{
	rarp_refused(STAGE_NEGOTIATED, 8, RARP_MAC, true);
}

/* A group address names no station: nothing for a switch to learn. */
static void test_send_rarp_multicast_mac(void **state)
{
	const uint8_t mc[8] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	rarp_refused(STAGE_NEGOTIATED, 8, mc, false);
}

static void test_send_rarp_zero_mac(void **state)
{
	const uint8_t zero[8] = { 0 };
	rarp_refused(STAGE_NEGOTIATED, 8, zero, false);
}

/* ---- device state (the echo device's state is its config space) ---- */

static void send_state_fd(struct vqs_vu_frontend *f, uint32_t direction, uint32_t phase)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	struct vqs_vu_device_state ds = { direction, phase };
	send_msg(f, VQS_VU_SET_DEVICE_STATE_FD, NEED, sizeof(ds), &ds, sizeof(ds), &p[1], 1);
	close(p[0]);
	close(p[1]);
}

HOSTILE_CASE(test_device_state_fd_not_negotiated, STAGE_NEGOTIATED_BARE,
	     { send_state_fd(f, VQS_VU_STATE_SAVE, VQS_VU_STATE_PHASE_STOPPED); })

HOSTILE_CASE(test_device_state_fd_bad_direction, STAGE_NEGOTIATED,
	     { send_state_fd(f, 2, VQS_VU_STATE_PHASE_STOPPED); })

HOSTILE_CASE(test_device_state_fd_unknown_phase, STAGE_NEGOTIATED,
	     { send_state_fd(f, VQS_VU_STATE_LOAD, 1); })

/* The state of a running device does not hold still. */
HOSTILE_CASE(test_device_state_fd_while_running, STAGE_RUNNING,
	     { send_state_fd(f, VQS_VU_STATE_SAVE, VQS_VU_STATE_PHASE_STOPPED); })

HOSTILE_CASE(test_device_state_fd_without_fd, STAGE_NEGOTIATED, {
	struct vqs_vu_device_state ds = { VQS_VU_STATE_SAVE, VQS_VU_STATE_PHASE_STOPPED };
	send_msg(f, VQS_VU_SET_DEVICE_STATE_FD, NEED, sizeof(ds), &ds, sizeof(ds), NULL, 0);
})

HOSTILE_CASE(test_check_device_state_not_negotiated, STAGE_NEGOTIATED_BARE,
	     { send_msg(f, VQS_VU_CHECK_DEVICE_STATE, NEED, 0, NULL, 0, NULL, 0); })

HOSTILE_CASE(test_check_device_state_with_payload, STAGE_NEGOTIATED, {
	uint64_t v = 0;
	send_msg(f, VQS_VU_CHECK_DEVICE_STATE, NEED, 8, &v, 8, NULL, 0);
})

/* Only LOG_ALL may change while the queues run. */
HOSTILE_CASE(test_features_changed_while_running, STAGE_RUNNING, {
	uint64_t v = vqs_vu_frontend_features(f) & ~VQS_BIT(VQS_F_EVENT_IDX);
	send_msg(f, VQS_VU_SET_FEATURES, NEED, 8, &v, 8, NULL, 0);
})

/* A running ring takes a change of its log flag only, never new addresses. */
HOSTILE_CASE(test_vring_addr_moved_while_running, STAGE_RUNNING, {
	uint64_t desc, drv, dev;
	vqs_drv_vq_addrs(vqs_vu_frontend_vq(f, 0), &desc, &drv, &dev);
	uint8_t *host = vqs_gmem_host(vqs_vu_frontend_gmem(f), desc, 1);
	struct vqs_vu_vring_addr a = { 0, 0, (uint64_t)(uintptr_t)host + 0x10000,
				       (uint64_t)(uintptr_t)vqs_gmem_host(vqs_vu_frontend_gmem(f),
									   dev, 1),
				       (uint64_t)(uintptr_t)vqs_gmem_host(vqs_vu_frontend_gmem(f),
									   drv, 1),
				       0 };
	send_msg(f, VQS_VU_SET_VRING_ADDR, NEED, sizeof(a), &a, sizeof(a), NULL, 0);
})

/* ---- rings ---- */

HOSTILE_CASE(test_vring_index_out_of_range, STAGE_NEGOTIATED,
	     { send_state(f, VQS_VU_SET_VRING_NUM, 1, 64); })

HOSTILE_CASE(test_vring_index_high_bits, STAGE_NEGOTIATED,
	     { send_state(f, VQS_VU_SET_VRING_NUM, 0x80000000u, 64); })

HOSTILE_CASE(test_vring_fd_index_high_bits, STAGE_NEGOTIATED, {
	int fd = eventfd(0, EFD_CLOEXEC);
	uint64_t v = 1ull << 32; /* queue 0 with a stray high bit */
	send_msg(f, VQS_VU_SET_VRING_CALL, NEED, 8, &v, 8, &fd, 1);
	close(fd);
})

HOSTILE_CASE(test_vring_num_zero, STAGE_NEGOTIATED, { send_state(f, VQS_VU_SET_VRING_NUM, 0, 0); })

HOSTILE_CASE(test_vring_num_not_power_of_two, STAGE_NEGOTIATED,
	     { send_state(f, VQS_VU_SET_VRING_NUM, 0, 100); })

HOSTILE_CASE(test_vring_num_above_32768, STAGE_NEGOTIATED,
	     { send_state(f, VQS_VU_SET_VRING_NUM, 0, 65536); })

HOSTILE_CASE(test_vring_num_repeated_while_running, STAGE_RUNNING,
	     { send_state(f, VQS_VU_SET_VRING_NUM, 0, 32); })

HOSTILE_CASE(test_vring_base_out_of_range, STAGE_NEGOTIATED,
	     { send_state(f, VQS_VU_SET_VRING_BASE, 0, 0x10000); })

HOSTILE_CASE(test_vring_addresses_not_mapped, STAGE_NEGOTIATED, {
	send_state(f, VQS_VU_SET_VRING_NUM, 0, 64);
	struct vqs_vu_hdr h;
	uint64_t v;
	assert_int_equal(vqs_vu_frontend_recv_raw(f, &h, &v, 8, 3000), 8);
	assert_int_equal(v, 0);
	struct vqs_vu_vring_addr a = { 0, 0, 0xdead0000ull, 0xdead8000ull, 0xdead4000ull, 0 };
	send_msg(f, VQS_VU_SET_VRING_ADDR, NEED, sizeof(a), &a, sizeof(a), NULL, 0);
	assert_int_equal(vqs_vu_frontend_recv_raw(f, &h, &v, 8, 3000), 8);
	assert_int_equal(v, 0);
	int kick = vqs_vu_frontend_kick_fd(f, 0);
	uint64_t idx = 0;
	/* Protocol features negotiated: the ring starts on ENABLE and must refuse to. */
	send_msg(f, VQS_VU_SET_VRING_KICK, NEED, 8, &idx, 8, &kick, 1);
	assert_int_equal(vqs_vu_frontend_recv_raw(f, &h, &v, 8, 3000), 8);
	assert_int_equal(v, 0);
	send_state(f, VQS_VU_SET_VRING_ENABLE, 0, 1);
})

HOSTILE_CASE(test_vring_addr_log_flag_without_log_all, STAGE_NEGOTIATED, {
	struct vqs_vu_vring_addr a = { 0, VQS_VU_VRING_F_LOG, 0x100000, 0x101000, 0x100800, 0 };
	send_msg(f, VQS_VU_SET_VRING_ADDR, NEED, sizeof(a), &a, sizeof(a), NULL, 0);
})

/* ---- inflight region ---- */

static void send_inflight(struct vqs_vu_frontend *f, uint32_t req, uint64_t size, uint64_t off,
			  uint16_t nq, uint16_t qs, int fd)
{
	struct vqs_vu_inflight in = { size, off, nq, qs, { 0, 0 } };
	send_msg(f, req, NEED, sizeof(in), &in, sizeof(in), fd >= 0 ? &fd : NULL, fd >= 0);
}

HOSTILE_CASE(test_inflight_get_zero_queues, STAGE_NEGOTIATED,
	     { send_inflight(f, VQS_VU_GET_INFLIGHT_FD, 0, 0, 0, 64, -1); })

HOSTILE_CASE(test_inflight_get_too_many_queues, STAGE_NEGOTIATED,
	     { send_inflight(f, VQS_VU_GET_INFLIGHT_FD, 0, 0, 2, 64, -1); })

HOSTILE_CASE(test_inflight_get_queue_size_not_power_of_two, STAGE_NEGOTIATED,
	     { send_inflight(f, VQS_VU_GET_INFLIGHT_FD, 0, 0, 1, 100, -1); })

HOSTILE_CASE(test_inflight_set_size_mismatch, STAGE_NEGOTIATED, {
	int fd = memfd_of(1u << 20);
	send_inflight(f, VQS_VU_SET_INFLIGHT_FD, 4096 + 7, 0, 1, 64, fd);
	close(fd);
})

HOSTILE_CASE(test_inflight_set_beyond_fd, STAGE_NEGOTIATED, {
	size_t need = vqs_vq_inflight_size(64, false);
	int fd = memfd_of(need);
	send_inflight(f, VQS_VU_SET_INFLIGHT_FD, need, 4096, 1, 64, fd);
	close(fd);
})

HOSTILE_CASE(test_inflight_set_offset_overflowing, STAGE_NEGOTIATED, {
	size_t need = vqs_vq_inflight_size(64, false);
	int fd = memfd_of(need);
	send_inflight(f, VQS_VU_SET_INFLIGHT_FD, need, UINT64_MAX - 4095, 1, 64, fd);
	close(fd);
})

HOSTILE_CASE(test_inflight_set_without_fd, STAGE_NEGOTIATED, {
	size_t need = vqs_vq_inflight_size(64, false);
	send_inflight(f, VQS_VU_SET_INFLIGHT_FD, need, 0, 1, 64, -1);
})

/* Ring areas for ring 0 (64 entries) in the frontend's guest memory, as SET_VRING_ADDR wants. */
static struct vqs_vu_vring_addr ring_areas(struct vqs_vu_frontend *f)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	uint64_t d = vqs_gmem_alloc(g, 16 * 64, 16), av = vqs_gmem_alloc(g, 6 + 2 * 64, 2),
		 u = vqs_gmem_alloc(g, 6 + 8 * 64, 4);
	return (struct vqs_vu_vring_addr){ 0, 0, (uint64_t)(uintptr_t)vqs_gmem_host(g, d, 1),
					   (uint64_t)(uintptr_t)vqs_gmem_host(g, u, 1),
					   (uint64_t)(uintptr_t)vqs_gmem_host(g, av, 1), 0 };
}

/* A request that must be accepted (REPLY_ACK negotiated: 0 is the success ack). */
static void accepted(struct vqs_vu_frontend *f, uint32_t req, const void *p, uint32_t len,
		     const int *fds, unsigned nfds)
{
	assert_int_equal(vqs_vu_frontend_request(f, req, p, len, fds, nfds, true, NULL, 0, NULL), 0);
}

/* Fields right, contents garbage: the ring must refuse to start from such a region. */
HOSTILE_CASE(test_inflight_region_garbage_contents, STAGE_NEGOTIATED, {
	size_t need = vqs_vq_inflight_size(64, false);
	int fd = memfd_of(need);
	uint8_t *p = mmap(NULL, need, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	memset(p, 0xff, need);
	munmap(p, need);
	struct vqs_vu_inflight in = { need, 0, 1, 64, { 0, 0 } };
	accepted(f, VQS_VU_SET_INFLIGHT_FD, &in, sizeof(in), &fd, 1);
	close(fd);
	struct vqs_vu_vring_state num = { 0, 64 };
	struct vqs_vu_vring_addr a = ring_areas(f);
	uint64_t idx = 0;
	int kick = vqs_vu_frontend_kick_fd(f, 0), call = vqs_vu_frontend_call_fd(f, 0);
	accepted(f, VQS_VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	accepted(f, VQS_VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	accepted(f, VQS_VU_SET_VRING_CALL, &idx, 8, &call, 1);
	accepted(f, VQS_VU_SET_VRING_KICK, &idx, 8, &kick, 1);
	send_state(f, VQS_VU_SET_VRING_ENABLE, 0, 1);
})

HOSTILE_CASE(test_add_mem_reg_beyond_slot_limit, STAGE_NEGOTIATED, {
	/* The memory table holds one region already; fill every other slot, then one more. */
	for (unsigned i = 1; i <= VQS_VU_MAX_MEM_SLOTS; i++) {
		int fd = memfd_of(4096);
		struct vqs_vu_mem_reg reg = { 0, { 0x40000000ull + i * 0x10000ull, 4096,
						   0x7f0000000000ull + i * 0x10000ull, 0 } };
		if (i < VQS_VU_MAX_MEM_SLOTS)
			accepted(f, VQS_VU_ADD_MEM_REG, &reg, sizeof(reg), &fd, 1);
		else
			send_msg(f, VQS_VU_ADD_MEM_REG, NEED, sizeof(reg), &reg, sizeof(reg), &fd, 1);
		close(fd);
	}
})

/*
 * Out of order (issue 6): a KICK for a ring that has a size but no addresses yet. No real
 * frontend sends one (QEMU and DPDK virtio-user send KICK last for each ring), so it is refused:
 * an error ack, the ring stays stopped and the session goes on; the legal order then starts the
 * ring, and a size change while it runs is refused.
 */
HOSTILE_CASE(test_kick_before_address_refused_with_ack, STAGE_NEGOTIATED, {
	struct vqs_vu_backend_stats s0, s1;
	vqs_vu_backend_stats(env.backend, &s0);
	uint64_t idx = 0;
	int kick = vqs_vu_frontend_kick_fd(f, 0), call = vqs_vu_frontend_call_fd(f, 0);
	struct vqs_vu_vring_state num = { 0, 64 }, en = { 0, 1 };
	accepted(f, VQS_VU_SET_VRING_NUM, &num, sizeof(num), NULL, 0);
	accepted(f, VQS_VU_SET_VRING_ENABLE, &en, sizeof(en), NULL, 0);
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_VRING_KICK, &idx, 8, &kick, 1, true,
						 NULL, 0, NULL),
			 -EPROTO);
	vqs_vu_backend_stats(env.backend, &s1);
	assert_int_equal(s1.queue_starts, s0.queue_starts);
	assert_int_equal(s1.bad_messages, s0.bad_messages + 1);
	struct vqs_vu_vring_addr a = ring_areas(f);
	accepted(f, VQS_VU_SET_VRING_ADDR, &a, sizeof(a), NULL, 0);
	accepted(f, VQS_VU_SET_VRING_CALL, &idx, 8, &call, 1);
	vqs_vu_backend_stats(env.backend, &s1);
	assert_int_equal(s1.queue_starts, s0.queue_starts);
	accepted(f, VQS_VU_SET_VRING_KICK, &idx, 8, &kick, 1);
	vqs_vu_backend_stats(env.backend, &s1);
	assert_int_equal(s1.queue_starts, s0.queue_starts + 1);
	send_state(f, VQS_VU_SET_VRING_NUM, 0, 128);
})

/* The same KICK without NEED_REPLY: the frontend would not learn of the refusal, so the backend
 * closes the connection (and the kick fd it received: the fd count check below). */
HOSTILE_CASE(test_kick_before_address_without_ack_closes_connection, STAGE_NEGOTIATED, {
	struct vqs_vu_hdr h;
	uint64_t v, idx = 0;
	int kick = vqs_vu_frontend_kick_fd(f, 0);
	send_msg(f, VQS_VU_SET_VRING_KICK, 0, 8, &idx, 8, &kick, 1);
	assert_int_equal(vqs_vu_frontend_recv_raw(f, &h, &v, 8, 3000), -ECONNRESET);
})

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_header),
		cmocka_unit_test(test_short_payload),
		cmocka_unit_test(test_declared_size_larger_than_sent),
		cmocka_unit_test(test_declared_size_above_any_payload),
		cmocka_unit_test(test_payload_size_wrong_for_request),
		cmocka_unit_test(test_bad_version_flags),
		cmocka_unit_test(test_truncated_control_data),
		cmocka_unit_test(test_extra_fds),
		cmocka_unit_test(test_missing_fd),
		cmocka_unit_test(test_unknown_request_code_with_ack),
		cmocka_unit_test(test_unknown_request_code_without_ack),
		cmocka_unit_test(test_reply_flag_from_frontend),
		cmocka_unit_test(test_mem_table_more_regions_than_fds),
		cmocka_unit_test(test_mem_table_over_region_limit),
		cmocka_unit_test(test_mem_region_size_zero),
		cmocka_unit_test(test_mem_regions_overlapping),
		cmocka_unit_test(test_mem_region_gpa_overflowing),
		cmocka_unit_test(test_mem_region_offset_overflowing),
		cmocka_unit_test(test_mem_region_larger_than_fd),
		cmocka_unit_test(test_add_mem_reg_without_fd),
		cmocka_unit_test(test_log_base_not_negotiated),
		cmocka_unit_test(test_log_base_size_zero),
		cmocka_unit_test(test_log_base_offset_beyond_fd),
		cmocka_unit_test(test_log_base_size_beyond_fd),
		cmocka_unit_test(test_log_base_offset_overflowing),
		cmocka_unit_test(test_log_base_too_small_for_memory),
		cmocka_unit_test(test_log_base_without_fd),
		cmocka_unit_test(test_log_fd_not_negotiated),
		cmocka_unit_test(test_log_fd_not_an_eventfd),
		cmocka_unit_test(test_log_fd_payload_size_wrong),
		cmocka_unit_test(test_reset_device_not_negotiated),
		cmocka_unit_test(test_reset_device_with_payload),
		cmocka_unit_test(test_send_rarp_not_negotiated),
		cmocka_unit_test(test_send_rarp_short_payload),
		cmocka_unit_test(test_send_rarp_with_fd),
		cmocka_unit_test(test_send_rarp_multicast_mac),
		cmocka_unit_test(test_send_rarp_zero_mac),
		cmocka_unit_test(test_device_state_fd_not_negotiated),
		cmocka_unit_test(test_device_state_fd_bad_direction),
		cmocka_unit_test(test_device_state_fd_unknown_phase),
		cmocka_unit_test(test_device_state_fd_while_running),
		cmocka_unit_test(test_device_state_fd_without_fd),
		cmocka_unit_test(test_check_device_state_not_negotiated),
		cmocka_unit_test(test_check_device_state_with_payload),
		cmocka_unit_test(test_features_changed_while_running),
		cmocka_unit_test(test_vring_addr_moved_while_running),
		cmocka_unit_test(test_vring_index_out_of_range),
		cmocka_unit_test(test_vring_index_high_bits),
		cmocka_unit_test(test_vring_fd_index_high_bits),
		cmocka_unit_test(test_vring_num_zero),
		cmocka_unit_test(test_vring_num_not_power_of_two),
		cmocka_unit_test(test_vring_num_above_32768),
		cmocka_unit_test(test_vring_num_repeated_while_running),
		cmocka_unit_test(test_vring_base_out_of_range),
		cmocka_unit_test(test_vring_addresses_not_mapped),
		cmocka_unit_test(test_vring_addr_log_flag_without_log_all),
		cmocka_unit_test(test_inflight_get_zero_queues),
		cmocka_unit_test(test_inflight_get_too_many_queues),
		cmocka_unit_test(test_inflight_get_queue_size_not_power_of_two),
		cmocka_unit_test(test_inflight_set_size_mismatch),
		cmocka_unit_test(test_inflight_set_beyond_fd),
		cmocka_unit_test(test_inflight_set_offset_overflowing),
		cmocka_unit_test(test_inflight_set_without_fd),
		cmocka_unit_test(test_inflight_region_garbage_contents),
		cmocka_unit_test(test_add_mem_reg_beyond_slot_limit),
		cmocka_unit_test(test_kick_before_address_refused_with_ack),
		cmocka_unit_test(test_kick_before_address_without_ack_closes_connection),
	};
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
