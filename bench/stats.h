/* SPDX-License-Identifier: MIT */
/* The test behind `vqs-bench compare`: a rank-based shift between two sets of repeats. */
#ifndef VQS_BENCH_STATS_H
#define VQS_BENCH_STATS_H

#include <stdbool.h>

/* How much worse NEW is than BASE, as a factor - 1 in time per operation (+0.10: 10% worse). */
struct shift {
	double est;      /* Hodges-Lehmann estimate: the median of all NEW/BASE ratios */
	double lo, hi;   /* its distribution-free confidence interval (two-sided 1 - 2 alpha) */
	bool decidable;  /* false: too few samples for an interval at that level (lo, hi infinite) */
	unsigned m, n;   /* samples used (zeros of a smaller-is-better figure dropped) */
};

/*
 * Compare NEW samples against BASE samples of one figure. better: +1 larger is better
 * (throughput: a ratio base/new), -1 smaller is (latency, CPU: new/base). Samples of a
 * smaller-is-better figure that are 0 were not measured (a window with no completion) and are
 * dropped; a throughput of 0 is kept as the worst value. The interval is the Mann-Whitney one
 * for the shift of log values: its lower bound is above 0 exactly when a one-sided rank test
 * says "worse" at level alpha. 0, or -ENOMEM.
 */
int stats_shift(const double *base, unsigned m, const double *cur, unsigned n, int better,
		double alpha, struct shift *out);

/*
 * The same shift from n pairs measured under the same conditions (the medians of one `ab` round
 * of each side): the Hodges-Lehmann estimate of the pairs' log ratios (the median of their
 * pairwise means) with its Wilcoxon signed-rank interval. Pairs where a side is 0 for a
 * smaller-is-better figure are dropped. Conditions that change between rounds (another program,
 * the host moving the vCPUs) then move both sides of a pair and cancel. 0, or -ENOMEM.
 */
int stats_shift_paired(const double *base, const double *cur, unsigned n, int better, double alpha,
		       struct shift *out);

#endif
