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
 * Run every cell of a rows x cols table `repeats` times (1..VQS_KSIM_MAX_REPEATS), whole table per
 * repeat, and store in cells[row * cols + col] the run with the median rate, with every run's rate
 * in run_rate; err is the last failure (the figures come from the runs that worked).
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

/*
 * Two variants measured in one world, so that what other programs do to the machine hits both
 * alike (cells seconds apart get different CPU shares): the measured window is cut into slices
 * of `slice` deliveries, set_side(opaque, s) switching the world to side 0 or 1 before each,
 * A B B A, until cell_ms passed and each side had two slices (at most 20 cell_ms). Slices count
 * deliveries, not time, so a stall leaves no side empty and stays in its slice; each side's
 * rate is its median slice's (per delivery), so a slice that other programs starved counts as one slice. The deliveries at
 * a switch were served by the other side: a dilution of about what is in flight per slice.
 * side[] (zeroed by the caller) gets each side's counters summed over its slices and its rate;
 * Mbit/s of pkt_bytes payloads, or transactions/s when rr. ratio (unless NULL) gets side 0
 * over side 1 as the median over the A B B A rounds of each round's ratio of the two sides'
 * deliveries over their two slices' wall time (ratio[0]: the rate) and over the CPU time the
 * process used in them (ratio[1]: the rate per CPU-second). A round's slices sit symmetrically
 * about its middle, so CPUs that other programs give and take steadily across it move both
 * sides alike; 0 when no round completed. Returns set_side's error, or -ENOMEM.
 */
struct ksim_interleave {
	uint32_t slice, cell_ms;
	bool rr;
	_Atomic uint64_t *transactions; /* counted as deliveries beside the flows; NULL: none */
	int (*set_side)(void *opaque, unsigned side);
	void *opaque;
	/* A loss (drops_batch or drops_ring) restarts its slice's count: the recovery that
	 * follows, a stall when only a timeout repairs it, stays in the slice of the side that
	 * lost, provided a slice exceeds the packets in flight (those still arrive before it). */
	bool loss_restarts;
	/* > 0: a slice also ends after this long, unless a loss restarted it: a spell in which
	 * other programs leave the model no CPU then falls into both sides' slices in turn,
	 * where a slice of deliveries alone would hold all of it. */
	uint32_t slice_max_ms;
};
int ksim_interleaved_window(struct ksim_world *w, const struct ksim_interleave *il,
			    struct vqs_ksim_cell side[2], double ratio[2]);

double ksim_ratio(double a, double b);
/* Median of v[0..n) (sorts v); 0 when n is 0. */
double ksim_median(double *v, unsigned n);
/*
 * How a compares with the best of the cells b[0..nb), repeat by repeat: the median over repeats
 * of a's rate over the best of b's rates in the same repeat (0 when a cell has no run). Pairing
 * runs measured seconds apart keeps a burst of load from elsewhere from deciding a verdict.
 */
double ksim_paired_ratio(const struct vqs_ksim_cell *a, const struct vqs_ksim_cell *const *b,
			 unsigned nb);
/* ksim_paired_ratio against one cell. */
double ksim_cell_ratio(const struct vqs_ksim_cell *a, const struct vqs_ksim_cell *b);
/* ksim_cell_ratio over the repeats in which a got at least min_cpus_a CPUs and b at least
 * min_cpus_b (cpus_used); *judged gets how many; 0 when none. */
double ksim_judged_ratio(const struct vqs_ksim_cell *a, const struct vqs_ksim_cell *b,
			 double min_cpus_a, double min_cpus_b, unsigned *judged);
/* CPUs this process may run on. */
int ksim_cpus_usable(void);
/* A CPU mask in list form ("0", "0-1", "0,2"), truncated to len. */
void ksim_cpus_format(const cpu_set_t *set, char *buf, size_t len);

#endif
