/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the device side of a packed ring over guest memory the input describes.
 *
 * Input: 5 header bytes, then the guest memory image (fuzz_guest.h).
 *   byte 0: queue size 1 + b % FUZZ_MAX_NUM (packed rings need not be powers of two)
 *   byte 1: bit 0 INDIRECT_DESC, bit 1 EVENT_IDX, bit 2 restore the inflight region whose image
 *           is at FUZZ_IMG_INFLIGHT, bit 3 tiny iovec storage first, bit 4 IN_ORDER
 *   byte 2: max_iov (0: the default)
 *   byte 3: bit 0 give the last popped chain back and pop again, bit 1 start at slot byte 4
 *           with wrap counters from bits 2 (avail) and 3 (used), bit 4 a second round trip
 *   byte 4: start slot (% size)
 * The ring areas sit at the image offsets fuzz_guest.h fixes; each round trip (fuzz_round_trip)
 * pops, uses, fills and flushes whatever they hold.
 */
#include <stdint.h>
#include <stdlib.h>
#include <vqsched/vqsched.h>

#include "fuzz_guest.h"

#define HDR 5

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Resume at one slot with the given wrap counters, as after a reconnect. */
static void start_at(struct vqs_vq *vq, uint16_t slot, bool avail_wrap, bool used_wrap)
{
	struct vqs_vq_state st = {.last_avail_idx = slot, .used_idx = slot,
				  .avail_wrap = avail_wrap, .used_wrap = used_wrap};
	if (vqs_vq_set_state(vq, &st))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR)
		return 0;
	uint8_t flags = data[1], extra = data[3];
	struct vqs_vq_config cfg = {.num = 1 + data[0] % FUZZ_MAX_NUM, .max_iov = data[2]};
	cfg.features = VQS_BIT(VQS_F_RING_PACKED) | fuzz_ring_features(flags) |
		       (flags & 16 ? VQS_BIT(VQS_F_IN_ORDER) : 0);
	struct vqs_vq *vq = fuzz_vq_load(&cfg, data + HDR, size - HDR);
	if (extra & 2)
		start_at(vq, (uint16_t)(data[4] % cfg.num), extra & 4, extra & 8);
	if (flags & 4)
		fuzz_restore_inflight(vq, cfg.num, true);
	fuzz_round_trip(vq, flags & 8, extra & 1);
	if (extra & 16)
		fuzz_round_trip(vq, flags & 8, false);
	vqs_vq_destroy(vq);
	return 0;
}
