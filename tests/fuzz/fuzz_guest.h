/* SPDX-License-Identifier: MIT */
/*
 * What every ring fuzz target shares: the guest memory its input image is loaded into, and one
 * round of the device's side of the protocol over whatever ring that image holds.
 *
 * Guest memory is two adjacent regions of FUZZ_SPAN bytes at FUZZ_BASE (so buffers and indirect
 * tables can span them); each input's image is copied to its start and the rest is zeroed.
 * Targets place their ring areas at fixed offsets of the image; an inflight region, when a target
 * restores one, is imaged at FUZZ_IMG_INFLIGHT.
 */
#ifndef VQS_FUZZ_GUEST_H
#define VQS_FUZZ_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vqsched/vqsched.h>

#define FUZZ_BASE 0x100000ull
#define FUZZ_SPAN 0x10000u
#define FUZZ_IMG_INFLIGHT 0x800
/* Largest queue size a target configures (bounds the inflight copy and the pops per round). */
#define FUZZ_MAX_NUM 32

/* Load the image into guest memory (created on first use) and return the map over it. */
struct vqs_mem *fuzz_guest_load(const uint8_t *img, size_t len);

/* Create a queue from cfg; the target's own setup must never fail (aborts otherwise). */
struct vqs_vq *fuzz_vq_create(const struct vqs_vq_config *cfg);

/* Restore the inflight region imaged at FUZZ_IMG_INFLIGHT for a queue of num entries. */
void fuzz_restore_inflight(struct vqs_vq *vq, unsigned num, bool packed);

/*
 * Pop everything available (into one iovec first when tiny_iov, retrying with more storage),
 * read and write each popped buffer (out of bounds would fault), give the last chain back and
 * pop it again when unpop_last, then fill in reverse order, flush and run the notification calls.
 */
void fuzz_round_trip(struct vqs_vq *vq, bool tiny_iov, bool unpop_last);

#endif
