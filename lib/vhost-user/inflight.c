/* SPDX-License-Identifier: MIT */
/*
 * The INFLIGHT_SHMFD region: one shared block per queue where the ring records what was popped
 * and not completed, so a restarted backend can resubmit it. GET_INFLIGHT_FD creates a zeroed
 * memfd for the frontend to keep; SET_INFLIGHT_FD hands one (maybe a dead backend's) back.
 */
#include <errno.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "vhost-user/backend_internal.h"

static bool packed(const struct vqs_vu_backend *b)
{
	return (b->features & VQS_BIT(VQS_F_RING_PACKED)) != 0;
}

/* Queue count and size as the frontend gave them; the per-queue and total sizes. */
static int inflight_geometry(const struct vqs_vu_backend *b, uint16_t nq, uint16_t qs,
			     size_t *queue_len, size_t *total)
{
	if (!vu_has_proto(b, VQS_VU_PROTOCOL_F_INFLIGHT_SHMFD))
		return -EPROTO;
	if (nq == 0 || nq > b->ops.num_queues || qs == 0 || qs > VQS_VQ_MAX_SIZE)
		return -EINVAL;
	if (!packed(b) && (qs & (qs - 1)))
		return -EINVAL;
	*queue_len = vqs_vq_inflight_size(qs, packed(b));
	if (*queue_len == 0)
		return -EINVAL;
	*total = *queue_len * nq;
	return 0;
}

void vu_inflight_drop(struct vqs_vu_backend *b)
{
	struct vu_inflight *in = &b->inflight;
	if (in->base)
		munmap(in->base, in->map_len);
	dev_t d = in->own_dev;
	ino_t i = in->own_ino;
	*in = (struct vu_inflight){ .own_dev = d, .own_ino = i };
}

static int inflight_install(struct vqs_vu_backend *b, int fd, uint64_t off, size_t total,
			    size_t queue_len, uint16_t nq, uint16_t qs, bool restore)
{
	void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)off);
	if (p == MAP_FAILED)
		return -errno;
	vu_inflight_drop(b);
	b->inflight.base = p;
	b->inflight.map_len = total;
	b->inflight.queue_len = queue_len;
	b->inflight.num_queues = nq;
	b->inflight.queue_size = qs;
	b->inflight.restore = restore;
	return 0;
}

int vu_inflight_get(struct vqs_vu_backend *b, struct vqs_vu_inflight *io, int *fd_out)
{
	size_t queue_len, total;
	int r = inflight_geometry(b, io->num_queues, io->queue_size, &queue_len, &total);
	if (r < 0)
		return r;
	if (vu_any_running(b))
		return -EBUSY;
	int fd = memfd_create("vqs-inflight", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (ftruncate(fd, (off_t)total) < 0 || fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	r = inflight_install(b, fd, 0, total, queue_len, io->num_queues, io->queue_size, false);
	if (r < 0) {
		close(fd);
		return r;
	}
	b->inflight.own_dev = st.st_dev;
	b->inflight.own_ino = st.st_ino;
	io->mmap_size = total;
	io->mmap_offset = 0;
	*fd_out = fd;
	return 0;
}

int vu_inflight_set(struct vqs_vu_backend *b, const struct vqs_vu_inflight *in, int fd)
{
	size_t queue_len, total;
	uint64_t end;
	struct stat st;
	int r = inflight_geometry(b, in->num_queues, in->queue_size, &queue_len, &total);
	if (r < 0)
		return r;
	if (vu_any_running(b))
		return -EBUSY;
	if (in->mmap_size != total || __builtin_add_overflow(in->mmap_offset, in->mmap_size, &end) ||
	    (in->mmap_offset & 4095u) || in->mmap_offset > INT64_MAX)
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < 0 || end > (uint64_t)st.st_size)
		return -EINVAL;
	/* Our own fresh region holds nothing to restore; any other one may hold a dead backend's
	 * records. */
	bool own = b->inflight.own_ino && st.st_dev == b->inflight.own_dev &&
		   st.st_ino == b->inflight.own_ino;
	return inflight_install(b, fd, in->mmap_offset, total, queue_len, in->num_queues,
				in->queue_size, !own);
}

void *vu_inflight_queue(struct vqs_vu_backend *b, unsigned i, unsigned num, int *err)
{
	struct vu_inflight *in = &b->inflight;
	*err = 0;
	if (!in->base || i >= in->num_queues)
		return NULL;
	if (num != in->queue_size) {
		vqs_info("vhost-user: ring %u has %u entries, its inflight region %u", i, num,
			 in->queue_size);
		*err = -EINVAL;
		return NULL;
	}
	return (char *)in->base + (size_t)i * in->queue_len;
}
