/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench: shared types. A "point" is one measured configuration; presets expand into a plan
 * of points; each point runs `repeat` times and is reported as the median with min/max.
 */
#ifndef VQS_BENCH_H
#define VQS_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <vqsched/vqsched.h>

#include "hist.h"

enum workload { WL_STREAM, WL_RR, WL_SWEEP, WL_IDLE, WL__COUNT };
enum touch { TOUCH_NONE, TOUCH_READ, TOUCH_COPY };
/* How the drivers reach the device: rings in one process, or a vhost-user connection. */
/* vhost-user-log: vhost-user with dirty page logging on for the whole run, as during a live
 * migration. */
enum transport { TRANSPORT_DIRECT, TRANSPORT_VHOST_USER, TRANSPORT_VHOST_USER_LOG };

const char *workload_name(enum workload w);
int workload_parse(const char *s, enum workload *out);
const char *touch_name(enum touch t);
int touch_parse(const char *s, enum touch *out);
const char *transport_name(enum transport t);
int transport_parse(const char *s, enum transport *out);

/* Where threads run. Lists of CPU numbers; the defaults come from the allowed mask. */
#define BENCH_MAX_CPUS 64
struct cpu_list {
	unsigned n;
	int cpu[BENCH_MAX_CPUS];
};

/* vqs_sched_opts.spin_pct's default: points at it keep the keys they had before the knob. */
#define BENCH_SPIN_PCT_DEFAULT 200u

/* One measured configuration. Every field except inject_pct and interleave is part of its
 * identity (key). */
struct point {
	enum workload workload;
	enum vqs_policy policy;
	enum vqs_placement placement;
	bool shared_cpu;      /* affinity shape: owner and driver on one CPU, workers per placement */
	bool packed;          /* VQS_F_RING_PACKED */
	bool event_idx;       /* VQS_F_EVENT_IDX */
	bool driver_block;    /* drivers wait for calls on the eventfd instead of spinning */
	enum transport transport;
	enum touch touch;
	unsigned streams;     /* queues */
	unsigned batch_max;   /* scheduler batch limit */
	unsigned tx_batch;    /* driver: most chains added per kick (0 = batch_max) */
	unsigned ring;        /* queue size */
	unsigned outstanding; /* rr: requests in flight per stream */
	unsigned payload;     /* bytes per request buffer */
	unsigned drivers;     /* driver threads */
	unsigned workers;     /* scheduler workers (pool/poll/adaptive) */
	uint32_t poll_timeout_us;
	uint32_t spin_pct;    /* adaptive's knob (vqs_sched_opts.spin_pct) */
	uint64_t rate;        /* offered ops/s over all streams, 0 = as fast as possible */
	uint32_t handler_ns;  /* busy time per request in the handler */
	uint32_t exit_ns;     /* busy time per kick on the driver (simulated guest exit) */
	uint32_t inject_pct;  /* slow each request by this % of its time, outside the key: a
			       * regression of known size for `compare` to catch (workload.c) */
	uint32_t interleave;  /* >0: the window alternates slices of this many round trips of the
			       * queue without and with the injection, a sample of each per repeat */
	uint32_t duration_ms, warmup_ms;
	struct cpu_list worker_cpus, driver_cpus;
};

/* The figures of one repeat of one point. */
enum fig {
	FIG_OPS, FIG_P50, FIG_P99, FIG_P999, FIG_WCPU, FIG_DCPU, FIG_KICKS, FIG_CALLS, FIG_BATCH,
	FIG_WUTIL, FIG_DUTIL, FIG_REARMS, FIG_WAKES, FIG_SAMPLES, FIG_NSPO, FIG_WRUNQ, FIG__COUNT
};
extern const char *const fig_names[FIG__COUNT];
/* +1 when larger is better (throughput), -1 when smaller is, 0 when neither (counts). */
extern const int fig_better[FIG__COUNT];

#define BATCH_BUCKETS VQS_STATS_BATCH_BUCKETS /* handler calls with 1, 2-3, 4-7, ..., 256+ */
struct sample {
	double fig[FIG__COUNT];
	uint64_t ops, lost, duplicated, corrupted;
	uint64_t batch_hist[BATCH_BUCKETS];
	char worker_cpus[64]; /* CPUs worker 0 actually runs on, as read back ("0-1", "1") */
	int error; /* -errno when the point could not run */
	/* --inject-slowdown-pct: busy time the window's requests were given on average, on the
	 * handler's [0] and the driver's [1] side and the mean of both, and the slowdown it made
	 * in time per operation as measured against windows without it (%) */
	double inject_side_ns[2], inject_ns, inject_achieved_pct;
	struct repeat_info {
		unsigned run_seq; /* 1-based position of this window in the whole run's order */
		double naps_per_op; /* the deferred re-poll's naps in the window, per operation */
		double cost_reads_per_op; /* worker 0's cost model system calls, per operation */
		/* worker 0's polling decisions in the window (vqs_worker_stats: mode_changes,
		 * polling_ends, rent_naps, late_naps), counts */
		uint64_t mode_changes, polling_ends, rent_naps, late_naps;
		/* the reference the goals divide this window's figure by (point_beside), measured
		 * just before it on the floors' CPUs: ops/s or ns p50; 0 when none was */
		double beside;
		/* worker 0's counters and learned cost model at the window's end (adaptive) */
		struct vqs_worker_stats w0;
		/* page faults the process took in the window (minor and major): each stalls the
		 * thread that takes it with the requests in flight */
		uint64_t faults;
	} info;
};

/* A point with its repeats folded: median, min, max per figure; loss counters summed. The
 * figures of each repeat that ran are kept too (samples): compare tests on them. */
struct result {
	struct point pt;
	char key[256];
	double med[FIG__COUNT], min[FIG__COUNT], max[FIG__COUNT];
	double *samples; /* nsamples x FIG__COUNT, repeat-major; owned (results_free) */
	struct repeat_info *info; /* nsamples: when each ran, and its worker; owned; or NULL */
	unsigned nsamples;
	double inject_side_ns[2], inject_ns, inject_achieved_pct; /* medians over the repeats */
	uint64_t lost, duplicated, corrupted;
	uint64_t batch_hist[BATCH_BUCKETS];
	unsigned repeats;
	int error;
	char worker_cpus[64];
	const char *floor_name; /* the floor bounding this point, NULL when none applies */
	double floor_value, floor_ratio;
};

/* A figure over FLOOR_TRIALS trials (or over a point's repeats): their median and range. */
#define FLOOR_TRIALS 3
struct floor_x {
	double med, lo, hi;
};

struct floors {
	bool measured;
	int cpu_a, cpu_b;
	double cacheline_rtt_ns;
	double eventfd_rtt_ns;
	/* p50 of a timed_sleep_req_ns sleep: [0] with timer slack 50 us, [1] with 1 ns */
	double timed_sleep_req_ns, timed_sleep_ns[2];
	unsigned nbatch;
	unsigned batch[8];
	double ring_ops_per_s[8];
	double ring_rr_p50_ns, ring_rr_p99_ns;
	/* Not floors: vqsched's own rings, [0] split and [1] packed, answering one request at a
	 * time with no scheduler in between (floors_vring.c). 0 when not measured. */
	double vring_rr_p50_ns[2], vring_rr_p99_ns[2];
	double vring_stream_ops_per_s[2][8]; /* [0] split, [1] packed, at batch[i] */
	/* which side waited (struct vref_out), medians of the trials */
	double vring_stream_dev_empty[2][8], vring_stream_drv_full[2][8];
	/* The same over the minimal ring, trial by trial: each trial runs the minimal ring and
	 * then both rings alone, so a ratio divides figures measured within a second of each
	 * other (floors_measure). rr: p50 over p50; stream: ops/s over ops/s. */
	struct floor_x vring_rr_x[2], vring_stream_x[2][8];
};

struct goal {
	const char *name;
	const char *rule;
	int status; /* 1 pass, 0 fail, -1 not measured by this preset */
	char detail[400];
};
#define MAX_GOALS 16

/*
 * A figure a preset measures by itself (the ksim reproductions), one sample per repeat, for
 * `compare` to test distributions with. Written as the JSON report's "figures".
 */
#define FIGURE_MAX_SAMPLES 32
struct figure {
	char name[64];
	const char *unit;
	bool higher_better;
	double samples[FIGURE_MAX_SAMPLES];
	unsigned n;
	bool by_repeat; /* sample i is of repeat i, as for the other figures of its run: compare
			 * pairs two such figures by repeat */
};
#define MAX_FIGURES 8

struct report {
	const char *preset;
	bool quick;
	const char *argv_line;
	struct floors floors;
	struct result *results;
	unsigned nresults;
	struct goal goals[MAX_GOALS];
	unsigned ngoals;
	struct figure figures[MAX_FIGURES];
	unsigned nfigures;
	double elapsed_s;
	double loadavg_start, loadavg_end; /* 1-minute load average of the machine, -1 unknown */
};
/* The machine's 1-minute load average (other programs competing for the CPUs), -1 unknown. */
double machine_loadavg(void);

/* --inject-slowdown-pct across the repeats of a point: the busy turns per request, with their
 * fraction (0: not sized yet; bench/inject.h), and the fastest time per request measured without them (ns, 0: none yet), which bounds
 * the amount: a window that other programs starved measures stalls on both sides. */
struct inject {
	double turns;
	double tpo_min;
	bool sizing; /* a run that only sizes it: an interleaved window corrects it fully */
};
/* Run one repeat of a point. With pt->inject_pct, *inj is where the calibration of the injected
 * busy work starts and what it ended at (the next repeat's start). With pt->interleave, out is
 * two samples: the slices without the injection, then with. Threads: the main thread. */
int workload_run(const struct point *pt, struct inject *inj, struct sample *out);
/* Measure the machine's floors on CPUs a and b (a may equal b). quick shortens them. */
void floors_measure(struct floors *f, unsigned ring, int cpu_a, int cpu_b, bool quick);
/* What a goal line divides a point's figure by, measured beside each of its repeats
 * (floors_beside), so that the ratio is of two runs a few milliseconds apart: busy-poll
 * streaming one queue at batch 1 or 64 (poll-vs-rings-alone) against the rings alone at that
 * batch, on the point's layout; busy-poll rr of one queue (poll-rr-vs-ring) against the
 * minimal ring's rr p50. */
enum beside { BESIDE_NONE, BESIDE_RINGS_ALONE, BESIDE_RING_RR };
enum beside point_beside(const struct point *pt);
/* One run of pt's reference (point_beside) on CPUs a and b of f: ops/s or ns; 0 when none. */
double floors_beside(const struct floors *f, const struct point *pt, bool quick);
/* What one run of the vring reference measured: request/response, p50 and p99 in ns;
 * streaming, ops/s and which side waited for the other, as shares of its polls: the device's
 * sessions that found no chain, the driver's steps (until the time was up) that found no room,
 * every chain in flight. Zeros when it could not run. */
struct vref_out {
	double p50_ns, p99_ns;
	double ops_per_s, dev_empty, drv_full;
};
/* One run of the vring reference on one layout, its device on CPU a and its driver on b:
 * batch 0 measures request/response, else streaming. */
void floors_vring_run(bool packed, unsigned ring, int cpu_a, int cpu_b, uint64_t dur_ns,
		      unsigned batch, struct vref_out *out);
/* The stream floor bounding batch size `batch`: the largest measured batch not above it (index
 * into f->batch; f->nbatch > 0). Inline: test_bench_goals links goals.c without the floors'
 * measurements. */
static inline unsigned floors_batch_index(const struct floors *f, unsigned batch)
{
	unsigned i = 0;
	while (i + 1 < f->nbatch && f->batch[i + 1] <= batch)
		i++;
	return i;
}
/* Floor bounding a point: saturating stream/sweep: ring throughput at its batch; rr and offered
 * rates: ring request/response p50. */
void floors_attach(const struct floors *f, struct result *r);

void point_key(const struct point *pt, char *buf, size_t len);
/* Fold n repeats into r (its pt set): key, medians, spreads, samples. 0 or -ENOMEM. */
int result_fold(struct result *r, const struct sample *s, unsigned n);
/* The median of v[0..k), k > 0; sorts v. */
double median_sorted(double *v, unsigned k);
/* The median and range of n trials' (or repeats') figures, leaving out those that did not come
 * (0). */
struct floor_x trials_spread(const double *fig, unsigned n);
/* num[t] / den[t] trial by trial (a trial that lacks either figure left out), as trials_spread. */
struct floor_x trials_ratio(const double *num, const double *den, unsigned n);
void results_free(struct result *r, unsigned n);
void goals_evaluate(struct report *rep);

#endif
