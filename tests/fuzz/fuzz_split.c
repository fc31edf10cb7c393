/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the device side of a split ring over guest memory the input describes.
 *
 * Input: 4 header bytes, then a memory image copied to the start of guest memory (two adjacent
 * regions of 64 KiB, so buffers and indirect tables can span them).
 *   byte 0: queue size 1 << (b % 6)
 *   byte 1: bit 0 INDIRECT_DESC, bit 1 EVENT_IDX, bit 2 NOTIFY_ON_EMPTY, bit 3 restore the
 *           inflight region whose image is at IMG_INFLIGHT, bit 4 tiny iovec storage first
 *   byte 2: max_iov (0: the default)
 *   byte 3: bit 0 give the last popped chain back and pop again
 * The rings sit at fixed offsets of the image (IMG_DESC, IMG_AVAIL, IMG_USED). Everything popped
 * has its buffers read and written (out of bounds would fault), then is filled and flushed.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <vqsched/vqsched.h>

#define BASE 0x100000ull
#define SPAN 0x10000u
#define HDR 4
#define IMG_DESC 0x0
#define IMG_AVAIL 0x200
#define IMG_USED 0x300
#define IMG_INFLIGHT 0x800
#define MAX_NUM 32
#define MAX_POPS (2 * MAX_NUM)
#define BIG_IOV 1024

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct vqs_gmem *g[2];
static struct vqs_mem *mem;
static uint8_t *host[2];
static uint64_t *inflight; /* 8-aligned private copy of the inflight image */
static struct iovec iov_store[MAX_POPS][16];
static struct iovec big_iov[BIG_IOV];

/* Breaks are the expected outcome of most inputs: formatting their warnings would dominate. */
static void drop_log(enum vqs_log_level level, const char *msg, void *opaque)
{
	(void)level;
	(void)msg;
	(void)opaque;
}

static void init_once(void)
{
	vqs_set_log(drop_log, NULL, VQS_LOG_ERR);
	struct vqs_mem_region r[2];
	for (unsigned i = 0; i < 2; i++) {
		if (vqs_gmem_create(&g[i], BASE + i * SPAN, SPAN))
			abort();
		vqs_gmem_region(g[i], &r[i]);
		host[i] = vqs_gmem_host(g[i], BASE + i * SPAN, SPAN);
	}
	if (vqs_mem_create(&mem) || vqs_mem_set(mem, r, 2))
		abort();
	inflight = calloc(1, vqs_vq_inflight_size(MAX_NUM, false));
	if (!inflight)
		abort();
}

/* Use the buffers as a device would: read what is readable, write what is writable. */
static void touch(const struct vqs_elem *e)
{
	volatile uint8_t sink = 0;
	for (unsigned i = 0; i < e->out_num; i++)
		for (size_t j = 0; j < e->iov[i].iov_len; j += 512)
			sink ^= ((const uint8_t *)e->iov[i].iov_base)[j];
	for (unsigned i = e->out_num; i < e->out_num + e->in_num; i++)
		memset(e->iov[i].iov_base, 0x5a, e->iov[i].iov_len);
	(void)sink;
}

static int pop(struct vqs_vq *vq, struct vqs_elem *e, struct iovec *iov, bool tiny)
{
	*e = (struct vqs_elem){.iov = iov, .iov_cap = tiny ? 1 : 16};
	int rc = vqs_vq_pop(vq, e);
	if (rc == -ENOBUFS) {
		*e = (struct vqs_elem){.iov = big_iov, .iov_cap = BIG_IOV};
		rc = vqs_vq_pop(vq, e);
	}
	if (rc == 0)
		touch(e);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!mem)
		init_once();
	if (size < HDR)
		return 0;
	const uint8_t *img = data + HDR;
	size_t len = size - HDR;
	for (unsigned i = 0; i < 2; i++) {
		size_t off = (size_t)i * SPAN, n = len > off ? len - off : 0;
		n = n > SPAN ? SPAN : n;
		memcpy(host[i], img + off, n);
		memset(host[i] + n, 0, SPAN - n);
	}
	unsigned num = 1u << (data[0] % 6);
	uint8_t flags = data[1];
	struct vqs_vq_config cfg = {
		.size = sizeof(cfg), .num = num, .addr_space = VQS_ADDR_GPA, .mem = mem,
		.desc_addr = BASE + IMG_DESC, .driver_addr = BASE + IMG_AVAIL,
		.device_addr = BASE + IMG_USED, .max_iov = data[2]};
	cfg.features = (flags & 1 ? VQS_BIT(VQS_F_INDIRECT_DESC) : 0) |
		       (flags & 2 ? VQS_BIT(VQS_F_EVENT_IDX) : 0) |
		       (flags & 4 ? VQS_BIT(VQS_F_NOTIFY_ON_EMPTY) : 0);
	struct vqs_vq *vq;
	if (vqs_vq_create(&vq))
		abort();
	if (vqs_vq_configure(vq, &cfg))
		abort();
	if (flags & 8) {
		size_t isz = vqs_vq_inflight_size(num, false);
		memcpy(inflight, host[0] + IMG_INFLIGHT, isz);
		vqs_vq_set_inflight(vq, inflight, isz, true);
	}

	vqs_mem_read_lock();
	struct vqs_elem e[MAX_POPS];
	unsigned n = 0;
	while (n < MAX_POPS && pop(vq, &e[n], iov_store[n], flags & 16) == 0)
		n++;
	if ((data[3] & 1) && n > 0 && vqs_vq_unpop(vq, &e[n - 1], 1) == 0 &&
	    pop(vq, &e[n - 1], iov_store[n - 1], false) != 0)
		n--;
	vqs_vq_disable_notify(vq);
	for (unsigned i = n; i-- > 0;)
		vqs_vq_fill(vq, &e[i], e[i].in_len / 2);
	vqs_vq_flush(vq);
	vqs_vq_need_call(vq);
	vqs_vq_enable_notify(vq);
	vqs_vq_avail_count(vq);
	struct vqs_vq_state st;
	vqs_vq_get_state(vq, &st);
	vqs_mem_read_unlock();
	vqs_vq_destroy(vq);
	return 0;
}
