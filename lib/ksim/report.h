/* SPDX-License-Identifier: MIT */
/* What both reproductions share: running a table several times and keeping medians, measuring
 * an interval, printing the costs a table was measured with. */
#ifndef VQS_KSIM_REPORT_H
#define VQS_KSIM_REPORT_H

#include <stdio.h>
#include "ksim/nic.h"

typedef int (*ksim_cell_fn)(const void *opts, unsigned row, unsigned col,
			    struct vqs_ksim_cell *out);
/*
 * Run every cell of a rows x cols table `repeats` times (at least once), whole table per repeat,
 * and store in cells[row * cols + col] the run with the median rate; err is the last failure
 * (the figures come from the runs that worked).
 */
void ksim_table_run(ksim_cell_fn fn, const void *opts, unsigned rows, unsigned cols,
		    unsigned repeats, struct vqs_ksim_cell *cells);

/* Sleep ms milliseconds (the coordinating thread, while the model runs). */
void ksim_sleep_ms(uint32_t ms);

/* A snapshot of the world's counters, to measure deltas over an interval. */
struct ksim_snap {
	uint64_t t, cpu, delivered, drops_batch, drops_ring, kicks;
};
void ksim_snap_take(struct ksim_world *w, uint64_t transactions, struct ksim_snap *s);
/* Fill out from two snapshots; rate = Mbit/s of payload, or transactions/s when rr. */
void ksim_snap_cell(const struct ksim_world *w, const struct ksim_snap *a,
		    const struct ksim_snap *b, bool rr, struct vqs_ksim_cell *out);

double ksim_ratio(double a, double b);
/* A CPU mask in list form ("0", "0-1", "0,2"), truncated to len. */
void ksim_cpus_format(const cpu_set_t *set, char *buf, size_t len);

#endif
