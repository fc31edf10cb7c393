/* SPDX-License-Identifier: MIT */
#include "ring_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdatomic.h>
#include <string.h>
#include <cmocka.h>

void fx_ring_config(const struct fx_ring *r, struct vqs_vq_config *c)
{
	tmem_vq_config(r->m, r->num, r->features, r->desc_gpa, r->avail_gpa, r->used_gpa, c);
}

void fx_ring_init(struct fx_ring *r, struct tmem *m, unsigned num, uint64_t features)
{
	memset(r, 0, sizeof(*r));
	r->m = m;
	r->num = num;
	r->features = features;
	r->desc_gpa = tmem_alloc(m, vqs_vring_desc_size(num), VQS_VRING_DESC_ALIGN);
	r->avail_gpa = tmem_alloc(m, vqs_vring_avail_size(num), VQS_VRING_AVAIL_ALIGN);
	r->used_gpa = tmem_alloc(m, vqs_vring_used_size(num), VQS_VRING_USED_ALIGN);
	r->desc = tmem_host(m, r->desc_gpa, vqs_vring_desc_size(num));
	r->avail = tmem_host(m, r->avail_gpa, vqs_vring_avail_size(num));
	r->used = tmem_host(m, r->used_gpa, vqs_vring_used_size(num));
	struct vqs_vq_config c;
	fx_ring_config(r, &c);
	r->vq = tmem_vq_create(&c);
}

void fx_ring_fini(struct fx_ring *r)
{
	vqs_vq_destroy(r->vq);
	r->vq = NULL;
}

void fx_desc(struct fx_ring *r, unsigned i, uint64_t addr, uint32_t len, uint16_t flags,
	     uint16_t next)
{
	r->desc[i] = (struct vqs_vring_desc){.addr = addr, .len = len, .flags = flags, .next = next};
}

void fx_set_avail_idx(struct fx_ring *r, uint16_t idx)
{
	r->avail_idx = idx;
	/* Release: the device's acquire load of avail idx pairs with it. */
	atomic_store_explicit((_Atomic uint16_t *)&r->avail->idx, idx, memory_order_release);
}

void fx_publish(struct fx_ring *r, uint16_t head)
{
	r->avail->ring[r->avail_idx & (r->num - 1)] = head;
	fx_set_avail_idx(r, (uint16_t)(r->avail_idx + 1));
}

uint16_t fx_used_idx(const struct fx_ring *r)
{
	/* Acquire pairs with the device's release store in flush. */
	return atomic_load_explicit((_Atomic uint16_t *)&r->used->idx, memory_order_acquire);
}

void fx_set_used_event(struct fx_ring *r, uint16_t v)
{
	atomic_store_explicit((_Atomic uint16_t *)&r->avail->ring[r->num], v, memory_order_relaxed);
}

uint16_t fx_avail_event(const struct fx_ring *r)
{
	return atomic_load_explicit((_Atomic uint16_t *)(void *)&r->used->ring[r->num],
				    memory_order_relaxed);
}

void fx_simple_chain(struct fx_ring *r, unsigned i, uint32_t len, bool write)
{
	fx_desc(r, i, tmem_buf(r->m, len, (uint8_t)i), len, write ? VQS_VRING_DESC_F_WRITE : 0, 0);
	fx_publish(r, (uint16_t)i);
}

int fx_pop(struct vqs_vq *vq, struct vqs_elem *e, struct iovec *iov, unsigned cap)
{
	memset(e, 0, sizeof(*e));
	e->iov = iov;
	e->iov_cap = (uint16_t)cap;
	vqs_mem_read_lock();
	int rc = vqs_vq_pop(vq, e);
	vqs_mem_read_unlock();
	return rc;
}

struct fx_ctx *fx_ctx_new(void **state, unsigned num, uint64_t features)
{
	static struct fx_ctx c;
	memset(&c, 0, sizeof(c));
	tmem_init(&c.m, FX_GPA_BASE, FX_ARENA);
	fx_ring_init(&c.r, &c.m, num, features);
	*state = &c;
	return &c;
}

int fx_ctx_teardown(void **state)
{
	struct fx_ctx *c = *state;
	if (c) {
		fx_ring_fini(&c->r);
		tmem_fini(&c->m);
	}
	return 0;
}
