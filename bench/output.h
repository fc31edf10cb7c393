/* SPDX-License-Identifier: MIT */
/* Reports: a table on stdout, JSON and CSV files (schema in docs/bench.md), gnuplot PNGs. */
#ifndef VQS_BENCH_OUTPUT_H
#define VQS_BENCH_OUTPUT_H

#include <stdio.h>

#include "bench.h"

void output_table(FILE *f, const struct report *rep);
int output_json(const char *path, const struct report *rep);
/* This process's id in its JSON reports ("process"): compare pairs two reports' samples by round
 * only when both carry the same one, i.e. when one process ran both sides interleaved (the two
 * reports of --interleave or --json-base, or the merged reports of one `ab`). The pid and the
 * time of the first call: unique on a host across the lifetime of a guard. Threads: the main
 * thread (the first call fills a static buffer). */
const char *output_process_id(void);
int output_csv(const char *path, const struct report *rep);
/* PNGs of throughput, p99 and CPU/op against offered load (sweep) and against streams
 * (stream, rr), one line per policy, into dir. 0 or -errno. */
int output_plots(const char *dir, const struct report *rep);

#endif
