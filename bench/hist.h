/* SPDX-License-Identifier: MIT */
/*
 * Log-linear latency histogram: 16 linear sub-buckets per power of two (about 6% resolution),
 * so one fixed-size array covers 1 ns to minutes. One writer per histogram; merge to combine.
 */
#ifndef VQS_BENCH_HIST_H
#define VQS_BENCH_HIST_H

#include <stdint.h>

#define HIST_SUB_BITS 4
#define HIST_SUB (1u << HIST_SUB_BITS)
#define HIST_EXP 42
#define HIST_BUCKETS (HIST_EXP * HIST_SUB)

struct hist {
	uint64_t count;
	uint64_t b[HIST_BUCKETS];
};

void hist_reset(struct hist *h);
void hist_add(struct hist *h, uint64_t v);
/* n samples of value v. */
void hist_add_n(struct hist *h, uint64_t v, uint64_t n);
void hist_merge(struct hist *dst, const struct hist *src);
/* Value at quantile q (0..1): the midpoint of the bucket holding it; 0 when empty. */
double hist_quantile(const struct hist *h, double q);

#endif
