/* SPDX-License-Identifier: MIT */
#include "alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *vqs_alloc_lines(size_t n, size_t size)
{
	if (size && n > (SIZE_MAX - VQS_CACHE_LINE) / size)
		return NULL;
	size_t bytes = (n * size + VQS_CACHE_LINE - 1) & ~(size_t)(VQS_CACHE_LINE - 1);
	void *p = aligned_alloc(VQS_CACHE_LINE, bytes ? bytes : VQS_CACHE_LINE);
	if (p)
		memset(p, 0, bytes);
	return p;
}
