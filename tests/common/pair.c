/* SPDX-License-Identifier: MIT */
#include "pair.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

int vqs_pair_init(struct vqs_pair *p, unsigned num, uint64_t features, uint64_t gpa_base,
		  size_t arena_size)
{
	memset(p, 0, sizeof(*p));
	p->features = features;
	p->num = num;
	int rc = vqs_gmem_create(&p->gmem, gpa_base, arena_size);
	if (rc)
		return rc;
	struct vqs_mem_region r;
	vqs_gmem_region(p->gmem, &r);
	if ((rc = vqs_mem_create(&p->mem)) || (rc = vqs_mem_set(p->mem, &r, 1)))
		goto fail;
	struct vqs_drv_vq_config dc = {
		.size = sizeof(dc), .num = num, .features = features, .gmem = p->gmem};
	if ((rc = vqs_drv_vq_create(&p->drv, &dc)))
		goto fail;
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = num, .features = features,
				   .addr_space = VQS_ADDR_GPA, .mem = p->mem};
	vqs_drv_vq_addrs(p->drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	if ((rc = vqs_vq_create(&p->dev)) || (rc = vqs_vq_configure(p->dev, &vc)))
		goto fail;
	return 0;
fail:
	vqs_pair_fini(p);
	return rc;
}

void vqs_pair_fini(struct vqs_pair *p)
{
	if (p->dev)
		vqs_vq_destroy(p->dev);
	if (p->drv)
		vqs_drv_vq_destroy(p->drv);
	if (p->mem)
		vqs_mem_destroy(p->mem);
	if (p->gmem)
		vqs_gmem_destroy(p->gmem);
	memset(p, 0, sizeof(*p));
}

long vqs_pair_round_trip(struct vqs_pair *p, int kick_fd, int call_fd,
			 const struct vqs_drv_buf *bufs, unsigned out, unsigned in)
{
	static int token;
	int rc = vqs_drv_add(p->drv, bufs, out, in, &token, false);
	if (rc)
		return rc;
	vqs_drv_kick_prepare(p->drv);
	uint64_t one = 1, v;
	if (write(kick_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	for (int i = 0; i < 500; i++) {
		uint32_t len;
		if (vqs_drv_get_used(p->drv, &len) == &token)
			return len;
		/* Wait for a call (or 10 ms), and reset the eventfd so the next wait waits. */
		struct pollfd pfd = {.fd = call_fd, .events = POLLIN};
		if (poll(&pfd, 1, 10) > 0 && read(call_fd, &v, sizeof(v)) < 0)
			return -errno;
	}
	return -1;
}
