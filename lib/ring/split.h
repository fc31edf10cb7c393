/* SPDX-License-Identifier: MIT */
/* Split ring state (owned by the split ring work). */
#ifndef VQS_RING_SPLIT_H
#define VQS_RING_SPLIT_H
#include <stdint.h>
struct vqs_split_ring { int placeholder_until_split_lands; };
#endif
