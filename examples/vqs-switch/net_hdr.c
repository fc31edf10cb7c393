/* SPDX-License-Identifier: MIT */
#include <vqsched/vring.h>

#include "net_hdr.h"

size_t sw_net_hdr_len(uint64_t features)
{
	/* VERSION_1 always has num_buffers (5.1.6); legacy only with MRG_RXBUF. */
	if (features & (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(SW_NET_F_MRG_RXBUF)))
		return SW_NET_HDR_MAX;
	return SW_NET_HDR_LEGACY;
}
