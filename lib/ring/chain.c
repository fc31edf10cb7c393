/* SPDX-License-Identifier: MIT */
/*
 * The chain builder's general case (see vqs_chain_add in vq_internal.h): a buffer that is not one
 * iovec inside the region of the buffer before it.
 */
#include "ring/vq_internal.h"

#include <errno.h>

enum vqs_vq_err vqs_chain_add_general(struct vqs_chain *c, const struct vqs_mem_table *t,
				      uint64_t addr, uint32_t len, bool write)
{
	int n = c->niov < c->limit ? vqs_mem_translate(t, addr, len, c->e->iov + c->niov,
						       c->limit - c->niov, c->hint)
				   : -ENOBUFS;
	if (n == -ENOBUFS) {
		/* Beyond the device's limit it is the guest's fault; beyond the caller's storage
		 * (which is below the limit) the caller retries with more. */
		if (c->limit == c->max_iov)
			return VQS_VQ_ERR_IOV_LIMIT;
		c->short_storage = true;
		return VQS_VQ_OK;
	}
	if (n < 0)
		return VQS_VQ_ERR_ADDR;
	vqs_chain_count(c, len, (unsigned)n, write);
	return VQS_VQ_OK;
}
