/* SPDX-License-Identifier: MIT */
/*
 * One vhost-user message off or onto a unix stream socket, with its fds, and the shape rules of
 * each request (payload size, fd count) checked before anything reads the payload. Both the
 * backend and the frontend use it. No state beyond the socket.
 */
#ifndef VQS_VU_MSG_H
#define VQS_VU_MSG_H

#include <vqsched/vhost_user.h>

struct vu_msg {
	struct vqs_vu_hdr hdr;
	union {
		uint64_t u64;
		struct vqs_vu_vring_state state;
		struct vqs_vu_vring_addr addr;
		struct vqs_vu_memory memory;
		struct vqs_vu_mem_reg mem_reg;
		struct vqs_vu_config config;
		struct vqs_vu_inflight inflight;
		struct vqs_vu_log log;
		struct vqs_vu_device_state dstate;
		uint8_t bytes[VQS_VU_PAYLOAD_MAX];
	} p;
	int fds[VQS_VU_MAX_FDS];
	unsigned nfds;
};

/*
 * Read one message: the header, then exactly hdr.size payload bytes, collecting every fd that
 * came with them (close-on-exec). Each read waits at most timeout_ms once the message started.
 * Returns 0; -ECONNRESET on a clean EOF before a header; -EBADMSG for a short header or payload,
 * a size above VQS_VU_PAYLOAD_MAX, truncated control data or more than VQS_VU_MAX_FDS fds (every
 * fd received is closed then); -ETIMEDOUT; or another -errno. On error m holds no fds.
 */
int vu_msg_recv(int sock, struct vu_msg *m, int timeout_ms);
/* Send header + payload with fds on the first byte; EINTR and short writes handled. 0 or -errno. */
int vu_msg_send(int sock, const struct vqs_vu_hdr *hdr, const void *payload, const int *fds,
		unsigned nfds);
/* Send raw bytes with fds on the first byte. 0 or -errno. */
int vu_send_bytes(int sock, const void *buf, size_t len, const int *fds, unsigned nfds);
/* Wait until sock is readable; 0, -ETIMEDOUT or -errno. */
int vu_wait_readable(int sock, int timeout_ms);

/* Close every fd of m and forget them. */
void vu_msg_close_fds(struct vu_msg *m);

/*
 * Shape of a request as the backend receives it: payload size and fd count must match exactly
 * (the fd count may depend on the payload: nregions, NOFD). 0, -EBADMSG for a shape violation,
 * -ENOSYS for a request this backend does not know.
 */
int vu_msg_check_shape(const struct vu_msg *m);
/* Does this request always produce a reply payload (GET_*)? */
bool vu_request_has_reply(uint32_t request);

#endif
