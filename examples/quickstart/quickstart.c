/* SPDX-License-Identifier: MIT */
/*
 * The smallest vqsched round trip: a driver (what a guest does) sends one request over a split
 * virtqueue in shared guest memory; the device side (what a backend does) pops it, writes a reply
 * and completes it; the driver reaps the reply. Both halves run in this one thread here; in a real
 * backend the device half runs on a vqsched worker and the driver is a VM across vhost-user.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <vqsched/vqsched.h>

#define GUEST_BASE 0x100000 /* where the arena sits in guest physical memory */
#define GUEST_SIZE (1 << 20)
#define QUEUE_SIZE 8
#define BUF_SIZE 64

static int fail(const char *what, int rc)
{
	fprintf(stderr, "quickstart: %s failed: %s\n", what, strerror(-rc));
	return 1;
}

/* Device side: take one chain, read its request, write the reply into its writable buffer. */
static int serve_one(struct vqs_vq *dev)
{
	struct iovec iov[4];
	/* e.iov: where pop put the iovecs (iov, or the queue's area for a longer chain) */
	struct vqs_elem e = {.iov = iov, .iov_cap = 4};
	vqs_mem_read_lock(); /* the iovecs point into guest memory: keep the mapping alive */
	int rc = vqs_vq_pop(dev, &e);
	if (rc == 0) {
		char request[BUF_SIZE] = {0};
		memcpy(request, e.iov[0].iov_base,
		       e.iov[0].iov_len < BUF_SIZE - 1 ? e.iov[0].iov_len : BUF_SIZE - 1);
		char reply[BUF_SIZE];
		int n = snprintf(reply, sizeof(reply), "pong to \"%s\"", request) + 1;
		struct iovec *out = &e.iov[e.out_num]; /* the first writable buffer */
		uint32_t written = (uint32_t)n < out->iov_len ? (uint32_t)n : (uint32_t)out->iov_len;
		memcpy(out->iov_base, reply, written);
		rc = vqs_vq_fill(dev, &e, written);
	}
	vqs_mem_read_unlock();
	if (rc)
		return rc;
	vqs_vq_flush(dev); /* publish the used entry */
	if (vqs_vq_need_call(dev))
		printf("device: would signal the call eventfd now\n");
	return 0;
}

int main(void)
{
	if (VQS_CHECK_VERSION()) {
		fprintf(stderr, "quickstart: built for vqsched %s, loaded %s\n", VQS_VERSION_STRING,
			vqs_version_string());
		return 1;
	}
	int rc;
	struct vqs_gmem *gmem = NULL;
	struct vqs_mem *mem = NULL;
	struct vqs_drv_vq *drv = NULL;
	struct vqs_vq *dev = NULL;

	/* Guest memory: one shared arena, registered in the device's memory map. */
	if ((rc = vqs_gmem_create(&gmem, GUEST_BASE, GUEST_SIZE)))
		return fail("vqs_gmem_create", rc);
	struct vqs_mem_region region;
	vqs_gmem_region(gmem, &region);
	if ((rc = vqs_mem_create(&mem)) || (rc = vqs_mem_set(mem, &region, 1)))
		return fail("memory map", rc);

	/* The two halves of one queue, agreeing on size, features and ring addresses. */
	uint64_t features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX);
	struct vqs_drv_vq_config dc = {
		.size = sizeof(dc), .num = QUEUE_SIZE, .features = features, .gmem = gmem};
	if ((rc = vqs_drv_vq_create(&drv, &dc)))
		return fail("vqs_drv_vq_create", rc);
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = QUEUE_SIZE, .features = features,
				   .addr_space = VQS_ADDR_GPA, .mem = mem};
	vqs_drv_vq_addrs(drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	if ((rc = vqs_vq_create(&dev)) || (rc = vqs_vq_configure(dev, &vc)))
		return fail("device queue", rc);

	/* Driver: a readable request buffer and a writable reply buffer, as one chain. */
	const char request[] = "ping";
	uint64_t req_gpa = vqs_gmem_alloc(gmem, sizeof(request), 8);
	uint64_t reply_gpa = vqs_gmem_alloc(gmem, BUF_SIZE, 8);
	if (!req_gpa || !reply_gpa)
		return fail("vqs_gmem_alloc", -ENOMEM);
	memcpy(vqs_gmem_host(gmem, req_gpa, sizeof(request)), request, sizeof(request));
	struct vqs_drv_buf bufs[2] = {{req_gpa, sizeof(request)}, {reply_gpa, BUF_SIZE}};
	static int token; /* anything non-NULL that identifies the request */
	if ((rc = vqs_drv_add(drv, bufs, 1, 1, &token, false)))
		return fail("vqs_drv_add", rc);
	if (vqs_drv_kick_prepare(drv))
		printf("driver: would kick the device now\n");

	if ((rc = serve_one(dev)))
		return fail("device pop/fill", rc);

	uint32_t len = 0;
	if (vqs_drv_get_used(drv, &len) != &token)
		return fail("vqs_drv_get_used", -EIO);
	printf("driver: got %u bytes: %s\n", len, (const char *)vqs_gmem_host(gmem, reply_gpa, len));

	vqs_vq_destroy(dev);
	vqs_drv_vq_destroy(drv);
	vqs_mem_destroy(mem);
	vqs_gmem_destroy(gmem);
	return 0;
}
