/* SPDX-License-Identifier: MIT */
/* --inject-slowdown-pct: the amount's arithmetic and when its sizing may stop (docs/bench.md). */
#ifndef VQS_BENCH_INJECT_H
#define VQS_BENCH_INJECT_H

#include <stdbool.h>
#include <stdint.h>

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

/*
 * The amount per request is in turns of cpu_busy_iters (about 0.3 ns each here) in fixed point,
 * 1/INJECT_ONE of a turn. A stream's request needs 3-30 ns a side, a dozen to a hundred
 * turns: an amount kept in whole turns loses up to a turn at every correction, and one
 * corrected by at most a quarter per repeat can only shrink below 4 turns (3 x 1.25 kept as 3),
 * down to 1, a third of a nanosecond.
 */
#define INJECT_FRAC_BITS 8
#define INJECT_ONE (1u << INJECT_FRAC_BITS)

/* The fixed-point amount for `turns` (rounded to the nearest 1/INJECT_ONE; 0 for turns <= 0,
 * saturated far above any request). Threads: any. */
uint32_t inject_amount(double turns);

/* The whole turns n requests get of `amount` each, done in one block (one per batch: see
 * cpu_busy_iters). *carry is the fraction left over from the requests before (0 to start, one
 * per side of a queue: its owner's alone), so that k requests, in any number of calls, get
 * floor((carry + k amount) / INJECT_ONE) turns: the mean is the amount, whatever its fraction,
 * and amount 0 gives 0 and leaves *carry alone. Saturated at UINT32_MAX turns, far above any
 * batch. Threads: the carry's owner. */
static inline uint32_t inject_turns(uint32_t amount, unsigned n, uint32_t *carry)
{
	uint64_t t = *carry + (uint64_t)amount * n;
	*carry = (uint32_t)(t % INJECT_ONE);
	t /= INJECT_ONE;
	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/*
 * The turns for the next measurement after `turns` made times per request tpo[0] (without)
 * and tpo[1] (with), for a slowdown of pct %. Unchanged when the slowdown measured is within a
 * fifth of the target, or implausible: below -pct, or above what the work could add if both
 * sides' share of it lay on the request's path (2 turns x ns_per_turn / tpo[0], plus pct): one
 * side's median request came after a stall, the machine made it, not the work.
 * The slowdown is not proportional to the work. A stream's driver and worker run at once, and
 * work on a side that waits (for the other side, or for lines the other CPU wrote) fills the
 * wait first: it adds nothing up to a knee, then about its own time (measured: an amount 1.25x
 * another slowed a stream by 13% where the other slowed it by -2%). rr's one request in flight
 * takes both sides' work, twice its time. So an amount that achieved under a tenth of the target
 * is doubled (below the knee, or too small to see), and one on the slope moves by half the time
 * missing (pct - achieved) x tpo[0]: rr's error is then corrected in one step, a stream's halved
 * in each; a correction by the ratio wanted/achieved would leap across a stream's knee and back.
 * Either by a factor within [1/step, step].
 * *tpo_min is the fastest request measured without the work (0: none yet), updated here; the
 * result is at least one turn and at most (1 + pct) of *tpo_min (1000 ns while unknown) in turns
 * of ns_per_turn: a side waits at most the whole request, and past its knee each nanosecond adds
 * at least one; the cap keeps windows starved on both sides (nothing achieved) from doubling it
 * again and again. And at least a quarter of pct of *tpo_min: a sized amount is about pct of
 * the request on each side, and windows that read too much one after another (noise within the
 * plausible bound) could otherwise shrink it by a quarter each time down to nothing, so that the
 * injected slowdown would not be there to flag. Threads: any.
 */
double inject_rescale_turns(unsigned pct, double turns, const double tpo[2], double step,
			    double *tpo_min, double ns_per_turn);

/*
 * --interleave: the side of slice k of a window (0: without the injection, 1: with it). Slices
 * come in pairs, one of each side: the first pair 0 then 1, each later pair's order drawn from
 * (seed, pair). A fixed order (A B B A A B B A ...) repeats every four slices, and a disturbance
 * of that period lands on one side in every cycle: stream slices of 16384 requests at 15.7M
 * requests/s made the cycle 4.17 ms, near the kernel's 4 ms tick (HZ 250). Threads: any (no
 * shared state).
 */
unsigned inject_slice_side(uint64_t seed, unsigned k);

#endif
