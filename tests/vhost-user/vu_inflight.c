/* SPDX-License-Identifier: MIT */
/*
 * Inflight tracking across backend crashes (issue 4; packed rings, issue 5): the echo backend
 * runs in a child process, is killed with SIGKILL while requests are in flight, and is restarted;
 * our frontend reconnects, hands the same inflight region back, and keeps its ring (packed: its
 * position goes back in SET_VRING_BASE). Every request must complete exactly once, with its own
 * data.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "scale.h"
#include "vu_fixture.h"

#define NSLOT 32
#define REQ_LEN 64

struct slot {
	uint64_t out, in;
	uint32_t id;
	bool busy;
};

static pid_t spawn_backend(const char *path)
{
	pid_t pid = fork();
	if (pid == 0) {
		/* A test that fails (or is timed out) must not leave its backend behind. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(VU_CHILD, "vu_backend_child", path, "200", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void kill_backend(pid_t pid)
{
	int status;
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
}

static void reconnect(struct vqs_vu_frontend *f)
{
	vqs_vu_frontend_disconnect(f, false);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	/* The new backend learns of pending work by a kick, as after any start. */
	uint64_t one = 1;
	assert_int_equal(write(vqs_vu_frontend_kick_fd(f, 0), &one, 8), 8);
}

/* Split rings of 64, or packed rings of 100 (packed sizes need no power of two). */
static void run_kills(unsigned total, unsigned kills, bool packed)
{
	char path[108];
	snprintf(path, sizeof(path), "/tmp/vqs-vu-inflight-%d.sock", (int)getpid());
	unlink(path);
	pid_t child = spawn_backend(path);
	assert_true(child > 0);

	struct vqs_vu_frontend_opts o;
	struct vqs_vu_frontend *f;
	vqs_vu_frontend_opts_init(&o);
	o.path = path;
	o.queue_size = packed ? 100 : 64;
	o.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
		     (packed ? VQS_BIT(VQS_F_RING_PACKED) : 0);
	o.mem_size = 1u << 20;
	o.timeout_ms = 10000;
	assert_int_equal(vqs_vu_frontend_create(&f, &o), 0);
	assert_int_equal(vqs_vu_frontend_connect(f), 0);
	assert_int_equal(vqs_vu_frontend_setup(f), 0);
	assert_true(vqs_vu_frontend_protocol_features(f) &
		    VQS_BIT(VQS_VU_PROTOCOL_F_INFLIGHT_SHMFD));
	assert_int_equal(!!(vqs_vu_frontend_features(f) & VQS_BIT(VQS_F_RING_PACKED)), packed);

	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(f, 0);
	struct slot slots[NSLOT];
	for (unsigned s = 0; s < NSLOT; s++) {
		slots[s] = (struct slot){ vqs_gmem_alloc(g, REQ_LEN, 64),
					  vqs_gmem_alloc(g, REQ_LEN, 64), 0, false };
		assert_true(slots[s].out && slots[s].in);
	}
	uint8_t *done = calloc(total, 1);
	assert_non_null(done);
	unsigned submitted = 0, completed = 0, dups = 0, wrong = 0, next_kill = total / (kills + 1);
	uint64_t deadline = vqs_now_ns() + 120ull * 1000000000u;

	while (completed < total && vqs_now_ns() < deadline) {
		for (unsigned s = 0; s < NSLOT && submitted < total; s++) {
			if (slots[s].busy)
				continue;
			struct slot *sl = &slots[s];
			sl->id = submitted;
			uint8_t *po = vqs_gmem_host(g, sl->out, REQ_LEN);
			memset(po, (int)(sl->id & 0xff), REQ_LEN);
			memcpy(po, &sl->id, sizeof(sl->id));
			memset(vqs_gmem_host(g, sl->in, REQ_LEN), 0, REQ_LEN);
			struct vqs_drv_buf bufs[2] = { { sl->out, REQ_LEN }, { sl->in, REQ_LEN } };
			if (vqs_drv_add(dq, bufs, 1, 1, sl, false) < 0)
				break;
			sl->busy = true;
			submitted++;
		}
		if (vqs_drv_kick_prepare(dq)) {
			uint64_t one = 1;
			assert_int_equal(write(vqs_vu_frontend_kick_fd(f, 0), &one, 8), 8);
		}
		uint32_t len;
		struct slot *sl;
		bool any = false;
		while ((sl = vqs_drv_get_used(dq, &len))) {
			any = true;
			if (!sl->busy) {
				dups++;
				continue;
			}
			const uint8_t *pi = vqs_gmem_host(g, sl->in, REQ_LEN);
			if (len != REQ_LEN || memcmp(pi, vqs_gmem_host(g, sl->out, REQ_LEN), REQ_LEN))
				wrong++;
			done[sl->id]++;
			sl->busy = false;
			completed++;
		}
		if (kills && completed >= next_kill) {
			/* Requests are in flight now (NSLOT outstanding, 200 us each). */
			usleep((unsigned)(completed % 7) * 150);
			kill_backend(child);
			child = spawn_backend(path);
			assert_true(child > 0);
			reconnect(f);
			kills--;
			next_kill += total / 4;
			continue;
		}
		if (!any && !vqs_drv_enable_cb(dq)) {
			struct pollfd p = { .fd = vqs_vu_frontend_call_fd(f, 0), .events = POLLIN };
			if (poll(&p, 1, 20) > 0) {
				uint64_t v;
				assert_int_equal(read(p.fd, &v, 8), 8);
			}
		}
	}
	/* Nothing more may arrive: a late duplicate would show here. */
	usleep(100000);
	uint32_t len;
	assert_null(vqs_drv_get_used(dq, &len));
	assert_int_equal(kills, 0); /* every planned kill happened mid-stream */
	assert_int_equal(dups, 0);
	assert_int_equal(wrong, 0);
	assert_int_equal(completed, total);
	for (unsigned i = 0; i < total; i++)
		assert_int_equal(done[i], 1);
	free(done);
	vqs_vu_frontend_destroy(f);
	kill_backend(child);
	unlink(path);
}

static void test_backend_sigkill_mid_stream_every_request_completes_once(void **state)
{
	run_kills((unsigned)vqs_test_scaled(4000), 3, false);
}

static void test_no_kill_baseline_completes_all(void **state)
{
	run_kills((unsigned)vqs_test_scaled(1000), 0, false);
}

static void test_packed_backend_sigkill_mid_stream_every_request_completes_once(void **state)
{
	run_kills((unsigned)vqs_test_scaled(4000), 3, true);
}

static void test_packed_no_kill_baseline_completes_all(void **state)
{
	run_kills((unsigned)vqs_test_scaled(1000), 0, true);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_kill_baseline_completes_all),
		cmocka_unit_test(test_backend_sigkill_mid_stream_every_request_completes_once),
		cmocka_unit_test(test_packed_no_kill_baseline_completes_all),
		cmocka_unit_test(test_packed_backend_sigkill_mid_stream_every_request_completes_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
