/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <vqsched/vring.h>

#include "net_hdr.h"

size_t sw_net_hdr_len(uint64_t features)
{
	/* VERSION_1 always has num_buffers (5.1.6); legacy only with MRG_RXBUF. */
	if (features & (VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(SW_NET_F_MRG_RXBUF)))
		return SW_NET_HDR_MAX;
	return SW_NET_HDR_LEGACY;
}

void sw_net_hdr_rx(uint8_t *out, size_t hdr_len, uint16_t num_buffers)
{
	struct sw_net_hdr h = { .num_buffers = num_buffers }; /* little-endian host */
	memcpy(out, &h, hdr_len);
}
