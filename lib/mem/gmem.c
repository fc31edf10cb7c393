/* SPDX-License-Identifier: MIT */
/*
 * A guest-memory arena: one memfd mapped shared (so its fd can be handed to a vhost-user peer)
 * with a bump allocator. Nothing is ever freed, so every allocation is fresh memfd memory and
 * already zero.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>
#include <vqsched/driver.h>

struct vqs_gmem {
	int fd;
	uint8_t *host;
	uint64_t base; /* gpa of host[0] */
	size_t size;
	size_t next; /* offset of the first unallocated byte */
};

int vqs_gmem_create(struct vqs_gmem **out, uint64_t gpa_base, size_t size)
{
	/* A page-aligned base keeps host and gpa alignment equal, which the rings' atomics need. */
	long page = sysconf(_SC_PAGESIZE);
	if (!size || gpa_base % (uint64_t)page || size - 1 > UINT64_MAX - gpa_base)
		return -EINVAL;
	struct vqs_gmem *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	int rc;
	g->fd = memfd_create("vqsched-gmem", MFD_CLOEXEC);
	if (g->fd < 0) {
		rc = -errno;
		goto fail;
	}
	if (ftruncate(g->fd, (off_t)size) < 0) {
		rc = -errno;
		goto fail_fd;
	}
	g->host = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd, 0);
	if (g->host == MAP_FAILED) {
		rc = -errno;
		goto fail_fd;
	}
	g->base = gpa_base;
	g->size = size;
	/* 0 is the allocator's failure value, so an arena at gpa 0 never hands out its first byte. */
	g->next = gpa_base == 0;
	*out = g;
	return 0;
fail_fd:
	close(g->fd);
fail:
	free(g);
	return rc;
}

void vqs_gmem_destroy(struct vqs_gmem *g)
{
	if (!g)
		return;
	munmap(g->host, g->size);
	close(g->fd);
	free(g);
}

uint64_t vqs_gmem_alloc(struct vqs_gmem *g, size_t len, size_t align)
{
	if (!len || !align || (align & (align - 1)))
		return 0;
	/* Align the gpa; with a page-aligned base the host address follows for align <= page. */
	size_t off = g->next + (-(g->base + g->next) & (align - 1));
	if (off < g->next || off > g->size || len > g->size - off)
		return 0;
	g->next = off + len;
	return g->base + off;
}

void *vqs_gmem_host(const struct vqs_gmem *g, uint64_t gpa, size_t len)
{
	if (gpa < g->base || gpa - g->base > g->size || len > g->size - (gpa - g->base))
		return NULL;
	return g->host + (gpa - g->base);
}

int vqs_gmem_fd(const struct vqs_gmem *g) { return g->fd; }

uint64_t vqs_gmem_base(const struct vqs_gmem *g) { return g->base; }

size_t vqs_gmem_size(const struct vqs_gmem *g) { return g->size; }

void vqs_gmem_region(const struct vqs_gmem *g, struct vqs_mem_region *r)
{
	*r = (struct vqs_mem_region){.gpa = g->base, .size = g->size,
				     .uaddr = (uint64_t)(uintptr_t)g->host, .host = g->host};
}
