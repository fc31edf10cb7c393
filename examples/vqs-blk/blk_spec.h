/* SPDX-License-Identifier: MIT */
/*
 * virtio-blk on the wire (virtio 1.2, 5.2): feature bits, request types, status codes and the
 * configuration space layout, all little-endian. Sectors are always 512 bytes, whatever
 * blk_size says.
 */
#ifndef VQS_BLK_SPEC_H
#define VQS_BLK_SPEC_H

#include <stdint.h>

#define BLK_F_SIZE_MAX 1
#define BLK_F_SEG_MAX 2
#define BLK_F_BLK_SIZE 6
#define BLK_F_FLUSH 9
#define BLK_F_TOPOLOGY 10
#define BLK_F_MQ 12
#define BLK_F_DISCARD 13
#define BLK_F_WRITE_ZEROES 14

#define BLK_T_IN 0
#define BLK_T_OUT 1
#define BLK_T_FLUSH 4
#define BLK_T_GET_ID 8
#define BLK_T_DISCARD 11
#define BLK_T_WRITE_ZEROES 13

#define BLK_S_OK 0
#define BLK_S_IOERR 1
#define BLK_S_UNSUPP 2

#define BLK_SECTOR_SHIFT 9
#define BLK_SECTOR_SIZE (1u << BLK_SECTOR_SHIFT)
#define BLK_ID_BYTES 20
/* WRITE_ZEROES segment flag: the device may deallocate instead of writing zeroes. */
#define BLK_WZ_F_UNMAP 1u

/* The request header: the first 16 readable bytes of every chain. */
struct blk_outhdr {
	uint32_t type;
	uint32_t ioprio;
	uint64_t sector;
};

/* One DISCARD / WRITE_ZEROES segment; the data of those requests is an array of them. */
struct blk_discard_seg {
	uint64_t sector;
	uint32_t num_sectors;
	uint32_t flags;
};

struct blk_config {
	uint64_t capacity; /* in 512-byte sectors */
	uint32_t size_max;
	uint32_t seg_max;
	uint16_t cylinders;
	uint8_t heads;
	uint8_t sectors;
	uint32_t blk_size;
	uint8_t physical_block_exp;
	uint8_t alignment_offset;
	uint16_t min_io_size;
	uint32_t opt_io_size;
	uint8_t writeback;
	uint8_t unused0;
	uint16_t num_queues;
	uint32_t max_discard_sectors;
	uint32_t max_discard_seg;
	uint32_t discard_sector_alignment;
	uint32_t max_write_zeroes_sectors;
	uint32_t max_write_zeroes_seg;
	uint8_t write_zeroes_may_unmap;
	uint8_t unused1[3];
	uint32_t max_secure_erase_sectors;
	uint32_t max_secure_erase_seg;
	uint32_t secure_erase_sector_alignment;
};
_Static_assert(sizeof(struct blk_config) == 72, "virtio-blk config layout");
_Static_assert(sizeof(struct blk_outhdr) == 16, "virtio-blk request header layout");

#endif
