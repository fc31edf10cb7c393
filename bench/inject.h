/* SPDX-License-Identifier: MIT */
/* --inject-slowdown-pct: when the sizing runs of an interleaved point may stop (docs/bench.md). */
#ifndef VQS_BENCH_INJECT_H
#define VQS_BENCH_INJECT_H

#include <stdbool.h>

/* Sizing windows of one interleaved point, at most this many: room for a spoiled window, the
 * rescales after it (each by at most 4x) and two windows that agree. */
#define INJECT_SIZING_WINDOWS 6

/* Whether the amount is sized after a sizing window that measured achieved_pct for the wanted
 * target_pct: when this window and the one before it both measured within a fifth of the
 * target. A window within it leaves the amount unchanged, so the two measured the same amount;
 * one window alone may read the target by a stall on one side while the amount is far off.
 * *agreed is the point's state (windows in a row within the target), 0 before its first
 * window. Threads: any (no shared state). */
bool inject_sizing_done(unsigned target_pct, double achieved_pct, unsigned *agreed);

#endif
