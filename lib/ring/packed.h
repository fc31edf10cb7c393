/* SPDX-License-Identifier: MIT */
/* Packed ring state (owned by the packed ring work). */
#ifndef VQS_RING_PACKED_H
#define VQS_RING_PACKED_H
#include <stdint.h>
struct vqs_packed_ring { int placeholder_until_packed_lands; };
#endif
