/* SPDX-License-Identifier: MIT */
/* Command line of vqs-bench: what the user asked for, before presets fill in the rest. */
#ifndef VQS_BENCH_OPTS_H
#define VQS_BENCH_OPTS_H

#include <stdio.h>

#include "bench.h"

/* Dimensions a preset group lists and a flag may override (comma-separated lists). */
enum dim {
	DIM_WORKLOADS, DIM_POLICIES, DIM_STREAMS, DIM_BATCHES, DIM_PLACEMENTS, DIM_RATES, DIM__COUNT
};

/* Scalar parameters; -1 = not given (the preset or the default decides). */
enum scalar {
	SC_RING, SC_OUTSTANDING, SC_PAYLOAD, SC_TOUCH, SC_DRIVERS, SC_WORKERS, SC_POLL_TIMEOUT,
	SC_HANDLER_NS, SC_EXIT_NS, SC_INJECT_PCT, SC_DURATION, SC_WARMUP, SC_TX_BATCH, SC_PACKED,
	SC_EVENT_IDX, SC_DRIVER_BLOCK, SC_SHARED_CPU, SC_TRANSPORT, SC_SPIN_PCT, SC_INTERLEAVE,
	SC__COUNT
};

struct opts {
	const char *preset;
	bool quick, no_floors;
	const char *json, *csv, *plot;
	const char *json_base; /* --interleave: the report of the slices without the injection */
	/* ksim presets: the kernel column whose figures the report carries (seed-2017: 4.12|4.13,
	 * seed-2023: kthread|task; NULL = the regressed one), and bare-metal model costs. */
	const char *variant, *worker;
	bool bare_metal;
	unsigned repeat; /* 0 = preset default */
	const char *dim[DIM__COUNT];
	long long sc[SC__COUNT];
	struct cpu_list worker_cpus, driver_cpus; /* n == 0: chosen from the allowed CPUs */
	char argv_line[1024];
};

/* Parse argv (after the program name). 0, 1 when --help was printed, -EINVAL on a bad flag. */
int opts_parse(struct opts *o, int argc, char **argv);
void opts_usage(FILE *f);

#endif
