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
	/* Fixed-size stores the compiler inlines (this runs per frame), num_buffers little-endian
	 * as virtio 1.x lays it out. */
	memset(out, 0, SW_NET_HDR_LEGACY);
	if (hdr_len == SW_NET_HDR_MAX) {
		out[SW_NET_HDR_LEGACY] = (uint8_t)num_buffers;
		out[SW_NET_HDR_LEGACY + 1] = (uint8_t)(num_buffers >> 8);
	}
}
