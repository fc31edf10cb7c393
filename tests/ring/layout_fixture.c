/* SPDX-License-Identifier: MIT */
#include "layout_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

void lfx_init(struct lfx *c, bool packed, unsigned num, uint64_t features, size_t size2)
{
	memset(c, 0, sizeof(*c));
	tmem_init(&c->m, FX_GPA_BASE, FX_ARENA);
	assert_int_equal(vqs_gmem_create(&c->g2, LFX_BORDER, size2), 0);
	struct vqs_mem_region r2;
	vqs_gmem_region(c->g2, &r2);
	assert_int_equal(vqs_mem_add(c->m.mem, &r2), 0);
	c->packed = packed;
	if (packed) {
		pfx_ring_init(&c->pk, &c->m, num, features);
		c->vq = c->pk.vq;
	} else {
		fx_ring_init(&c->split, &c->m, num, features);
		c->vq = c->split.vq;
	}
}

void lfx_fini(struct lfx *c)
{
	if (c->packed)
		pfx_ring_fini(&c->pk);
	else
		fx_ring_fini(&c->split);
	tmem_fini(&c->m);
	vqs_gmem_destroy(c->g2);
}

static int setup(void **state, bool packed)
{
	struct lfx *c = test_calloc(1, sizeof(*c));
	lfx_init(c, packed, LFX_NUM, 0, 1 << 16);
	*state = c;
	return 0;
}

int lfx_setup_split(void **state) { return setup(state, false); }
int lfx_setup_packed(void **state) { return setup(state, true); }

int lfx_teardown(void **state)
{
	lfx_fini(*state);
	test_free(*state);
	return 0;
}

uint8_t *lfx_host(struct lfx *c, uint64_t gpa)
{
	return gpa >= LFX_BORDER ? vqs_gmem_host(c->g2, gpa, 1) : vqs_gmem_host(c->m.gmem, gpa, 1);
}

void lfx_config(const struct lfx *c, struct vqs_vq_config *cfg)
{
	if (c->packed)
		pfx_ring_config(&c->pk, cfg);
	else
		fx_ring_config(&c->split, cfg);
}

int lfx_pop(struct lfx *c, struct vqs_elem *e, struct iovec *iov, unsigned cap)
{
	return c->packed ? pfx_pop(c->vq, e, iov, cap) : fx_pop(c->vq, e, iov, cap);
}
