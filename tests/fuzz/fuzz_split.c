/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the device side of a split ring over guest memory the input describes.
 *
 * Input: 4 header bytes, then the guest memory image (fuzz_guest.h).
 *   byte 0: queue size 1 << (b % 6)
 *   byte 1: bit 0 INDIRECT_DESC, bit 1 EVENT_IDX, bit 2 NOTIFY_ON_EMPTY, bit 3 restore the
 *           inflight region whose image is at FUZZ_IMG_INFLIGHT, bit 4 tiny iovec storage first
 *   byte 2: max_iov (0: the default)
 *   byte 3: bit 0 give the last popped chain back and pop again
 * The rings sit at the image offsets fuzz_guest.h fixes; one round trip (fuzz_round_trip) pops,
 * uses, fills and flushes whatever they hold.
 */
#include <stdint.h>
#include <vqsched/vqsched.h>

#include "fuzz_guest.h"

#define HDR 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR)
		return 0;
	uint8_t flags = data[1];
	struct vqs_vq_config cfg = {.num = 1u << (data[0] % 6), .max_iov = data[2]};
	cfg.features = fuzz_ring_features(flags) | (flags & 4 ? VQS_BIT(VQS_F_NOTIFY_ON_EMPTY) : 0);
	struct vqs_vq *vq = fuzz_vq_load(&cfg, data + HDR, size - HDR);
	if (flags & 8)
		fuzz_restore_inflight(vq, cfg.num, false);
	fuzz_round_trip(vq, flags & 16, data[3] & 1);
	vqs_vq_destroy(vq);
	return 0;
}
