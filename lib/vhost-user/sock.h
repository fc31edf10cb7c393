/* SPDX-License-Identifier: MIT */
/* Unix stream sockets for both ends of vhost-user: listen, accept, one connect attempt. */
#ifndef VQS_VU_SOCK_H
#define VQS_VU_SOCK_H

/* Listening socket on path (a stale socket file there is replaced), non-blocking. fd or -errno. */
int vu_sock_listen(const char *path);
/* Accept one connection (blocking socket, close-on-exec, sends time out after timeout_ms).
 * fd, -EAGAIN when none is pending, or -errno. */
int vu_sock_accept(int listen_fd, int timeout_ms);
/* One connection attempt (no waiting for a full backlog). fd or -errno (-ENOENT, -ECONNREFUSED,
 * -EAGAIN: try again later). */
int vu_sock_connect(const char *path, int timeout_ms);

#endif
