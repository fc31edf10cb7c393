/* SPDX-License-Identifier: MIT */
/*
 * Dirty page logging for live migration (vhost-user.rst "Migration"): SET_LOG_BASE shares the
 * frontend's bitmap, which the memory map carries (vqs_mem_set_log); the map logs while LOG_ALL
 * is negotiated and a bitmap is installed, and the rings mark what they write (lib/mem/log.c).
 * The frontend switches LOG_ALL on and off while the queues run.
 */
#include <errno.h>
#include <inttypes.h>
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

void vu_log_drop(struct vqs_vu_backend *b)
{
	vqs_mem_log_enable(b->mem, false);
	vqs_mem_set_log(b->mem, NULL);
	b->log_set = false;
	if (b->log_fd >= 0)
		close(b->log_fd);
	b->log_fd = -1;
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

/* The kernel's VHOST_SET_LOG_FD: an eventfd to signal after logging. Kept for the connection;
 * the frontend reads the bitmap when it syncs, so nothing here waits on it being signalled. */
int vu_set_log_fd(struct vqs_vu_backend *b, int fd)
{
	if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_LOG_SHMFD)) {
		close(fd);
		return -EPROTO;
	}
	if (b->log_fd >= 0)
		close(b->log_fd);
	b->log_fd = fd;
	return 0;
}
