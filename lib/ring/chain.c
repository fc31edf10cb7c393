/* SPDX-License-Identifier: MIT */
/*
 * The chain builder both ring layouts share: descriptor snapshots in, iovecs out. Every rule that
 * does not depend on the layout is enforced here, so split and packed cannot disagree on them.
 */
#include "ring/vq_internal.h"

#include <errno.h>

void vqs_chain_begin(struct vqs_chain *c, struct vqs_elem *e, unsigned max_iov, unsigned *hint)
{
	c->e = e;
	c->hint = hint;
	c->max_iov = max_iov;
	c->out_len = 0;
	c->in_len = 0;
	c->niov = 0;
	c->seen_write = false;
	c->short_storage = false;
	e->out_num = 0;
	e->in_num = 0;
}

enum vqs_vq_err vqs_chain_add(struct vqs_chain *c, const struct vqs_mem_table *t, uint64_t addr,
			      uint32_t len, bool write)
{
	/* 2.7.4.2: device-readable descriptors come before device-writable ones. */
	if (write)
		c->seen_write = true;
	else if (c->seen_write)
		return VQS_VQ_ERR_WRITE_ORDER;
	if (addr + len < addr)
		return VQS_VQ_ERR_ADDR;
	/* 2.7.5: a chain carries at most 2^32 - 1 bytes (out_len/in_len are 32-bit). */
	if (c->out_len + c->in_len + len > UINT32_MAX)
		return VQS_VQ_ERR_CHAIN_BYTES;
	if (len == 0)
		return VQS_VQ_OK;

	unsigned storage = c->e->iov_cap;
	unsigned limit = c->max_iov < storage ? c->max_iov : storage;
	int n = c->niov < limit ? vqs_mem_translate(t, addr, len, c->e->iov + c->niov,
						    limit - c->niov, c->hint)
				: -ENOBUFS;
	if (n == -ENOBUFS) {
		/* Beyond the device's limit it is the guest's fault; beyond the caller's storage
		 * (which is below the limit) the caller retries with more. */
		if (limit == c->max_iov)
			return VQS_VQ_ERR_IOV_LIMIT;
		c->short_storage = true;
		return VQS_VQ_OK;
	}
	if (n < 0)
		return VQS_VQ_ERR_ADDR;
	c->niov += (unsigned)n;
	if (write) {
		c->in_len += len;
		c->e->in_num += (uint16_t)n;
	} else {
		c->out_len += len;
		c->e->out_num += (uint16_t)n;
	}
	return VQS_VQ_OK;
}

void vqs_chain_end(struct vqs_chain *c)
{
	c->e->out_len = (uint32_t)c->out_len;
	c->e->in_len = (uint32_t)c->in_len;
}
