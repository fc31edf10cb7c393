/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "vhost-user/msg.h"

void vu_msg_close_fds(struct vu_msg *m)
{
	for (unsigned i = 0; i < m->nfds; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	m->nfds = 0;
}

int vu_wait_readable(int sock, int timeout_ms)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	uint64_t deadline = vqs_now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		uint64_t now = vqs_now_ns();
		int left = now >= deadline ? 0 : (int)((deadline - now + 999999u) / 1000000u);
		int r = poll(&pfd, 1, left);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

/* Keep the fds of every SCM_RIGHTS block; fds beyond the message's room are closed at once. */
static bool take_fds(struct msghdr *mh, struct vu_msg *m)
{
	bool ok = !(mh->msg_flags & MSG_CTRUNC);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		const unsigned char *data = CMSG_DATA(c);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, data + i * sizeof(int), sizeof(int));
			if (m->nfds < VQS_VU_MAX_FDS) {
				m->fds[m->nfds++] = fd;
			} else {
				close(fd);
				ok = false;
			}
		}
	}
	return ok;
}

/* Read exactly len bytes into buf. 0, -ECONNRESET (EOF before the first byte when eof_ok),
 * -EBADMSG, -ETIMEDOUT, -errno. */
static int recv_exact(int sock, void *buf, size_t len, struct vu_msg *m, int timeout_ms,
		      bool eof_ok)
{
	size_t got = 0;
	bool fds_ok = true;
	while (got < len) {
		int r = vu_wait_readable(sock, timeout_ms);
		if (r < 0)
			return r;
		union {
			char buf[CMSG_SPACE(sizeof(int) * VQS_VU_MAX_FDS)];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = { (char *)buf + got, len - got };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf) };
		ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (!take_fds(&mh, m))
			fds_ok = false;
		if (n == 0)
			return got == 0 && eof_ok ? -ECONNRESET : -EBADMSG;
		got += (size_t)n;
	}
	return fds_ok ? 0 : -EBADMSG;
}

int vu_msg_recv(int sock, struct vu_msg *m, int timeout_ms)
{
	m->nfds = 0;
	int r = recv_exact(sock, &m->hdr, sizeof(m->hdr), m, timeout_ms, true);
	if (r == 0 && m->hdr.size > VQS_VU_PAYLOAD_MAX)
		r = -EBADMSG;
	if (r == 0 && m->hdr.size)
		r = recv_exact(sock, m->p.bytes, m->hdr.size, m, timeout_ms, false);
	if (r < 0) {
		vu_msg_close_fds(m);
		return r;
	}
	return 0;
}

/* Senders may attach more fds than any valid message carries: tests send such messages. */
#define SEND_FDS_MAX 64

int vu_send_bytes(int sock, const void *buf, size_t len, const int *fds, unsigned nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * SEND_FDS_MAX)];
		struct cmsghdr align;
	} ctl;
	if (nfds > SEND_FDS_MAX)
		return -EINVAL;
	size_t sent = 0;
	while (sent < len || (len == 0 && sent == 0 && nfds)) {
		struct iovec iov = { (char *)buf + sent, len - sent };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		if (sent == 0 && nfds) {
			memset(&ctl, 0, sizeof(ctl));
			mh.msg_control = ctl.buf;
			mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
			struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
			memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
		}
		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0 && len == 0)
			break;
		sent += (size_t)n;
	}
	return 0;
}

int vu_msg_send(int sock, const struct vqs_vu_hdr *hdr, const void *payload, const int *fds,
		unsigned nfds)
{
	unsigned char buf[sizeof(*hdr) + VQS_VU_PAYLOAD_MAX];
	if (hdr->size > VQS_VU_PAYLOAD_MAX)
		return -EINVAL;
	memcpy(buf, hdr, sizeof(*hdr));
	if (hdr->size)
		memcpy(buf + sizeof(*hdr), payload, hdr->size);
	return vu_send_bytes(sock, buf, sizeof(*hdr) + hdr->size, fds, nfds);
}

bool vu_request_has_reply(uint32_t request)
{
	switch (request) {
	case VQS_VU_GET_FEATURES:
	case VQS_VU_GET_PROTOCOL_FEATURES:
	case VQS_VU_GET_VRING_BASE:
	case VQS_VU_GET_QUEUE_NUM:
	case VQS_VU_GET_CONFIG:
	case VQS_VU_GET_INFLIGHT_FD:
	case VQS_VU_GET_MAX_MEM_SLOTS:
	case VQS_VU_GET_STATUS:
	case VQS_VU_SET_DEVICE_STATE_FD:
	case VQS_VU_CHECK_DEVICE_STATE:
	case VQS_VU_SET_LOG_BASE: /* an empty reply once the log is mapped (QEMU waits for it) */
		return true;
	default:
		return false;
	}
}

/* Payload size and fd count of a request: exact values, or -1 when decided by the payload. */
struct shape {
	int size;
	int nfds;
};

static bool shape_of(uint32_t request, struct shape *s)
{
	switch (request) {
	case VQS_VU_GET_FEATURES:
	case VQS_VU_SET_OWNER:
	case VQS_VU_RESET_OWNER:
	case VQS_VU_RESET_DEVICE:
	case VQS_VU_GET_PROTOCOL_FEATURES:
	case VQS_VU_GET_QUEUE_NUM:
	case VQS_VU_GET_MAX_MEM_SLOTS:
	case VQS_VU_GET_STATUS:
	case VQS_VU_CHECK_DEVICE_STATE:
		*s = (struct shape){ 0, 0 };
		return true;
	case VQS_VU_SET_FEATURES:
	case VQS_VU_SET_PROTOCOL_FEATURES:
	case VQS_VU_SET_STATUS:
	case VQS_VU_SEND_RARP:
		*s = (struct shape){ 8, 0 };
		return true;
	case VQS_VU_SET_VRING_NUM:
	case VQS_VU_SET_VRING_BASE:
	case VQS_VU_GET_VRING_BASE:
	case VQS_VU_SET_VRING_ENABLE:
		*s = (struct shape){ sizeof(struct vqs_vu_vring_state), 0 };
		return true;
	case VQS_VU_SET_VRING_ADDR:
		*s = (struct shape){ sizeof(struct vqs_vu_vring_addr), 0 };
		return true;
	case VQS_VU_SET_VRING_KICK:
	case VQS_VU_SET_VRING_CALL:
	case VQS_VU_SET_VRING_ERR:
		*s = (struct shape){ 8, -1 };
		return true;
	case VQS_VU_SET_LOG_BASE:
		*s = (struct shape){ sizeof(struct vqs_vu_log), 1 };
		return true;
	case VQS_VU_SET_LOG_FD:
		/* vhost-user.rst gives it no payload; older frontends sent a u64 */
		*s = (struct shape){ -1, 1 };
		return true;
	case VQS_VU_SET_BACKEND_REQ_FD:
		*s = (struct shape){ -1, 1 };
		return true;
	case VQS_VU_SET_MEM_TABLE:
	case VQS_VU_GET_CONFIG:
	case VQS_VU_SET_CONFIG:
		*s = (struct shape){ -1, -1 };
		return true;
	case VQS_VU_GET_INFLIGHT_FD:
		*s = (struct shape){ sizeof(struct vqs_vu_inflight), 0 };
		return true;
	case VQS_VU_SET_INFLIGHT_FD:
		*s = (struct shape){ sizeof(struct vqs_vu_inflight), 1 };
		return true;
	case VQS_VU_SET_DEVICE_STATE_FD:
		*s = (struct shape){ sizeof(struct vqs_vu_device_state), 1 };
		return true;
	case VQS_VU_ADD_MEM_REG:
		*s = (struct shape){ sizeof(struct vqs_vu_mem_reg), 1 };
		return true;
	case VQS_VU_REM_MEM_REG:
		*s = (struct shape){ sizeof(struct vqs_vu_mem_reg), -1 };
		return true;
	default:
		return false;
	}
}

int vu_msg_check_shape(const struct vu_msg *m)
{
	struct shape s;
	uint32_t size = m->hdr.size;
	if ((m->hdr.flags & VQS_VU_FLAG_VERSION_MASK) != VQS_VU_VERSION ||
	    (m->hdr.flags & VQS_VU_FLAG_REPLY))
		return -EBADMSG;
	if (!shape_of(m->hdr.request, &s))
		return -ENOSYS;
	if (s.size >= 0 && size != (uint32_t)s.size)
		return -EBADMSG;
	if (s.nfds >= 0 && m->nfds != (unsigned)s.nfds)
		return -EBADMSG;
	switch (m->hdr.request) {
	case VQS_VU_SET_VRING_KICK:
	case VQS_VU_SET_VRING_CALL:
	case VQS_VU_SET_VRING_ERR: {
		uint64_t v = m->p.u64;
		if (v & ~(VQS_VU_VRING_IDX_MASK | VQS_VU_VRING_NOFD_MASK))
			return -EBADMSG;
		return m->nfds == ((v & VQS_VU_VRING_NOFD_MASK) ? 0u : 1u) ? 0 : -EBADMSG;
	}
	case VQS_VU_SET_BACKEND_REQ_FD:
	case VQS_VU_SET_LOG_FD:
		return size == 0 || size == 8 ? 0 : -EBADMSG;
	case VQS_VU_REM_MEM_REG:
		return m->nfds <= 1 ? 0 : -EBADMSG;
	case VQS_VU_SET_MEM_TABLE: {
		if (size < 8)
			return -EBADMSG;
		uint32_t n = m->p.memory.nregions;
		if (n > VQS_VU_MEM_TABLE_MAX ||
		    size != 8 + n * sizeof(struct vqs_vu_mem_region) || m->nfds != n)
			return -EBADMSG;
		return 0;
	}
	case VQS_VU_GET_CONFIG:
	case VQS_VU_SET_CONFIG:
		if (size < 12 || m->nfds)
			return -EBADMSG;
		return m->p.config.size <= VQS_VU_CONFIG_MAX && size == 12 + m->p.config.size
			       ? 0
			       : -EBADMSG;
	default:
		return 0;
	}
}

const char *vqs_vu_request_name(uint32_t request)
{
	static const char *const names[] = {
		[VQS_VU_GET_FEATURES] = "GET_FEATURES",
		[VQS_VU_SET_FEATURES] = "SET_FEATURES",
		[VQS_VU_SET_OWNER] = "SET_OWNER",
		[VQS_VU_RESET_OWNER] = "RESET_OWNER",
		[VQS_VU_SET_MEM_TABLE] = "SET_MEM_TABLE",
		[VQS_VU_SET_LOG_BASE] = "SET_LOG_BASE",
		[VQS_VU_SET_LOG_FD] = "SET_LOG_FD",
		[VQS_VU_SET_VRING_NUM] = "SET_VRING_NUM",
		[VQS_VU_SET_VRING_ADDR] = "SET_VRING_ADDR",
		[VQS_VU_SET_VRING_BASE] = "SET_VRING_BASE",
		[VQS_VU_GET_VRING_BASE] = "GET_VRING_BASE",
		[VQS_VU_SET_VRING_KICK] = "SET_VRING_KICK",
		[VQS_VU_SET_VRING_CALL] = "SET_VRING_CALL",
		[VQS_VU_SET_VRING_ERR] = "SET_VRING_ERR",
		[VQS_VU_GET_PROTOCOL_FEATURES] = "GET_PROTOCOL_FEATURES",
		[VQS_VU_SET_PROTOCOL_FEATURES] = "SET_PROTOCOL_FEATURES",
		[VQS_VU_GET_QUEUE_NUM] = "GET_QUEUE_NUM",
		[VQS_VU_SET_VRING_ENABLE] = "SET_VRING_ENABLE",
		[VQS_VU_SEND_RARP] = "SEND_RARP",
		[VQS_VU_NET_SET_MTU] = "NET_SET_MTU",
		[VQS_VU_SET_BACKEND_REQ_FD] = "SET_BACKEND_REQ_FD",
		[VQS_VU_IOTLB_MSG] = "IOTLB_MSG",
		[VQS_VU_SET_VRING_ENDIAN] = "SET_VRING_ENDIAN",
		[VQS_VU_GET_CONFIG] = "GET_CONFIG",
		[VQS_VU_SET_CONFIG] = "SET_CONFIG",
		[VQS_VU_GET_INFLIGHT_FD] = "GET_INFLIGHT_FD",
		[VQS_VU_SET_INFLIGHT_FD] = "SET_INFLIGHT_FD",
		[VQS_VU_RESET_DEVICE] = "RESET_DEVICE",
		[VQS_VU_GET_MAX_MEM_SLOTS] = "GET_MAX_MEM_SLOTS",
		[VQS_VU_ADD_MEM_REG] = "ADD_MEM_REG",
		[VQS_VU_REM_MEM_REG] = "REM_MEM_REG",
		[VQS_VU_SET_STATUS] = "SET_STATUS",
		[VQS_VU_GET_STATUS] = "GET_STATUS",
		[VQS_VU_SET_DEVICE_STATE_FD] = "SET_DEVICE_STATE_FD",
		[VQS_VU_CHECK_DEVICE_STATE] = "CHECK_DEVICE_STATE",
	};
	if (request < sizeof(names) / sizeof(names[0]) && names[request])
		return names[request];
	return "?";
}
