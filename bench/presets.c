/* SPDX-License-Identifier: MIT */
#include "presets.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

#define ALL_POLICIES "dedicated,pool,poll,adaptive"
#define SWEEP_RATES "1000,5000,20000,100000,400000,0"
#define SWEEP_STREAMS "1,8,50"

/* The groups the shapes are made of, shared by their own presets and by `default`. */
#define G_TRADEOFF                                                                          \
	{.dim = {[DIM_WORKLOADS] = "stream,rr", [DIM_POLICIES] = ALL_POLICIES,              \
		 [DIM_STREAMS] = "1,10,50", [DIM_BATCHES] = "1,64"}}
/* The request/response floor comparison again on the packed layout: one ring line carries the
 * request and its completion, where the split layout chains three dependent reads (index, avail
 * entry, descriptor) on the device's side alone. */
#define G_RR_PACKED                                                                         \
	{.dim = {[DIM_WORKLOADS] = "rr", [DIM_POLICIES] = "poll,adaptive", [DIM_STREAMS] = "1", \
		 [DIM_BATCHES] = "64"},                                                     \
	 .packed = true}
#define G_IDLE {.dim = {[DIM_WORKLOADS] = "idle", [DIM_POLICIES] = ALL_POLICIES}}
/* The offered-load sweep over 1, 8 and 50 queues: short in the main command's run (default:
 * the same goal lines on fewer samples, within its time), long enough for a p99 in the sweep
 * preset (G_SWEEP_FULL), which measures rr at the same queue counts too. */
#define G_SWEEP                                                                             \
	{.dim = {[DIM_WORKLOADS] = "sweep", [DIM_POLICIES] = ALL_POLICIES,                  \
		 [DIM_STREAMS] = SWEEP_STREAMS, [DIM_RATES] = SWEEP_RATES},                 \
	 .duration_ms = 120}
#define G_SWEEP_FULL                                                                        \
	{.dim = {[DIM_WORKLOADS] = "sweep", [DIM_POLICIES] = ALL_POLICIES,                  \
		 [DIM_STREAMS] = SWEEP_STREAMS, [DIM_RATES] = SWEEP_RATES},                 \
	 .min_samples = 10000}
#define G_SWEEP_RR                                                                          \
	{.dim = {[DIM_WORKLOADS] = "rr", [DIM_POLICIES] = ALL_POLICIES,                     \
		 [DIM_STREAMS] = SWEEP_STREAMS}}
/* What dirty logging costs (issue 20): a stream over vhost-user with logging off and on, as a
 * migration switches it; the plan interleaves the two, so each repeat's pair ran back to back. */
#define G_LOG(t)                                                                            \
	{.dim = {[DIM_WORKLOADS] = "stream", [DIM_POLICIES] = ALL_POLICIES}, .transport = (t)}
#define G_AFFINITY                                                                          \
	{.dim = {[DIM_WORKLOADS] = "rr,stream", [DIM_POLICIES] = "dedicated",               \
		 [DIM_PLACEMENTS] = "inherit,float,auto"},                                  \
	 .shared_cpu = true}

const struct preset bench_presets[] = {
	{"default", "what scripts/bench.sh runs: tradeoff, idle cost, sweep and affinity",
	 {G_TRADEOFF, G_RR_PACKED, G_IDLE, G_SWEEP, G_AFFINITY}, 5, 3, NULL},
	{"tradeoff", "each policy, batch 1/64, 1/10/50 streams, stream and rr (the 2017 shape), "
	 "rr on packed rings too", {G_TRADEOFF, G_RR_PACKED, G_IDLE}, 3, 3, NULL},
	{"affinity", "owner and spinning driver on one CPU, workers inherit/float/auto (the 2023 shape)",
	 {G_AFFINITY}, 1, 3, NULL},
	{"sweep", "offered load from 1k/s to saturation over 1, 8 and 50 queues, >= 10^4 latency "
	 "samples per point, and rr on as many queues: one curve per policy",
	 {G_SWEEP_FULL, G_SWEEP_RR}, 2, 3, NULL},
	{"idle", "CPU a queue without traffic costs, per policy", {G_IDLE}, 1, 3, NULL},
	/* The guard's handler copies the payload: with the null handler a stream can be bounded by
	 * its driver (as the host places the vCPUs), and then work added on the device side is
	 * hidden until the device becomes the bottleneck, so a change there shows in steps. */
	{"guard", "the regression guard's points: busy-poll stream and rr, one split ring, batch 64, "
	 "the handler copying the 64-byte payload (scripts/guard.sh)",
	 {{.dim = {[DIM_WORKLOADS] = "stream,rr", [DIM_POLICIES] = "poll"}, .touch = TOUCH_COPY}},
	 1, 3, NULL},
	{"log-cost", "ops/s of a vhost-user stream with dirty page logging off and on, each "
	 "policy, repeats paired back to back",
	 {G_LOG(TRANSPORT_VHOST_USER), G_LOG(TRANSPORT_VHOST_USER_LOG)}, 2, 10, NULL},
	/* Presets measured by a library (the ksim reproductions) add a row here with .run set. */
	{.name = "seed-2017", .help = "ksim: 4.13 vhost_net RX batching vs fixed vs vqsched "
	 "adaptive, 1/10/50 streams", .repeat = 3, .run = preset_seed2017_run},
	{.name = "seed-2023", .help = "ksim: task vs kthread vhost worker vs vqsched auto, "
	 "owner and vCPU pinned", .repeat = 12, .run = preset_seed2023_run},
};
const unsigned bench_npresets = sizeof(bench_presets) / sizeof(bench_presets[0]);

const struct preset *preset_find(const char *name)
{
	for (unsigned i = 0; i < bench_npresets; i++)
		if (!strcmp(bench_presets[i].name, name))
			return &bench_presets[i];
	return NULL;
}

static const char *const dim_default[DIM__COUNT] = {
	[DIM_WORKLOADS] = "stream", [DIM_POLICIES] = ALL_POLICIES, [DIM_STREAMS] = "1",
	[DIM_BATCHES] = "64", [DIM_PLACEMENTS] = "pin", [DIM_RATES] = "0",
};

#define MAX_LIST 32
struct list {
	unsigned n;
	long long v[MAX_LIST];
};

static int parse_item(enum dim d, const char *s, long long *v)
{
	char *end;
	switch (d) {
	case DIM_WORKLOADS: {
		enum workload w;
		int rc = workload_parse(s, &w);
		*v = w;
		return rc;
	}
	case DIM_POLICIES: {
		enum vqs_policy p;
		int rc = vqs_policy_parse(s, &p);
		*v = p;
		return rc;
	}
	case DIM_PLACEMENTS: {
		enum vqs_placement p;
		int rc = vqs_placement_parse(s, &p);
		*v = p;
		return rc;
	}
	default:
		errno = 0;
		*v = strtoll(s, &end, 10);
		if (errno || *end || end == s || *v < 0 || (d != DIM_RATES && *v == 0))
			return -EINVAL;
		return 0;
	}
}

static int parse_list(enum dim d, const char *s, struct list *l)
{
	char buf[512];
	if (strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	l->n = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (l->n == MAX_LIST || parse_item(d, t, &l->v[l->n]))
			return -EINVAL;
		l->n++;
	}
	return l->n ? 0 : -EINVAL;
}

static long long pick(const struct opts *o, enum scalar s, long long preset_or_default)
{
	return o->sc[s] >= 0 ? o->sc[s] : preset_or_default;
}

/* The settings every point of a group shares: defaults, then the group, then the flags. */
static void base_point(const struct opts *o, const struct preset_group *g, struct point *pt)
{
	memset(pt, 0, sizeof(*pt));
	pt->ring = (unsigned)pick(o, SC_RING, 256);
	pt->outstanding = (unsigned)pick(o, SC_OUTSTANDING, g->outstanding ? g->outstanding : 1);
	pt->payload = (unsigned)pick(o, SC_PAYLOAD, 64);
	pt->touch = (enum touch)pick(o, SC_TOUCH, g->touch);
	pt->drivers = (unsigned)pick(o, SC_DRIVERS, 1);
	pt->workers = (unsigned)pick(o, SC_WORKERS, 1);
	pt->poll_timeout_us = (uint32_t)pick(o, SC_POLL_TIMEOUT, 0);
	pt->spin_pct = (uint32_t)pick(o, SC_SPIN_PCT, BENCH_SPIN_PCT_DEFAULT);
	pt->handler_ns = (uint32_t)pick(o, SC_HANDLER_NS, 0);
	pt->exit_ns = (uint32_t)pick(o, SC_EXIT_NS, 0);
	pt->inject_pct = (uint32_t)pick(o, SC_INJECT_PCT, 0);
	pt->interleave = (uint32_t)pick(o, SC_INTERLEAVE, 0);
	pt->duration_ms = (uint32_t)pick(o, SC_DURATION,
					 o->quick ? 60 : g->duration_ms ? g->duration_ms : 250);
	pt->warmup_ms = (uint32_t)pick(o, SC_WARMUP, o->quick ? 20 : 60);
	pt->tx_batch = (unsigned)pick(o, SC_TX_BATCH, 0);
	pt->packed = pick(o, SC_PACKED, g->packed);
	pt->event_idx = pick(o, SC_EVENT_IDX, 1);
	pt->driver_block = pick(o, SC_DRIVER_BLOCK, g->driver_block);
	pt->shared_cpu = pick(o, SC_SHARED_CPU, g->shared_cpu);
	pt->transport = (enum transport)pick(o, SC_TRANSPORT, g->transport);

	/* Two CPUs: workers on the first, drivers on the second; the affinity shape puts the
	 * owner and the drivers on the first and lets the placement decide for the workers. */
	struct cpu_list all;
	cpu_allowed(&all);
	int first = all.n ? all.cpu[0] : 0, second = all.n > 1 ? all.cpu[1] : first;
	pt->worker_cpus = o->worker_cpus.n ? o->worker_cpus
					   : (struct cpu_list){.n = 1, .cpu = {first}};
	pt->driver_cpus = o->driver_cpus.n ? o->driver_cpus
					   : (struct cpu_list){.n = 1, .cpu = {pt->shared_cpu ? first : second}};
}

/* Long enough for min_samples latency samples at pt's offered rate (10% over, as the achieved
 * rate falls a little short), never shorter than its duration. */
static uint32_t point_duration_ms(const struct point *pt, unsigned min_samples)
{
	if (!pt->rate || !min_samples)
		return pt->duration_ms;
	uint64_t ms = (uint64_t)min_samples * 1100u / pt->rate + 1;
	return ms > pt->duration_ms ? (uint32_t)ms : pt->duration_ms;
}

/* Adds pt unless an identical point is already planned (flags can fold groups together). */
static int plan_add(struct plan *p, const struct point *pt)
{
	char key[256], other[256];
	point_key(pt, key, sizeof(key));
	for (unsigned i = 0; i < p->n; i++) {
		point_key(&p->pts[i], other, sizeof(other));
		if (!strcmp(key, other))
			return 0;
	}
	struct point *n = realloc(p->pts, (p->n + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->pts = n;
	p->pts[p->n++] = *pt;
	return 0;
}

static int expand_group(const struct opts *o, const struct preset_group *g, struct plan *out)
{
	struct list l[DIM__COUNT];
	for (unsigned d = 0; d < DIM__COUNT; d++) {
		const char *s = o->dim[d] ? o->dim[d] : g->dim[d] ? g->dim[d] : dim_default[d];
		if (parse_list((enum dim)d, s, &l[d]))
			return -EINVAL;
	}
	struct point base;
	base_point(o, g, &base);
	/* an explicit --duration-ms, or --quick, wins over the group's sample count */
	unsigned min_samples = o->sc[SC_DURATION] >= 0 || o->quick ? 0 : g->min_samples;
	if (!base.ring || base.ring > VQS_VQ_MAX_SIZE || !base.drivers || !base.outstanding)
		return -EINVAL;
	for (unsigned w = 0; w < l[DIM_WORKLOADS].n; w++)
		for (unsigned po = 0; po < l[DIM_POLICIES].n; po++)
			for (unsigned pl = 0; pl < l[DIM_PLACEMENTS].n; pl++)
				for (unsigned st = 0; st < l[DIM_STREAMS].n; st++)
					for (unsigned b = 0; b < l[DIM_BATCHES].n; b++)
						for (unsigned r = 0; r < l[DIM_RATES].n; r++) {
							struct point pt = base;
							pt.workload = (enum workload)l[DIM_WORKLOADS].v[w];
							bool rated = pt.workload == WL_STREAM || pt.workload == WL_SWEEP;
							/* batch and rate mean nothing to an idle queue, rate nothing to rr */
							if ((pt.workload == WL_IDLE && b) || (!rated && r))
								continue;
							pt.policy = (enum vqs_policy)l[DIM_POLICIES].v[po];
							pt.placement = (enum vqs_placement)l[DIM_PLACEMENTS].v[pl];
							pt.streams = (unsigned)l[DIM_STREAMS].v[st];
							pt.batch_max = (unsigned)l[DIM_BATCHES].v[b];
							pt.rate = rated ? (uint64_t)l[DIM_RATES].v[r] : 0;
							pt.duration_ms = point_duration_ms(&pt, min_samples);
							if (pt.drivers > pt.streams)
								pt.drivers = pt.streams;
							if (plan_add(out, &pt))
								return -ENOMEM;
						}
	return 0;
}

int plan_build(const struct opts *o, const struct preset *p, struct plan *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < p->ngroups; i++) {
		int rc = expand_group(o, &p->groups[i], out);
		if (rc) {
			plan_free(out);
			return rc;
		}
	}
	return 0;
}

void plan_free(struct plan *p)
{
	free(p->pts);
	memset(p, 0, sizeof(*p));
}
