/* SPDX-License-Identifier: MIT */
/*
 * vhost-user end to end over real sockets: our frontend drives our backend serving an echo
 * device on the scheduler. Handshake and data (split rings), server and client modes,
 * multiqueue, config space, stopping and restarting a ring, memory table changes, and repeated
 * frontend disconnects with fds and threads back to where they were.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <poll.h>
#include <stdatomic.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "proc_count.h"
#include "scale.h"
#include "vu_fixture.h"

static struct vqs_vu_frontend *connect_frontend(struct vu_env *env, uint16_t nq)
{
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(env, &o);
	o.num_queues = nq;
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	return f;
}

/* ---- device ops: queue_demand ---- */

static atomic_uint demand_calls;

static unsigned count_demand(struct vqs_queue *q, void *opaque)
{
	atomic_fetch_add(&demand_calls, 1);
	return UINT_MAX;
}

static unsigned trap_demand(struct vqs_queue *q, void *opaque)
{
	fail_msg("demand read beyond the device ops' size");
	return 0;
}

static vqs_demand_fn counting_demand(void *opaque, unsigned qidx) { return count_demand; }
static vqs_demand_fn trapping_demand(void *opaque, unsigned qidx) { return trap_demand; }

static void with_queue_demand(struct vqs_vu_device_ops *ops)
{
	ops->queue_demand = counting_demand;
}

static void ops_from_before_queue_demand(struct vqs_vu_device_ops *ops)
{
	ops->size = (uint32_t)offsetof(struct vqs_vu_device_ops, queue_demand);
	ops->queue_demand = trapping_demand;
}

static void echo_with_ops(void (*tweak)(struct vqs_vu_device_ops *ops))
{
	struct vu_env env;
	assert_int_equal(vu_env_start_with(&env, 1, false, tweak), 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 1);
	assert_int_equal(vu_echo_roundtrip(f, 0, 100, 64), 0);
	assert_int_equal(vqs_vu_frontend_disconnect(f, true), 0);
	vqs_vu_frontend_destroy(f);
	assert_true(vu_env_wait_disconnects(&env, 1));
	vu_env_stop(&env);
}

static void test_queue_demand_is_asked_before_pops(void **state)
{
	atomic_store(&demand_calls, 0);
	echo_with_ops(with_queue_demand);
	assert_true(atomic_load(&demand_calls) > 0);
}

static void test_device_ops_from_before_queue_demand_still_serve(void **state)
{
	echo_with_ops(ops_from_before_queue_demand);
}

/* ---- device ops: handlers_nonblocking ---- */

/* A handler that holds its call until the test lets it go, to show whether a memory table
 * replacement waits for it; at most GATE_MS, under the frontend's reply timeout (2 s), and far
 * above what a replacement that does not wait takes (milliseconds). */
#define GATE_MS 500
static struct {
	_Atomic bool entered, go, done;
} gate;

static unsigned gate_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			     void *opaque)
{
	atomic_store(&gate.entered, true);
	for (unsigned ms = 0; ms < GATE_MS && !atomic_load(&gate.go); ms++)
		usleep(1000);
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	atomic_store(&gate.done, true);
	return n;
}

static vqs_handler_fn gate_queue_handler(void *opaque, unsigned qidx, void **handler_opaque)
{
	*handler_opaque = NULL;
	return gate_handler;
}

static void gated(struct vqs_vu_device_ops *ops)
{
	ops->queue_handler = gate_queue_handler;
}

static void gated_nonblocking(struct vqs_vu_device_ops *ops)
{
	gated(ops);
	ops->handlers_nonblocking = true;
}

/* SET_MEM_TABLE (acked) while a handler call is in progress: its ack waits for the call only
 * when the device declared its handlers nonblocking (they then run inside the read-side
 * section whose grace period the replacement waits for). */
static void mem_table_during_handler(bool nonblocking)
{
	memset(&gate, 0, sizeof(gate));
	struct vu_env env;
	assert_int_equal(vu_env_start_with(&env, 1, false, nonblocking ? gated_nonblocking : gated),
			 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 1);
	assert_int_equal(vu_echo_submit(f, 0, 1, 64), 0);
	for (unsigned ms = 0; ms < 4000 && !atomic_load(&gate.entered); ms++)
		usleep(1000);
	assert_true(atomic_load(&gate.entered));
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	struct vqs_vu_memory mem = { .nregions = 1 };
	mem.regions[0] = (struct vqs_vu_mem_region){
		vqs_gmem_base(g), vqs_gmem_size(g),
		(uint64_t)(uintptr_t)vqs_gmem_host(g, vqs_gmem_base(g), 1), 0 };
	int fd = vqs_gmem_fd(g);
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_MEM_TABLE, &mem, 8 + 32, &fd, 1,
						 true, NULL, 0, NULL),
			 0);
	bool done_at_ack = atomic_load(&gate.done);
	atomic_store(&gate.go, true);
	assert_int_equal(done_at_ack, nonblocking);
	uint32_t len = 1;
	assert_non_null(vu_wait_used(f, 0, &len));
	assert_int_equal(len, 0);
	assert_int_equal(vqs_vu_frontend_disconnect(f, true), 0);
	vqs_vu_frontend_destroy(f);
	assert_true(vu_env_wait_disconnects(&env, 1));
	vu_env_stop(&env);
}

static void test_mem_table_ack_does_not_wait_for_a_handler(void **state)
{
	mem_table_during_handler(false);
}

static void test_nonblocking_handlers_run_inside_the_section(void **state)
{
	mem_table_during_handler(true);
}

static void test_server_mode_handshake_and_echo(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 1);
	uint64_t want = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
			VQS_BIT(VQS_VU_F_PROTOCOL_FEATURES);
	assert_int_equal(vqs_vu_frontend_features(f), want);
	assert_int_equal(vqs_vu_backend_features(env.backend), want);
	assert_true(vqs_vu_frontend_protocol_features(f) &
		    VQS_BIT(VQS_VU_PROTOCOL_F_REPLY_ACK));
	uint64_t status = 0;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_STATUS, NULL, 0, NULL, 0, false,
						 &status, 8, NULL),
			 8);
	assert_int_equal(status, 0xf); /* ACKNOWLEDGE | DRIVER | DRIVER_OK | FEATURES_OK */
	assert_int_equal(vu_echo_roundtrip(f, 0, 200, 64), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 10, 3000), 0);
	assert_int_equal(atomic_load(&env.echo.completed), 210);
	assert_int_equal(vqs_vu_frontend_disconnect(f, true), 0);
	vqs_vu_frontend_destroy(f);
	assert_true(vu_env_wait_disconnects(&env, 1));
	vu_env_stop(&env);
}

static void test_packed_ring_handshake_and_echo(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(&env, &o);
	o.features |= VQS_BIT(VQS_F_RING_PACKED);
	o.queue_size = 100; /* packed rings need no power of two */
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_true(vqs_vu_backend_features(env.backend) & VQS_BIT(VQS_F_RING_PACKED));
	assert_int_equal(vu_echo_roundtrip(f, 0, 230, 64), 0);
	/* 230 chains of 2 descriptors in a ring of 100: next slot 60, the wrap counter flipped 4
	 * times (still set); everything completed, so used stands there too. vhost-user.rst: avail
	 * in bits 0-15, used in bits 16-31, each with its wrap counter in the top bit. */
	struct vqs_vu_vring_state st = { 0, 0 }, rep;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_VRING_BASE, &st, sizeof(st), NULL, 0,
						 false, &rep, sizeof(rep), NULL),
			 sizeof(rep));
	assert_int_equal(rep.num, (60u | (1u << 15)) | (60u | (1u << 15)) << 16);
	/* The driver sees the same position in its ring. */
	struct vqs_drv_pos pos;
	assert_int_equal(vqs_drv_position(vqs_vu_frontend_vq(f, 0), &pos), 0);
	assert_int_equal(pos.avail_idx, 60);
	assert_true(pos.avail_wrap);
	assert_int_equal(pos.used_idx, 60);
	assert_true(pos.used_wrap);
	/* A clean stop, then the same rings on a new connection resume where they stopped. */
	assert_int_equal(vqs_vu_frontend_disconnect(f, true), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 120, 64), 0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

/*
 * SET_VRING_BASE for a packed ring with the avail half only (bits 16-31 zero), as DPDK
 * virtio-user and older QEMU send it: used resumes where avail does. Read as used slot 0 with
 * wrap counter 0, the device would write its used descriptors where the driver never looks.
 */
static void test_packed_vring_base_avail_half_only_resumes_used_there(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(&env, &o);
	o.features |= VQS_BIT(VQS_F_RING_PACKED);
	o.queue_size = 100;
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 80, 64), 0); /* next slot 60, wrap counter 0 */
	struct vqs_vu_vring_state st = { 0, 0 }, rep;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_VRING_BASE, &st, sizeof(st), NULL, 0,
						 false, &rep, sizeof(rep), NULL),
			 sizeof(rep));
	assert_int_equal(rep.num, 60u | 60u << 16);
	struct vqs_vu_vring_state base = { 0, 60 };
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_VRING_BASE, &base, sizeof(base),
						 NULL, 0, true, NULL, 0, NULL),
			 0);
	assert_int_equal(vu_kick_restart(f, 0), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 120, 64), 0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

static void test_client_mode_backend_connects_with_retry(void **state)
{
	struct vu_env env;
	/* The backend starts first and retries until the frontend listens. */
	assert_int_equal(vu_env_start(&env, 1, true), 0);
	usleep(30000);
	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vu_env_frontend_opts(&env, &o);
	o.server = true;
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	for (int cycle = 0; cycle < 3; cycle++) {
		assert_int_equal(vqs_vu_frontend_connect(f), 0);
		assert_int_equal(vqs_vu_frontend_setup(f), 0);
		assert_int_equal(vu_echo_roundtrip(f, 0, 50, 128), 0);
		/* The backend reconnects after the frontend drops it. */
		assert_int_equal(vqs_vu_frontend_disconnect(f, cycle & 1), 0);
		assert_true(vu_env_wait_disconnects(&env, (uint64_t)cycle + 1));
	}
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

static void test_multiqueue_each_queue_echoes(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 4, false), 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 4);
	assert_true(vqs_vu_frontend_protocol_features(f) & VQS_BIT(VQS_VU_PROTOCOL_F_MQ));
	uint64_t nq = 0;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_QUEUE_NUM, NULL, 0, NULL, 0, false,
						 &nq, sizeof(nq), NULL),
			 8);
	assert_int_equal(nq, 4);
	for (unsigned q = 0; q < 4; q++)
		assert_int_equal(vu_echo_roundtrip(f, q, 20, 100), 0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

static void test_config_space_get_and_set(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 1);
	struct vqs_vu_config c = { .offset = 4, .size = 8 }, rep;
	uint8_t newval[4] = { 0xa1, 0xa2, 0xa3, 0xa4 };
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_CONFIG, &c, 12 + 8, NULL, 0, false,
						 &rep, sizeof(rep), NULL),
			 12 + 8);
	assert_int_equal(rep.offset, 4);
	assert_int_equal(rep.size, 8);
	for (unsigned i = 0; i < 8; i++)
		assert_int_equal(rep.region[i], 4 + i);
	c = (struct vqs_vu_config){ .offset = 12, .size = 4 };
	memcpy(c.region, newval, 4);
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_CONFIG, &c, 12 + 4, NULL, 0, true,
						 NULL, 0, NULL),
			 0);
	assert_memory_equal(env.echo.config + 12, newval, 4);
	/* Past the end of config space: refused with an error ack, the session goes on. */
	c = (struct vqs_vu_config){ .offset = 14, .size = 4 };
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_CONFIG, &c, 12 + 4, NULL, 0, true,
						 NULL, 0, NULL),
			 -EPROTO);
	assert_int_equal(vu_echo_roundtrip(f, 0, 5, 32), 0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

static void test_get_vring_base_stops_ring_and_kick_restarts(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 1);
	assert_int_equal(vu_echo_roundtrip(f, 0, 37, 16), 0);
	struct vqs_vu_vring_state st = { 0, 0 }, rep;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_VRING_BASE, &st, sizeof(st), NULL, 0,
						 false, &rep, sizeof(rep), NULL),
			 sizeof(rep));
	assert_int_equal(rep.index, 0);
	assert_int_equal(rep.num, 37);
	struct vqs_vu_backend_stats s;
	vqs_vu_backend_stats(env.backend, &s);
	assert_int_equal(s.queue_starts, 1);
	assert_int_equal(s.queue_stops, 1);
	/* A new kick starts the ring again where it stopped. */
	assert_int_equal(vu_kick_restart(f, 0), 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 5, 16), 0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

/* A guest that breaks its ring gets the ring's error eventfd signalled (SET_VRING_ERR), and the
 * backend keeps serving its other queues. */
static void test_broken_ring_signals_vring_err_fd(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 2, false), 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 2);
	int err = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(err >= 0);
	uint64_t idx = 0;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_VRING_ERR, &idx, 8, &err, 1, true,
						 NULL, 0, NULL),
			 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 3, 16), 0);

	/* Publish a head index outside the ring on queue 0, then kick. */
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, 0);
	uint64_t desc, avail, used;
	vqs_drv_vq_addrs(dq, &desc, &avail, &used);
	struct vqs_vring_avail *a =
		vqs_gmem_host(vqs_vu_frontend_gmem(f), avail, vqs_vring_avail_size(64));
	a->ring[a->idx % 64] = 64 + 1;
	atomic_thread_fence(memory_order_release);
	a->idx++;
	uint64_t one = 1;
	assert_int_equal(write(vqs_vu_frontend_kick_fd(f, 0), &one, 8), 8);

	struct pollfd pfd = { .fd = err, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	uint64_t n = 0;
	assert_int_equal(read(err, &n, 8), 8);
	assert_true(n >= 1);
	assert_int_equal(vu_echo_roundtrip(f, 1, 20, 16), 0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
	close(err);
}

/* KICK with the NOFD flag: no kick eventfd, so the backend must poll the ring. */
static void test_kick_nofd_ring_is_polled(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 1);
	uint64_t nofd = VQS_VU_VRING_NOFD_MASK | 0;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_VRING_KICK, &nofd, 8, NULL, 0, true,
						 NULL, 0, NULL),
			 0);
	/* The kicks vu_echo_roundtrip still writes go to an eventfd nobody watches now. */
	assert_int_equal(vu_echo_roundtrip(f, 0, 50, 64), 0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

static void test_mem_table_replaced_and_slots_added_while_running(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend *f = connect_frontend(&env, 1);
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	unsigned maps0 = vqs_test_count_maps(true);
	/* Same memory again, as a VMM does after hotplug: rings keep running. */
	struct vqs_vu_memory mem = { .nregions = 1 };
	mem.regions[0] = (struct vqs_vu_mem_region){
		vqs_gmem_base(g), vqs_gmem_size(g),
		(uint64_t)(uintptr_t)vqs_gmem_host(g, vqs_gmem_base(g), 1), 0 };
	int fd = vqs_gmem_fd(g);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_SET_MEM_TABLE, &mem, 8 + 32, &fd,
							 1, true, NULL, 0, NULL),
				 0);
		assert_int_equal(vu_echo_roundtrip(f, 0, 10, 64), 0);
	}
	/* One more slot, then removed again. */
	int extra = memfd_create("vu-extra", MFD_CLOEXEC);
	assert_true(extra >= 0);
	assert_int_equal(ftruncate(extra, 65536), 0);
	uint64_t max = 0;
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_GET_MAX_MEM_SLOTS, NULL, 0, NULL, 0,
						 false, &max, 8, NULL),
			 8);
	assert_int_equal(max, VQS_VU_MAX_MEM_SLOTS);
	struct vqs_vu_mem_reg reg = { 0, { 0x40000000, 65536, 0x7f0000000000ull, 0 } };
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_ADD_MEM_REG, &reg, sizeof(reg), &extra, 1,
						 true, NULL, 0, NULL),
			 0);
	assert_int_equal(vu_echo_roundtrip(f, 0, 10, 64), 0);
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_REM_MEM_REG, &reg, sizeof(reg), NULL, 0,
						 true, NULL, 0, NULL),
			 0);
	/* Removing it twice is refused. */
	assert_int_equal(vqs_vu_frontend_request(f, VQS_VU_REM_MEM_REG, &reg, sizeof(reg), NULL, 0,
						 true, NULL, 0, NULL),
			 -EPROTO);
	close(extra);
	assert_int_equal(vu_echo_roundtrip(f, 0, 10, 64), 0);
	assert_int_equal(vqs_test_count_maps(true), maps0);
	vqs_vu_frontend_destroy(f);
	vu_env_stop(&env);
}

/* Issue 6 "Faults": the memory table replaced, and kick/call fds replaced (by other fds for the
 * same eventfds) and the old ones closed, while a thread keeps requests flowing. */
static void test_mem_table_and_ring_fds_replaced_under_traffic(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 1, false), 0);
	struct vqs_vu_frontend_opts o;
	vu_env_frontend_opts(&env, &o);
	o.mem_size = 8u << 20;
	struct vu_traffic t = { .count = 100, .len = 512 };
	assert_int_equal(vqs_vu_frontend_create(&t.f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(t.f), 0);
	assert_int_equal(vqs_vu_frontend_setup(t.f), 0);
	struct vqs_gmem *g = vqs_vu_frontend_gmem(t.f);
	struct vqs_vu_memory mem = { .nregions = 1 };
	mem.regions[0] = (struct vqs_vu_mem_region){
		vqs_gmem_base(g), vqs_gmem_size(g),
		(uint64_t)(uintptr_t)vqs_gmem_host(g, vqs_gmem_base(g), 1), 0 };
	int memfd = vqs_gmem_fd(g);
	assert_int_equal(vu_traffic_start(&t), 0);
	for (unsigned i = 0; i < (unsigned)vqs_test_scaled(60); i++) {
		uint64_t idx = 0;
		int fd;
		switch (i % 3) {
		case 0:
			assert_int_equal(vqs_vu_frontend_request(t.f, VQS_VU_SET_MEM_TABLE, &mem,
								 8 + 32, &memfd, 1, true, NULL, 0,
								 NULL),
					 0);
			break;
		case 1:
			fd = dup(vqs_vu_frontend_kick_fd(t.f, 0));
			assert_int_equal(vqs_vu_frontend_request(t.f, VQS_VU_SET_VRING_KICK, &idx, 8,
								 &fd, 1, true, NULL, 0, NULL),
					 0);
			close(fd);
			break;
		default:
			fd = dup(vqs_vu_frontend_call_fd(t.f, 0));
			assert_int_equal(vqs_vu_frontend_request(t.f, VQS_VU_SET_VRING_CALL, &idx, 8,
								 &fd, 1, true, NULL, 0, NULL),
					 0);
			close(fd);
			break;
		}
		usleep(2000);
	}
	assert_int_equal(vu_traffic_stop(&t), 0);
	assert_true(t.rounds > 0);
	vqs_vu_frontend_destroy(t.f);
	vu_env_stop(&env);
}

/* >= 20 frontends in a row: a third leave cleanly, a third drop the socket with requests in
 * flight, a third in the middle of a message. */
static void test_frontend_disconnect_cycles_leave_no_fds_or_threads(void **state)
{
	struct vu_env env;
	assert_int_equal(vu_env_start(&env, 2, false), 0);
	unsigned fds0 = vqs_test_count_fds(), threads0 = vqs_test_count_threads();
	unsigned maps0 = vqs_test_count_maps(true);
	unsigned cycles = (unsigned)vqs_test_scaled(24);
	if (cycles < 20)
		cycles = 20;
	for (unsigned c = 0; c < cycles; c++) {
		struct vqs_vu_frontend *f = connect_frontend(&env, 2);
		assert_int_equal(vu_echo_roundtrip(f, c & 1, 20, 256), 0);
		if (c % 3 == 1) {
			/* Mid-stream: requests in flight, then gone. */
			assert_int_equal(vu_echo_submit(f, c & 1, 16, 256), 0);
		} else if (c % 3 == 2) {
			/* Mid-message: half a header, then gone. */
			static const uint8_t half[6] = { VQS_VU_SET_VRING_NUM, 0, 0, 0, 1, 0 };
			assert_int_equal(vqs_vu_frontend_send_raw(f, half, sizeof(half), NULL, 0), 0);
		}
		assert_int_equal(vqs_vu_frontend_disconnect(f, c % 3 == 0), 0);
		vqs_vu_frontend_destroy(f);
		assert_true(vu_env_wait_disconnects(&env, c + 1));
	}
	assert_int_equal(vu_wait_fds(fds0), fds0);
	assert_int_equal(vqs_test_count_threads(), threads0);
	assert_int_equal(vqs_test_count_maps(true), maps0);
	vu_env_stop(&env);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_server_mode_handshake_and_echo),
		cmocka_unit_test(test_queue_demand_is_asked_before_pops),
		cmocka_unit_test(test_device_ops_from_before_queue_demand_still_serve),
		cmocka_unit_test(test_packed_ring_handshake_and_echo),
		cmocka_unit_test(test_packed_vring_base_avail_half_only_resumes_used_there),
		cmocka_unit_test(test_client_mode_backend_connects_with_retry),
		cmocka_unit_test(test_multiqueue_each_queue_echoes),
		cmocka_unit_test(test_config_space_get_and_set),
		cmocka_unit_test(test_get_vring_base_stops_ring_and_kick_restarts),
		cmocka_unit_test(test_broken_ring_signals_vring_err_fd),
		cmocka_unit_test(test_kick_nofd_ring_is_polled),
		cmocka_unit_test(test_mem_table_replaced_and_slots_added_while_running),
		cmocka_unit_test(test_mem_table_ack_does_not_wait_for_a_handler),
		cmocka_unit_test(test_nonblocking_handlers_run_inside_the_section),
		cmocka_unit_test(test_mem_table_and_ring_fds_replaced_under_traffic),
		cmocka_unit_test(test_frontend_disconnect_cycles_leave_no_fds_or_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
