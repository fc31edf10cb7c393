/* SPDX-License-Identifier: MIT */
#include "blk_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int spawn(struct blk_env *e)
{
	char queues[16];
	snprintf(queues, sizeof(queues), "%u", e->queues);
	const char *argv[24] = { "vqs-blk", "--socket", e->sock, "--file", e->file, "--queues",
				 queues, "--workers", "2", "--policy", "pool", "--io-threads", "4",
				 "--latency-us", "300", "--serial", "vqs-test-disk" };
	unsigned n = 17;
	if (e->packed)
		argv[n++] = "--packed";
	if (e->client)
		argv[n++] = "--client";
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execv(VQS_BLK_BIN, (char *const *)argv);
		_exit(127);
	}
	e->pid = pid;
	return 0;
}

static int connect_setup(struct blk_env *e)
{
	int r = vqs_vu_frontend_connect(e->f);
	return r < 0 ? r : vqs_vu_frontend_setup(e->f);
}

static int start(struct blk_env *e, uint64_t bytes, uint16_t queues, bool client, bool packed)
{
	static unsigned seq;
	memset(e, 0, sizeof(*e));
	e->client = client;
	e->packed = packed;
	snprintf(e->sock, sizeof(e->sock), "/tmp/vqs-blk-test-%d-%u.sock", (int)getpid(), seq);
	snprintf(e->file, sizeof(e->file), "/tmp/vqs-blk-test-%d-%u.img", (int)getpid(), seq++);
	e->disk_bytes = bytes;
	e->queues = queues;
	unlink(e->sock);
	int fd = open(e->file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = ftruncate(fd, (off_t)bytes) < 0 ? -errno : 0;
	close(fd);
	if (r == 0)
		r = spawn(e);
	struct vqs_vu_frontend_opts o;
	vqs_vu_frontend_opts_init(&o);
	o.path = e->sock;
	o.server = client;
	o.num_queues = queues;
	o.queue_size = 128;
	o.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) | VQS_BIT(BLK_F_FLUSH) |
		     VQS_BIT(BLK_F_MQ) | VQS_BIT(BLK_F_DISCARD) |
		     (packed ? VQS_BIT(VQS_F_RING_PACKED) : 0);
	o.mem_size = 8u << 20;
	o.timeout_ms = 10000;
	if (r == 0)
		r = vqs_vu_frontend_create(&e->f, &o);
	if (r == 0)
		r = connect_setup(e);
	return r;
}

int blk_env_start(struct blk_env *e, uint64_t bytes, uint16_t queues, bool client)
{
	return start(e, bytes, queues, client, false);
}

int blk_env_start_packed(struct blk_env *e, uint64_t bytes, uint16_t queues)
{
	return start(e, bytes, queues, false, true);
}

static int reap(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return status;
}

int blk_env_stop(struct blk_env *e)
{
	vqs_vu_frontend_destroy(e->f);
	e->f = NULL;
	int status = -ECHILD;
	if (e->pid > 0) {
		kill(e->pid, SIGTERM);
		status = reap(e->pid);
		e->pid = 0;
	}
	unlink(e->sock);
	unlink(e->file);
	return status;
}

int blk_env_kill(struct blk_env *e)
{
	if (e->pid <= 0 || kill(e->pid, SIGKILL) < 0)
		return -ESRCH;
	int status = reap(e->pid);
	e->pid = 0;
	return status >= 0 && WIFSIGNALED(status) ? 0 : -ECHILD;
}

void blk_env_kick(struct blk_env *e, unsigned q)
{
	uint64_t one = 1;
	if (write(vqs_vu_frontend_kick_fd(e->f, q), &one, sizeof(one)) != sizeof(one))
		abort();
}

int blk_env_restart(struct blk_env *e)
{
	vqs_vu_frontend_disconnect(e->f, false);
	int r = spawn(e);
	if (r == 0)
		r = connect_setup(e);
	/* A new backend learns of waiting chains from a kick, as after any start. */
	for (unsigned q = 0; r == 0 && q < e->queues; q++)
		blk_env_kick(e, q);
	return r;
}

void *blk_host(struct blk_env *e, uint64_t gpa, size_t len)
{
	return vqs_gmem_host(vqs_vu_frontend_gmem(e->f), gpa, len);
}

int blk_slot_alloc(struct blk_env *e, struct blk_slot *s, uint32_t data_cap)
{
	struct vqs_gmem *g = vqs_vu_frontend_gmem(e->f);
	*s = (struct blk_slot){ vqs_gmem_alloc(g, 16, 16), vqs_gmem_alloc(g, data_cap, 512),
				vqs_gmem_alloc(g, 1, 1), data_cap };
	return s->hdr && s->data && s->status ? 0 : -ENOMEM;
}

int blk_slot_add(struct blk_env *e, unsigned q, struct blk_slot *s, uint32_t type, uint64_t sector,
		 uint32_t data_len, void *token)
{
	uint32_t *h = blk_host(e, s->hdr, 16);
	h[0] = type;
	h[1] = 0;
	memcpy(h + 2, &sector, 8);
	*(uint8_t *)blk_host(e, s->status, 1) = 0xff;
	struct vqs_drv_buf b[3] = { { s->hdr, 16 }, { s->data, data_len }, { s->status, 1 } };
	if (data_len == 0)
		b[1] = b[2];
	unsigned n = data_len ? 3 : 2;
	unsigned out = type == BLK_T_OUT || type == BLK_T_DISCARD ? n - 1 : 1;
	return vqs_drv_add(vqs_vu_frontend_vq(e->f, q), b, out, n - out, token, false);
}

uint8_t blk_slot_status(struct blk_env *e, const struct blk_slot *s)
{
	return *(volatile uint8_t *)blk_host(e, s->status, 1);
}

int blk_submit_wait(struct blk_env *e, unsigned q, const struct vqs_drv_buf *bufs, unsigned out,
		    unsigned in)
{
	struct vqs_drv_vq *dq = vqs_vu_frontend_vq(e->f, q);
	static char token;
	int r = vqs_drv_add(dq, bufs, out, in, &token, false);
	if (r < 0)
		return r;
	if (vqs_drv_kick_prepare(dq))
		blk_env_kick(e, q);
	uint64_t deadline = vqs_now_ns() + 10ull * 1000000000u;
	while (vqs_now_ns() < deadline) {
		uint32_t len;
		if (vqs_drv_get_used(dq, &len))
			return (int)len;
		struct pollfd p = { .fd = vqs_vu_frontend_call_fd(e->f, q), .events = POLLIN };
		if (!vqs_drv_enable_cb(dq) && poll(&p, 1, 10) > 0) {
			uint64_t v;
			if (read(p.fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				return -errno;
		}
	}
	return -ETIMEDOUT;
}
