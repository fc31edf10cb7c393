/* SPDX-License-Identifier: MIT */
#include "guest_mem.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

void tmem_init(struct tmem *m, uint64_t gpa_base, size_t size)
{
	assert_int_equal(vqs_gmem_create(&m->gmem, gpa_base, size), 0);
	struct vqs_mem_region reg;
	vqs_gmem_region(m->gmem, &reg);
	assert_int_equal(vqs_mem_create(&m->mem), 0);
	assert_int_equal(vqs_mem_set(m->mem, &reg, 1), 0);
}

void tmem_fini(struct tmem *m)
{
	vqs_mem_destroy(m->mem);
	vqs_gmem_destroy(m->gmem);
}

uint64_t tmem_alloc(struct tmem *m, size_t len, size_t align)
{
	uint64_t gpa = vqs_gmem_alloc(m->gmem, len, align);
	assert_true(gpa != 0);
	return gpa;
}

void *tmem_host(struct tmem *m, uint64_t gpa, size_t len)
{
	void *p = vqs_gmem_host(m->gmem, gpa, len);
	assert_non_null(p);
	return p;
}

uint64_t tmem_buf(struct tmem *m, uint32_t len, uint8_t fill)
{
	uint64_t gpa = tmem_alloc(m, len ? len : 1, 8);
	memset(tmem_host(m, gpa, len ? len : 1), fill, len);
	return gpa;
}

void tmem_vq_config(const struct tmem *m, unsigned num, uint64_t features, uint64_t desc_gpa,
		    uint64_t driver_gpa, uint64_t device_gpa, struct vqs_vq_config *c)
{
	*c = (struct vqs_vq_config){.size = sizeof(*c), .num = num, .features = features,
				    .addr_space = VQS_ADDR_GPA, .desc_addr = desc_gpa,
				    .driver_addr = driver_gpa, .device_addr = device_gpa,
				    .mem = m->mem};
}

struct vqs_vq *tmem_vq_create(const struct vqs_vq_config *c)
{
	struct vqs_vq *vq = NULL;
	assert_int_equal(vqs_vq_create(&vq), 0);
	assert_int_equal(vqs_vq_configure(vq, c), 0);
	return vq;
}
