/* SPDX-License-Identifier: MIT */
/*
 * Dirty page logging for live migration (vhost-user.rst "Migration"): SET_LOG_BASE shares the
 * frontend's bitmap, which the memory map carries (vqs_mem_set_log); the map logs while LOG_ALL
 * is negotiated and a bitmap is installed, and the rings mark what they write (lib/mem/log.c).
 * The frontend switches LOG_ALL on and off while the queues run.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mem/table.h"
#include "util/log.h"
#include "vhost-user/backend_internal.h"

int vu_log_update(struct vqs_vu_backend *b)
{
	bool on = b->log_set && (b->features & VQS_BIT(VQS_VU_F_LOG_ALL)) &&
		  !b->opts.test_log_unmarked;
	return vqs_mem_log_enable(b->mem, on);
}

/* Make fd the log's eventfd (-1: none) and close the one it replaces once no queue can still
 * signal it. */
static int replace_log_fd(struct vqs_vu_backend *b, int fd)
{
	int err = vqs_mem_set_log_fd(b->mem, fd);
	if (err < 0)
		return err;
	if (b->log_fd >= 0) {
		vqs_mem_synchronize(b->mem);
		close(b->log_fd);
	}
	b->log_fd = fd;
	return 0;
}

void vu_log_drop(struct vqs_vu_backend *b)
{
	vqs_mem_log_enable(b->mem, false);
	vqs_mem_set_log(b->mem, NULL);
	b->log_set = false;
	/* On failure (no memory for a table) the map keeps signalling the fd: it stays open until
	 * the next replacement, or until the map is gone (free_backend). */
	replace_log_fd(b, -1);
}

/* Bytes of bitmap the current memory table needs: a bit per page up to its highest gpa. */
static uint64_t log_needed(struct vqs_vu_backend *b)
{
	vqs_mem_read_lock();
	const struct vqs_mem_table *t = vqs_mem_current(b->mem);
	uint64_t last = t->n ? t->slots[t->n - 1].gpa + (t->slots[t->n - 1].size - 1) : 0;
	uint64_t need = t->n ? last / VQS_MEM_LOG_PAGE / 8 + 1 : 0;
	vqs_mem_read_unlock();
	return need;
}

/* CVE-2020-10722: size and offset are the frontend's word; both are checked against the fd
 * (vu_region_map) and the size against the guest memory it must cover. */
int vu_set_log_base(struct vqs_vu_backend *b, const struct vqs_vu_log *l, int fd)
{
	if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_LOG_SHMFD))
		return -EPROTO;
	uint64_t need = log_needed(b);
	if (l->mmap_size < need) {
		vqs_info("vhost-user: log of %" PRIu64 " bytes cannot cover guest memory (%" PRIu64
			 " needed)", l->mmap_size, need);
		return -EINVAL;
	}
	struct vqs_mem_log log;
	int err = vu_log_map(l->mmap_size, l->mmap_offset, fd, &log);
	if (err < 0)
		return err;
	if ((err = vqs_mem_set_log(b->mem, &log)) < 0) {
		log.release(log.release_opaque, log.bitmap, log.len);
		return err;
	}
	b->log_set = true;
	return vu_log_update(b);
}

/* Is fd an eventfd? Anything else could block the queue writing to it (a full pipe). */
static bool is_eventfd(int fd)
{
	char link[64], target[32];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return !strcmp(target, "anon_inode:[eventfd]");
}

/*
 * vhost-user.rst gives SET_LOG_FD the kernel's VHOST_SET_LOG_FD as its equivalent: an eventfd
 * the device signals after it writes to the log, so that a frontend can wait for marks instead
 * of polling the bitmap. The queues signal it after each batch they logged (vqs_mem_set_log_fd).
 * The backend makes it non-blocking (the flag belongs to the description the frontend shares):
 * a counter the frontend let fill up must not stall a queue.
 */
int vu_set_log_fd(struct vqs_vu_backend *b, int fd)
{
	int err = -EPROTO;
	if (vu_has_proto(b, VQS_VU_PROTOCOL_F_LOG_SHMFD))
		err = is_eventfd(fd) ? 0 : -EINVAL;
	int fl = err ? -1 : fcntl(fd, F_GETFL);
	if (!err && (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0))
		err = -errno;
	if (!err)
		err = replace_log_fd(b, fd);
	if (err)
		close(fd);
	return err;
}
