/* SPDX-License-Identifier: MIT */
/* --inject-slowdown-pct: when the sizing runs of an interleaved point may stop (docs/bench.md). */
#ifndef VQS_BENCH_INJECT_H
#define VQS_BENCH_INJECT_H

#include <stdbool.h>

/* Sizing windows of one interleaved point, at most this many. */
#define INJECT_SIZING_WINDOWS 4

/* Whether the amount is sized after a sizing window that measured achieved_pct for the wanted
 * target_pct. *agreed is the point's state, 0 before its first window. Threads: any (no shared
 * state). */
bool inject_sizing_done(unsigned target_pct, double achieved_pct, unsigned *agreed);

#endif
