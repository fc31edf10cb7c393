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
 * The rings sit at fixed offsets of the image (IMG_DESC, IMG_AVAIL, IMG_USED); one round trip
 * (fuzz_round_trip) pops, uses, fills and flushes whatever they hold.
 */
#include <stdint.h>
#include <vqsched/vqsched.h>

#include "fuzz_guest.h"

#define HDR 4
#define IMG_DESC 0x0
#define IMG_AVAIL 0x200
#define IMG_USED 0x300

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HDR)
		return 0;
	struct vqs_mem *mem = fuzz_guest_load(data + HDR, size - HDR);
	unsigned num = 1u << (data[0] % 6);
	uint8_t flags = data[1];
	struct vqs_vq_config cfg = {
		.size = sizeof(cfg), .num = num, .addr_space = VQS_ADDR_GPA, .mem = mem,
		.desc_addr = FUZZ_BASE + IMG_DESC, .driver_addr = FUZZ_BASE + IMG_AVAIL,
		.device_addr = FUZZ_BASE + IMG_USED, .max_iov = data[2]};
	cfg.features = (flags & 1 ? VQS_BIT(VQS_F_INDIRECT_DESC) : 0) |
		       (flags & 2 ? VQS_BIT(VQS_F_EVENT_IDX) : 0) |
		       (flags & 4 ? VQS_BIT(VQS_F_NOTIFY_ON_EMPTY) : 0);
	struct vqs_vq *vq = fuzz_vq_create(&cfg);
	if (flags & 8)
		fuzz_restore_inflight(vq, num, false);
	fuzz_round_trip(vq, flags & 16, data[3] & 1);
	struct vqs_vq_state st;
	vqs_vq_get_state(vq, &st);
	vqs_vq_destroy(vq);
	return 0;
}
