/* SPDX-License-Identifier: MIT */
#include "fuzz_guest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POPS (2 * FUZZ_MAX_NUM)

static struct vqs_gmem *gmem[2];
static struct vqs_mem *mem;
static uint8_t *host[2];
static uint64_t *inflight; /* 8-aligned private copy of the inflight image */
static struct iovec iov_store[MAX_POPS][16];

/* Breaks are the expected outcome of most inputs: formatting their warnings would dominate. */
static void drop_log(enum vqs_log_level level, const char *msg, void *opaque)
{
	(void)level;
	(void)msg;
	(void)opaque;
}

static size_t inflight_cap(void)
{
	size_t split = vqs_vq_inflight_size(FUZZ_MAX_NUM, false);
	size_t packed = vqs_vq_inflight_size(FUZZ_MAX_NUM, true);
	return split > packed ? split : packed;
}

static void init_once(void)
{
	vqs_set_log(drop_log, NULL, VQS_LOG_ERR);
	struct vqs_mem_region r[2];
	for (unsigned i = 0; i < 2; i++) {
		if (vqs_gmem_create(&gmem[i], FUZZ_BASE + i * FUZZ_SPAN, FUZZ_SPAN))
			abort();
		vqs_gmem_region(gmem[i], &r[i]);
		host[i] = vqs_gmem_host(gmem[i], FUZZ_BASE + i * FUZZ_SPAN, FUZZ_SPAN);
	}
	if (vqs_mem_create(&mem) || vqs_mem_set(mem, r, 2))
		abort();
	inflight = calloc(1, inflight_cap());
	if (!inflight)
		abort();
}

uint64_t fuzz_ring_features(uint8_t bits)
{
	return (bits & 1 ? VQS_BIT(VQS_F_INDIRECT_DESC) : 0) |
	       (bits & 2 ? VQS_BIT(VQS_F_EVENT_IDX) : 0);
}

static void load(const uint8_t *img, size_t len)
{
	if (!mem)
		init_once();
	for (unsigned i = 0; i < 2; i++) {
		size_t off = (size_t)i * FUZZ_SPAN, n = len > off ? len - off : 0;
		n = n > FUZZ_SPAN ? FUZZ_SPAN : n;
		memcpy(host[i], img + off, n);
		memset(host[i] + n, 0, FUZZ_SPAN - n);
	}
}

struct vqs_vq *fuzz_vq_load(struct vqs_vq_config *cfg, const uint8_t *img, size_t len)
{
	load(img, len);
	cfg->size = sizeof(*cfg);
	cfg->addr_space = VQS_ADDR_GPA;
	cfg->mem = mem;
	cfg->desc_addr = FUZZ_BASE + FUZZ_IMG_DESC;
	cfg->driver_addr = FUZZ_BASE + FUZZ_IMG_DRIVER;
	cfg->device_addr = FUZZ_BASE + FUZZ_IMG_DEVICE;
	struct vqs_vq *vq;
	if (vqs_vq_create(&vq) || vqs_vq_configure(vq, cfg))
		abort();
	return vq;
}

void fuzz_restore_inflight(struct vqs_vq *vq, unsigned num, bool packed)
{
	size_t isz = vqs_vq_inflight_size(num, packed);
	memcpy(inflight, host[0] + FUZZ_IMG_INFLIGHT, isz);
	vqs_vq_set_inflight(vq, inflight, isz, true);
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

/* A chain beyond the element's storage (1 iovec when tiny) is built in the queue's long-chain
 * area; one that waits for it (-EBUSY) ends the round like an empty ring. */
static int pop(struct vqs_vq *vq, struct vqs_elem *e, struct iovec *iov, bool tiny)
{
	*e = (struct vqs_elem){.iov = iov, .iov_cap = tiny ? 1 : 16};
	int rc = vqs_vq_pop(vq, e);
	if (rc == 0)
		touch(e);
	return rc;
}

/* The data path's way: one ring session pops a batch (up to half of MAX_POPS). */
static unsigned session_pop(struct vqs_vq *vq, struct vqs_elem *e, bool tiny)
{
	for (unsigned i = 0; i < MAX_POPS / 2; i++)
		e[i] = (struct vqs_elem){.iov = iov_store[i], .iov_cap = tiny ? 1 : 16};
	struct vqs_vq_session ss;
	int n = vqs_vq_session_begin(vq, &ss);
	if (n > 0)
		n = vqs_vq_session_pop(&ss, &(struct vqs_pop_to){.base = e, .stride = sizeof(e[0])},
				       MAX_POPS / 2);
	for (int i = 0; i < n; i++)
		touch(&e[i]);
	vqs_vq_session_pause(&ss);
	return n > 0 ? (unsigned)n : 0;
}

void fuzz_round_trip(struct vqs_vq *vq, bool tiny_iov, bool unpop_last)
{
	struct vqs_elem e[MAX_POPS];
	vqs_mem_read_lock();
	unsigned n = session_pop(vq, e, tiny_iov);
	while (n < MAX_POPS && pop(vq, &e[n], iov_store[n], tiny_iov) == 0)
		n++;
	if (unpop_last && n > 0 && vqs_vq_unpop(vq, &e[n - 1], 1) == 0 &&
	    pop(vq, &e[n - 1], iov_store[n - 1], false) != 0)
		n--;
	vqs_vq_disable_notify(vq);
	/* completions in reverse, the older half one at a time, the rest in one session */
	unsigned half = n / 2;
	for (unsigned i = n; i-- > half;)
		vqs_vq_fill(vq, &e[i], e[i].in_len / 2);
	vqs_vq_flush(vq);
	vqs_vq_need_call(vq);
	const struct vqs_elem *pe[MAX_POPS];
	uint32_t written[MAX_POPS];
	for (unsigned i = 0; i < half; i++) {
		pe[i] = &e[half - 1 - i];
		written[i] = pe[i]->in_len / 2;
	}
	struct vqs_vq_session ss = {.vq = vq};
	bool call;
	vqs_vq_session_fill(&ss, pe, written, half);
	vqs_vq_session_end(&ss, &call);
	vqs_vq_enable_notify(vq);
	vqs_vq_avail_count(vq);
	vqs_mem_read_unlock();
	struct vqs_vq_state st;
	vqs_vq_get_state(vq, &st);
}
