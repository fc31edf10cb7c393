/* SPDX-License-Identifier: MIT */
/*
 * The chain builder's general case (see vqs_chain_add in vq_internal.h): a buffer that is not one
 * iovec inside either hinted region, or that does not fit where the chain is built.
 */
#include "ring/vq_internal.h"

#include <errno.h>
#include <string.h>

/* Continue the chain in the free part of the long-chain area: what the element's storage holds
 * moves there, and e->iov with it. False when that part cannot take even that much. */
static bool move_to_area(struct vqs_chain *c)
{
	struct vqs_long_area *lg = &c->vq->lg;
	unsigned room = c->vq->cfg.max_iov - lg->used;
	if (room <= c->niov)
		return false;
	struct iovec *dst = lg->iov + lg->used;
	if (c->niov)
		memcpy(dst, c->e->iov, c->niov * sizeof(*dst));
	c->e->iov = dst;
	c->limit = room;
	c->in_area = true;
	return true;
}

enum vqs_vq_err vqs_chain_add_general(struct vqs_chain *c, const struct vqs_mem_table *t,
				      uint64_t addr, uint32_t len, bool write)
{
	for (;;) {
		const unsigned before = c->vq->hint;
		int n = c->niov < c->limit ? vqs_mem_translate(t, addr, len, c->e->iov + c->niov,
							       c->limit - c->niov, &c->vq->hint)
					   : -ENOBUFS;
		/* the region left becomes the second window: buffers alternating between two
		 * regions then find both in the pop's windows */
		if (c->vq->hint != before)
			c->vq->hint2 = before;
		if (n >= 0) {
			vqs_chain_count(c, len, (unsigned)n, write);
			return VQS_VQ_OK;
		}
		if (n != -ENOBUFS)
			return VQS_VQ_ERR_ADDR;
		/* Beyond the device's limit it is the guest's fault. Beyond the element's storage
		 * the chain goes on in the area; beyond what the chains in flight left of it, it
		 * waits for them. */
		if (c->limit == c->vq->cfg.max_iov)
			return VQS_VQ_ERR_IOV_LIMIT;
		if (c->in_area || !move_to_area(c)) {
			c->must_wait = true;
			return VQS_VQ_OK;
		}
	}
}
