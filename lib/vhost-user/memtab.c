/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "util/log.h"
#include "vhost-user/backend_internal.h"

/* What the release hook needs to undo the mapping. */
struct vu_mapping {
	void *base;
	size_t len;
};

static void region_release(void *opaque, const struct vqs_mem_region *r)
{
	struct vu_mapping *mp = opaque;
	munmap(mp->base, mp->len);
	free(mp);
}

void vu_region_unmap(const struct vqs_mem_region *r) { region_release(r->release_opaque, r); }

int vu_region_map(const struct vqs_vu_mem_region *wr, int fd, struct vqs_mem_region *out)
{
	uint64_t size = wr->memory_size, off = wr->mmap_offset, end;
	struct stat st;
	if (size == 0 || __builtin_add_overflow(off, size, &end))
		return -EINVAL;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size < 0 || end > (uint64_t)st.st_size) {
		vqs_info("vhost-user: region [%#llx, +%#llx) lies beyond its fd (%lld bytes)",
			 (unsigned long long)off, (unsigned long long)size, (long long)st.st_size);
		return -EINVAL;
	}
	/* Map from an offset aligned to the file's block size (the huge page size on hugetlbfs),
	 * whole blocks, so hugetlbfs accepts it as well as a memfd. */
	uint64_t blk = st.st_blksize > 0 ? (uint64_t)st.st_blksize : 4096u;
	uint64_t map_off = off & ~(blk - 1);
	uint64_t map_len = end - map_off;
	if (blk & (blk - 1))
		return -EINVAL;
	map_len = (map_len + blk - 1) & ~(blk - 1);
	if (map_len > SIZE_MAX)
		return -EINVAL;
	struct vu_mapping *mp = malloc(sizeof(*mp));
	if (!mp)
		return -ENOMEM;
	void *p = mmap(NULL, (size_t)map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)map_off);
	if (p == MAP_FAILED) {
		int e = -errno;
		free(mp);
		return e;
	}
	*mp = (struct vu_mapping){ p, (size_t)map_len };
	*out = (struct vqs_mem_region){
		.gpa = wr->guest_phys_addr,
		.size = size,
		.uaddr = wr->userspace_addr,
		.host = (char *)p + (off - map_off),
		.release = region_release,
		.release_opaque = mp,
	};
	return 0;
}

static void log_release(void *opaque, void *bitmap, uint64_t len)
{
	(void)bitmap;
	(void)len;
	region_release(opaque, NULL);
}

int vu_log_map(uint64_t size, uint64_t off, int fd, struct vqs_mem_log *out)
{
	struct vqs_vu_mem_region wr = { .memory_size = size, .mmap_offset = off };
	struct vqs_mem_region r = { 0 };
	int err = vu_region_map(&wr, fd, &r);
	if (err < 0)
		return err;
	*out = (struct vqs_mem_log){ .bitmap = r.host, .len = size, .release = log_release,
				     .release_opaque = r.release_opaque };
	return 0;
}
