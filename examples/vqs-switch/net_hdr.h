/* SPDX-License-Identifier: MIT */
/*
 * The virtio-net header in front of every frame on both rings (virtio 1.x 5.1.6): its length
 * for a feature set, and the header the switch writes in front of a received frame. The switch
 * offers no checksum or segmentation offloads, so every frame it sees is complete and every
 * header it writes says "nothing to do".
 */
#ifndef VQS_SWITCH_NET_HDR_H
#define VQS_SWITCH_NET_HDR_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Feature bits of virtio-net the switch cares about (5.1.3). */
#define SW_NET_F_MRG_RXBUF 15
#define SW_NET_F_GUEST_ANNOUNCE 21

#define SW_NET_HDR_LEGACY 10u /* neither VERSION_1 nor MRG_RXBUF: no num_buffers field */
#define SW_NET_HDR_MAX 12u

struct sw_net_hdr {
	uint8_t flags;
	uint8_t gso_type;
	uint16_t hdr_len;
	uint16_t gso_size;
	uint16_t csum_start;
	uint16_t csum_offset;
	uint16_t num_buffers; /* only with VERSION_1 or MRG_RXBUF */
};

/* Header bytes in front of each frame for negotiated `features`. */
size_t sw_net_hdr_len(uint64_t features);
/* Write the receive header for a frame spread over num_buffers buffers into out[hdr_len].
 * Inline: it runs per frame, and a call into another unit cost as much as the stores. */
static inline void sw_net_hdr_rx(uint8_t *out, size_t hdr_len, uint16_t num_buffers)
{
	/* Fixed-size stores, num_buffers little-endian as virtio 1.x lays it out. */
	memset(out, 0, SW_NET_HDR_LEGACY);
	if (hdr_len == SW_NET_HDR_MAX) {
		out[SW_NET_HDR_LEGACY] = (uint8_t)num_buffers;
		out[SW_NET_HDR_LEGACY + 1] = (uint8_t)(num_buffers >> 8);
	}
}

#endif
