/* SPDX-License-Identifier: MIT */
/*
 * What every ring fuzz target shares: the guest memory its input image is loaded into, and one
 * round of the device's side of the protocol over whatever ring that image holds.
 *
 * Guest memory is two adjacent regions of FUZZ_SPAN bytes at FUZZ_BASE (so buffers and indirect
 * tables can span them); each input's image is copied to its start and the rest is zeroed.
 * The ring areas sit at fixed offsets of the image (split: descriptor table, avail ring, used
 * ring; packed: descriptor ring, driver and device event suppression), and an inflight region, when
 * a target restores one, at FUZZ_IMG_INFLIGHT.
 */
#ifndef VQS_FUZZ_GUEST_H
#define VQS_FUZZ_GUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <vqsched/vqsched.h>

#define FUZZ_BASE 0x100000ull
#define FUZZ_SPAN 0x10000u
#define FUZZ_IMG_DESC 0x0
#define FUZZ_IMG_DRIVER 0x200
#define FUZZ_IMG_DEVICE 0x300
#define FUZZ_IMG_INFLIGHT 0x800
/* Largest queue size a target configures (bounds the inflight copy and the pops per round). */
#define FUZZ_MAX_NUM 32

/* The features header bits both layouts offer: bit 0 INDIRECT_DESC, bit 1 EVENT_IDX. */
uint64_t fuzz_ring_features(uint8_t bits);

/*
 * Load the image into guest memory (created on first use) and configure a queue over the ring
 * areas in it, as cfg->num, cfg->features and cfg->max_iov say (the rest of cfg is filled in
 * here). The target's own setup must never fail: aborts otherwise.
 */
struct vqs_vq *fuzz_vq_load(struct vqs_vq_config *cfg, const uint8_t *img, size_t len);

/* Restore the inflight region imaged at FUZZ_IMG_INFLIGHT for a queue of num entries. */
void fuzz_restore_inflight(struct vqs_vq *vq, unsigned num, bool packed);

/*
 * Pop everything available (into one iovec first when tiny_iov, retrying with more storage),
 * read and write each popped buffer (out of bounds would fault), give the last chain back and
 * pop it again when unpop_last, then fill in reverse order, flush, run the notification calls and
 * read the ring state back.
 */
void fuzz_round_trip(struct vqs_vq *vq, bool tiny_iov, bool unpop_last);

#endif
