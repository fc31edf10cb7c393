/* SPDX-License-Identifier: MIT */
#include "packed_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

void pfx_ring_config(const struct pfx_ring *r, struct vqs_vq_config *c)
{
	tmem_vq_config(r->m, r->num, r->features, r->desc_gpa, r->driver_gpa, r->device_gpa, c);
}

void pfx_ring_init(struct pfx_ring *r, struct tmem *m, unsigned num, uint64_t features)
{
	memset(r, 0, sizeof(*r));
	r->m = m;
	r->num = num;
	r->features = features | PFX_PACKED;
	r->desc_gpa = tmem_alloc(m, vqs_vring_packed_desc_size(num), VQS_VRING_PACKED_DESC_ALIGN);
	r->driver_gpa = tmem_alloc(m, 4, VQS_VRING_PACKED_EVENT_ALIGN);
	r->device_gpa = tmem_alloc(m, 4, VQS_VRING_PACKED_EVENT_ALIGN);
	r->desc = tmem_host(m, r->desc_gpa, vqs_vring_packed_desc_size(num));
	r->driver_event = tmem_host(m, r->driver_gpa, 4);
	r->device_event = tmem_host(m, r->device_gpa, 4);
	r->avail_wrap = r->used_wrap = true;
	struct vqs_vq_config c;
	pfx_ring_config(r, &c);
	r->vq = tmem_vq_create(&c);
}

void pfx_ring_fini(struct pfx_ring *r)
{
	vqs_vq_destroy(r->vq);
	r->vq = NULL;
}

uint16_t pfx_avail_bits(bool wrap)
{
	return wrap ? PFX_F_AVAIL : PFX_F_USED;
}

void pfx_raw(struct pfx_ring *r, unsigned i, uint64_t addr, uint32_t len, uint16_t id,
	     uint16_t flags)
{
	struct vqs_vring_packed_desc *d = &r->desc[i];
	d->addr = addr;
	d->len = len;
	d->id = id;
	/* Release: pairs with the device's acquire load of the flags in pop. */
	atomic_store_explicit((_Atomic uint16_t *)&d->flags, flags, memory_order_release);
}

void pfx_chain(struct pfx_ring *r, const struct pfx_desc *d, unsigned n)
{
	unsigned head = r->avail_idx;
	uint16_t head_flags = 0;
	for (unsigned k = 0; k < n; k++) {
		uint16_t f = (uint16_t)(d[k].flags | (k + 1 < n ? VQS_VRING_DESC_F_NEXT : 0) |
					pfx_avail_bits(r->avail_wrap));
		if (k == 0) {
			r->desc[head] = (struct vqs_vring_packed_desc){
				.addr = d[k].addr, .len = d[k].len, .id = d[k].id,
				.flags = r->desc[head].flags};
			head_flags = f;
		} else {
			pfx_raw(r, r->avail_idx, d[k].addr, d[k].len, d[k].id, f);
		}
		if (++r->avail_idx == r->num) {
			r->avail_idx = 0;
			r->avail_wrap = !r->avail_wrap;
		}
	}
	pfx_raw(r, head, d[0].addr, d[0].len, d[0].id, head_flags);
}

void pfx_simple(struct pfx_ring *r, uint16_t id, uint32_t len, bool write)
{
	struct pfx_desc d = {tmem_buf(r->m, len, (uint8_t)id), len, id,
			     write ? VQS_VRING_DESC_F_WRITE : 0};
	pfx_chain(r, &d, 1);
}

uint16_t pfx_flags(const struct pfx_ring *r, unsigned i)
{
	/* Acquire: pairs with the device's release store of used flags in flush. */
	return atomic_load_explicit((_Atomic uint16_t *)&r->desc[i].flags, memory_order_acquire);
}

bool pfx_get_used(struct pfx_ring *r, unsigned ndescs, uint16_t *id, uint32_t *len)
{
	uint16_t f = pfx_flags(r, r->used_idx);
	bool avail = f & PFX_F_AVAIL, used = f & PFX_F_USED;
	if (avail != r->used_wrap || used != r->used_wrap)
		return false;
	*id = r->desc[r->used_idx].id;
	*len = r->desc[r->used_idx].len;
	r->used_idx = (uint16_t)(r->used_idx + ndescs);
	if (r->used_idx >= r->num) {
		r->used_idx = (uint16_t)(r->used_idx - r->num);
		r->used_wrap = !r->used_wrap;
	}
	return true;
}

void pfx_set_driver_event(struct pfx_ring *r, uint16_t off_wrap, uint16_t flags)
{
	uint32_t w = (uint32_t)off_wrap | (uint32_t)flags << 16;
	atomic_store_explicit((_Atomic uint32_t *)(void *)r->driver_event, w, memory_order_relaxed);
	/* Pairs with the device's full barrier in need_call. */
	atomic_thread_fence(memory_order_seq_cst);
}

void pfx_device_event(const struct pfx_ring *r, uint16_t *off_wrap, uint16_t *flags)
{
	uint32_t w = atomic_load_explicit((_Atomic uint32_t *)(void *)r->device_event,
					  memory_order_relaxed);
	*off_wrap = (uint16_t)w;
	*flags = (uint16_t)(w >> 16);
}

int pfx_pop(struct vqs_vq *vq, struct vqs_elem *e, struct iovec *iov, unsigned cap)
{
	memset(e, 0, sizeof(*e));
	e->iov = iov;
	e->iov_cap = (uint16_t)cap;
	vqs_mem_read_lock();
	int rc = vqs_vq_pop(vq, e);
	vqs_mem_read_unlock();
	return rc;
}

uint16_t pfx_complete_one(struct pfx_ring *r, uint32_t written)
{
	struct iovec iov[8];
	struct vqs_elem e;
	assert_int_equal(pfx_pop(r->vq, &e, iov, 8), 0);
	assert_int_equal(vqs_vq_fill(r->vq, &e, written), 0);
	assert_int_equal(vqs_vq_flush(r->vq), 1);
	return e.id;
}
