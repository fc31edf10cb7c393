/* SPDX-License-Identifier: MIT */
#include "hist.h"

#include <string.h>

void hist_reset(struct hist *h) { memset(h, 0, sizeof(*h)); }

static unsigned bucket_of(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* e >= HIST_SUB_BITS */
	unsigned idx = (e - HIST_SUB_BITS + 1) * HIST_SUB +
		       (unsigned)((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
	return idx < HIST_BUCKETS ? idx : HIST_BUCKETS - 1;
}

/* [lo, hi) of bucket idx, the inverse of bucket_of. */
static void bucket_range(unsigned idx, double *lo, double *hi)
{
	if (idx < HIST_SUB) {
		*lo = idx;
		*hi = idx + 1;
		return;
	}
	unsigned e = idx / HIST_SUB - 1 + HIST_SUB_BITS, sub = idx % HIST_SUB;
	double step = (double)(1ull << (e - HIST_SUB_BITS));
	*lo = (double)(1ull << e) + sub * step;
	*hi = *lo + step;
}

void hist_add(struct hist *h, uint64_t v)
{
	h->b[bucket_of(v)]++;
	h->count++;
}

void hist_add_n(struct hist *h, uint64_t v, uint64_t n)
{
	h->b[bucket_of(v)] += n;
	h->count += n;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->b[i] += src->b[i];
	dst->count += src->count;
}

double hist_quantile(const struct hist *h, double q)
{
	if (!h->count)
		return 0;
	uint64_t rank = (uint64_t)(q * (double)(h->count - 1)) + 1, seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank) {
			double lo, hi;
			bucket_range(i, &lo, &hi);
			return (lo + hi) / 2;
		}
	}
	return 0;
}
