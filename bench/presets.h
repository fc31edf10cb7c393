/* SPDX-License-Identifier: MIT */
/*
 * Presets: named sets of points. Most are tables of groups, each group a cross product of
 * dimension lists plus a few fixed settings, expanded into a plan of points. A preset may instead
 * name a `run` function that measures through a library of its own (a reproduction implemented
 * by vqsched's ksim, say) and appends its results to the report: adding one is one table row and
 * that function.
 */
#ifndef VQS_BENCH_PRESETS_H
#define VQS_BENCH_PRESETS_H

#include <stdio.h>

#include "bench.h"
#include "opts.h"

struct preset_group {
	const char *dim[DIM__COUNT]; /* comma lists; NULL = the default of that dimension */
	bool shared_cpu;             /* affinity shape */
	bool driver_block;
	bool packed;                 /* packed ring layout (default split) */
	unsigned outstanding;        /* rr in-flight per stream, 0 = default */
	/* Offered-rate points run long enough for this many latency samples per repeat (their
	 * p99 rests on a hundred of them at 10^4), unless --duration-ms says otherwise; 0 = the
	 * default duration. */
	unsigned min_samples;
	unsigned duration_ms; /* measured time per repeat, 0 = the default (250 ms) */
	enum transport transport; /* default direct; --transport sets every group's */
};

#define PRESET_MAX_GROUPS 6
struct preset {
	const char *name;
	const char *help;
	struct preset_group groups[PRESET_MAX_GROUPS];
	unsigned ngroups;
	unsigned repeat; /* default repeats (--quick: 1) */
	/* Instead of groups: measure by a library call and append results (with the same keys and
	 * figures as table-driven points) to rep. NULL for table-driven presets. */
	int (*run)(const struct opts *o, struct report *rep);
};

extern const struct preset bench_presets[];
extern const unsigned bench_npresets;
const struct preset *preset_find(const char *name);
/* The ksim reproductions (bench/preset_ksim.c). */
int preset_seed2017_run(const struct opts *o, struct report *rep);
int preset_seed2023_run(const struct opts *o, struct report *rep);

struct plan {
	struct point *pts;
	unsigned n;
};
/* Expand a table-driven preset with the flag overrides. 0 or -errno (bad list item). */
int plan_build(const struct opts *o, const struct preset *p, struct plan *out);
void plan_free(struct plan *p);

#endif
