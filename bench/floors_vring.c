/* SPDX-License-Identifier: MIT */
/*
 * Reference lines next to the floors: vqsched's own rings, its driver side and its device side,
 * answering one request at a time between two pinned polling threads with nothing in between (no
 * scheduler, no handler, no eventfd). Not floors of the machine: they show what the ring layout
 * itself costs over the minimal ring, so a point's gap to the floor splits into the format's
 * share and the scheduler's.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cpu.h"

struct vref {
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	uint64_t out_gpa, in_gpa;
	uint64_t duration_ns;
	atomic_bool stop;
	bool failed;
	struct hist h;
};

/* Giving up on an answer: the device side is ours and answers in microseconds, so this only
 * fires when a ring broke. */
#define VREF_STALL_NS 1000000000ull

static void vref_driver(void *p)
{
	struct vref *v = p;
	static int token;
	uint64_t end = vqs_now_ns() + v->duration_ns;
	for (;;) {
		struct vqs_drv_buf b[2] = {{v->out_gpa, 64}, {v->in_gpa, 64}};
		uint64_t t0 = vqs_now_ns();
		if (t0 >= end)
			break;
		if (vqs_drv_add(v->drv, b, 1, 1, &token, false)) {
			v->failed = true;
			break;
		}
		vqs_drv_kick_prepare(v->drv); /* the device polls: its answer is not needed */
		uint32_t len;
		unsigned spins = 0;
		while (!vqs_drv_get_used(v->drv, &len)) {
			cpu_relax();
			if (++spins % 4096 == 0 && vqs_now_ns() - t0 > VREF_STALL_NS) {
				v->failed = true;
				goto out;
			}
		}
		hist_add(&v->h, vqs_now_ns() - t0);
	}
out:
	/* release pairs with the device loop's acquire: it stops after our last request */
	atomic_store_explicit(&v->stop, true, memory_order_release);
}

static void vref_device(void *p)
{
	struct vref *v = p;
	struct iovec iov[4];
	unsigned polls = 0;
	vqs_mem_read_lock();
	vqs_vq_disable_notify(v->dev);
	while (!atomic_load_explicit(&v->stop, memory_order_acquire)) {
		struct vqs_elem e = {.iov = iov, .iov_cap = 4};
		if (vqs_vq_pop(v->dev, &e) == 0) {
			vqs_vq_fill(v->dev, &e, 0);
			vqs_vq_flush(v->dev);
			vqs_vq_need_call(v->dev);
		}
		if (++polls % 4096 == 0) { /* short read-side sections, as the scheduler's */
			vqs_mem_read_unlock();
			vqs_mem_read_lock();
		}
	}
	vqs_mem_read_unlock();
}

/* One layout's request/response p50 and p99 in ns; 0 when it could not run. */
static void vref_measure(bool packed, unsigned ring, int a, int b, uint64_t dur_ns, double *p50,
			 double *p99)
{
	*p50 = *p99 = 0;
	struct vqs_gmem *gmem = NULL;
	struct vqs_mem *mem = NULL;
	struct vqs_mem_region reg;
	struct vref *v = calloc(1, sizeof(*v));
	if (!v || vqs_gmem_create(&gmem, 1ull << 32, 1u << 20))
		goto out;
	vqs_gmem_region(gmem, &reg);
	if (vqs_mem_create(&mem) || vqs_mem_set(mem, &reg, 1))
		goto out;
	uint64_t features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
			    (packed ? VQS_BIT(VQS_F_RING_PACKED) : 0);
	struct vqs_drv_vq_config dc = {.size = sizeof(dc), .num = ring, .features = features,
				       .gmem = gmem};
	if (vqs_drv_vq_create(&v->drv, &dc))
		goto out;
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = ring, .features = features,
				   .addr_space = VQS_ADDR_GPA, .mem = mem};
	vqs_drv_vq_addrs(v->drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	if (vqs_vq_create(&v->dev) || vqs_vq_configure(v->dev, &vc))
		goto out;
	vqs_drv_disable_cb(v->drv); /* a polling guest wants no interrupts */
	v->out_gpa = vqs_gmem_alloc(gmem, 64, 64);
	v->in_gpa = vqs_gmem_alloc(gmem, 64, 64);
	if (!v->out_gpa || !v->in_gpa)
		goto out;
	v->duration_ns = dur_ns;
	atomic_init(&v->stop, false);
	hist_reset(&v->h);
	if (cpu_run_pair(b, vref_driver, a, vref_device, v) || v->failed)
		goto out;
	*p50 = hist_quantile(&v->h, 0.5);
	*p99 = hist_quantile(&v->h, 0.99);
out:
	if (v && v->dev)
		vqs_vq_destroy(v->dev);
	if (v && v->drv)
		vqs_drv_vq_destroy(v->drv);
	if (mem)
		vqs_mem_destroy(mem);
	if (gmem)
		vqs_gmem_destroy(gmem);
	free(v);
}

void floors_measure_vring(struct floors *f, unsigned ring, int a, int b, bool quick)
{
	if (ring < 2 || ring > VQS_VQ_MAX_SIZE)
		ring = 256;
	while (ring & (ring - 1)) /* split rings need a power of two */
		ring &= ring - 1;
	uint64_t dur = (quick ? 60 : 200) * 1000000ull;
	vref_measure(false, ring, a, b, dur, &f->vring_rr_p50_ns[0], &f->vring_rr_p99_ns[0]);
	vref_measure(true, ring, a, b, dur, &f->vring_rr_p50_ns[1], &f->vring_rr_p99_ns[1]);
}
