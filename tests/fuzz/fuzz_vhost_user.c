/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the vhost-user backend's message handling, through its public API, over a
 * real unix socket. One backend (server mode, two queues, config space) runs for the whole
 * process; each input is one frontend session: the messages it encodes are sent on a fresh
 * connection with file descriptors attached, then our side is shut down for writing and the
 * replies read until the backend closes; the input ends when the backend has cleaned up
 * (disconnect counted), so sessions never overlap.
 *
 * Input: a sequence of records, each
 *   byte 0:     how many fds to attach (low 2 bits: 0..3)
 *   bytes 1-12: struct vqs_vu_hdr (request, flags, size), sent as given
 *   then min(size, what is left, VQS_VU_PAYLOAD_MAX) payload bytes
 * The fds are eventfds for SET_VRING_KICK/CALL/ERR and, for every other request, the same 1 MiB
 * memfd (so SET_MEM_TABLE, ADD_MEM_REG and SET_INFLIGHT_FD can map real memory). A declared size
 * larger than what follows is sent as is: the backend must cope with the short message.
 *
 * Each input is a whole session (accept, handshake, ring start, teardown with an RCU grace
 * period), so expect about a hundred executions per second. For a long run:
 *   CC=clang cmake -S . -B build/fuzz -DVQS_BUILD_FUZZ=ON -DVQS_BUILD_EXAMPLES=OFF \
 *     -DVQS_BUILD_BENCH=OFF && cmake --build build/fuzz --target fuzz_vhost_user
 *   mkdir -p /tmp/vu && cp -r tests/fuzz/corpus/vhost_user/. /tmp/vu/
 *   build/fuzz/tests/fuzz/fuzz_vhost_user -max_total_time=14400 \
 *     -dict=tests/fuzz/fuzz_vhost_user.dict /tmp/vu
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <vqsched/vqsched.h>

#define MEM_SIZE (1u << 20)
#define MAX_RECORD_FDS 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct vqs_sched *sched;
static struct vqs_vu_backend *backend;
static int memfd = -1;
static char path[108];
static uint8_t config[16];

static unsigned handle(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	return n;
}

static vqs_handler_fn queue_handler(void *opaque, unsigned qidx, void **handler_opaque)
{
	return handle;
}

static int get_config(void *opaque, uint32_t offset, void *buf, uint32_t len)
{
	memcpy(buf, config + offset, len);
	return 0;
}

static int set_config(void *opaque, uint32_t offset, const void *buf, uint32_t len)
{
	memcpy(config + offset, buf, len);
	return 0;
}

static int send_rarp(void *opaque, const uint8_t mac[VQS_VU_MAC_LEN]) { return 0; }

static const struct vqs_vu_device_ops ops = {
	.size = sizeof(ops),
	.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
		    VQS_BIT(VQS_F_INDIRECT_DESC) | VQS_BIT(VQS_F_RING_PACKED),
	.protocol_features = VQS_VU_PROTOCOL_SUPPORTED,
	.num_queues = 2,
	.config_size = sizeof(config),
	.queue_handler = queue_handler,
	.get_config = get_config,
	.set_config = set_config,
	.send_rarp = send_rarp,
};

/* Refused messages are the expected outcome of most inputs: formatting them would dominate. */
static void drop_log(enum vqs_log_level level, const char *msg, void *opaque) {}

static void init_once(void)
{
	signal(SIGPIPE, SIG_IGN);
	vqs_set_log(drop_log, NULL, VQS_LOG_ERR);
	snprintf(path, sizeof(path), "/tmp/vqs-fuzz-vu-%d.sock", (int)getpid());
	memfd = memfd_create("fuzz-guest", MFD_CLOEXEC);
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_POOL;
	so.nworkers = 1;
	struct vqs_vu_backend_opts bo;
	vqs_vu_backend_opts_init(&bo);
	bo.path = path;
	bo.ops = &ops;
	bo.msg_timeout_ms = 20;
	if (memfd < 0 || ftruncate(memfd, MEM_SIZE) < 0 || vqs_sched_create(&sched, &so) < 0)
		abort();
	bo.sched = sched;
	if (vqs_vu_backend_create(&backend, &bo) < 0)
		abort();
}

static int dial(void)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	strcpy(a.sun_path, path);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		abort();
	return s;
}

static bool takes_eventfd(uint32_t request)
{
	return request == VQS_VU_SET_VRING_KICK || request == VQS_VU_SET_VRING_CALL ||
	       request == VQS_VU_SET_VRING_ERR;
}

/* Send one record's bytes with nfds descriptors attached; false once the backend hung up. */
static bool send_record(int s, const uint8_t *buf, size_t len, uint32_t request, unsigned nfds)
{
	int fds[MAX_RECORD_FDS];
	for (unsigned i = 0; i < nfds; i++)
		fds[i] = takes_eventfd(request) ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : memfd;
	struct iovec iov = { (void *)buf, len };
	union {
		char b[CMSG_SPACE(sizeof(fds))];
		struct cmsghdr align;
	} ctl;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (nfds) {
		mh.msg_control = ctl.b;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	ssize_t r = sendmsg(s, &mh, MSG_NOSIGNAL);
	for (unsigned i = 0; i < nfds; i++)
		if (fds[i] != memfd)
			close(fds[i]);
	return r == (ssize_t)len;
}

/* Read (and drop) replies until the backend closes: it has then handled every message. Fds a
 * reply carries (GET_INFLIGHT_FD) are closed. */
static void drain(int s)
{
	for (;;) {
		char b[512];
		union {
			char b[CMSG_SPACE(8 * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { b, sizeof(b) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
				     .msg_controllen = sizeof(ctl.b) };
		ssize_t r = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); r >= 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
				for (size_t k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++)
					close(((int *)CMSG_DATA(cm))[k]);
		if (r <= 0 && !(r < 0 && errno == EINTR))
			return;
	}
}

static uint64_t disconnects(void)
{
	struct vqs_vu_backend_stats st;
	vqs_vu_backend_stats(backend, &st);
	return st.disconnects;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!backend)
		init_once();
	uint64_t before = disconnects();
	int s = dial();
	uint8_t buf[sizeof(struct vqs_vu_hdr) + VQS_VU_PAYLOAD_MAX];
	size_t at = 0;
	while (at + 1 + sizeof(struct vqs_vu_hdr) <= size) {
		unsigned nfds = data[at] & 3;
		struct vqs_vu_hdr h;
		memcpy(&h, data + at + 1, sizeof(h));
		at += 1 + sizeof(h);
		size_t len = size - at;
		if (len > h.size)
			len = h.size;
		if (len > VQS_VU_PAYLOAD_MAX)
			len = VQS_VU_PAYLOAD_MAX;
		memcpy(buf, &h, sizeof(h));
		memcpy(buf + sizeof(h), data + at, len);
		at += len;
		if (!send_record(s, buf, sizeof(h) + len, h.request, nfds))
			break;
	}
	/* No more requests; the backend sees the end once it has read everything before it. */
	shutdown(s, SHUT_WR);
	drain(s);
	close(s);
	/* The session is over when the backend has cleaned it up (bounded: a backend that never
	 * notices a closed connection is a bug the abort reports). */
	for (unsigned i = 0; disconnects() == before; i++) {
		if (i > 20000)
			abort();
		usleep(100);
	}
	return 0;
}
