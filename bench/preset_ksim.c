/* SPDX-License-Identifier: MIT */
/*
 * Presets seed-2017 and seed-2023: the two kernel-regression reproductions of vqsched's ksim
 * model (include/vqsched/ksim.h), run through the library. They print ksim's own tables and
 * verdicts (not the workload table: most of its columns mean nothing for the model).
 *
 * The report carries, for `compare`, the figures of one kernel column with one sample per
 * repeat: seed-2017 the goodput at each stream count of --variant 4.13 (the batched RX path,
 * default) or 4.12 (the fixed path with batch 1, what 4.12 ran); seed-2023 TCP_STREAM and TCP_RR
 * of --worker task (default) or kthread. Two reports, one per variant, compare like two builds.
 *
 * Each table cell also becomes one report run: the kernel-model columns as a `dedicated` worker
 * (vhost's one worker per device) placed `float` (kthread mode) or `inherit` (task mode), the
 * vqsched columns with the policy and placement the model gave them. ops_per_s counts packets
 * (streams) or transactions (rr) per second, kicks_per_op the guest's kicks per packet;
 * latencies and per-thread CPU are not measured by the model and stay 0. The key names the
 * variant and batch (seed-2017) or the worker mode (seed-2023), which no point field holds.
 * What the runs cannot carry (drops, retransmits, timeouts, the CPUs the model got) is printed
 * as one `ksim-run` line per run after ksim's tables.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "presets.h"

/* What one table cell is, in the report's terms. */
struct cell_shape {
	const char *name; /* variant or worker mode, for the key */
	enum workload workload;
	enum vqs_policy policy;
	enum vqs_placement placement;
	unsigned streams, batch_max;
	bool shared_cpu;
};

struct cell_costs {
	const struct vqs_ksim_costs *costs;
	uint32_t cell_ms;
	uint32_t payload;
};

static unsigned repeats_for(const struct opts *o)
{
	const struct preset *p = preset_find(o->preset);
	return o->repeat ? o->repeat : o->quick || !p ? 1 : p->repeat;
}

static uint32_t cell_ms_for(const struct opts *o, uint32_t preset_ms)
{
	return o->sc[SC_DURATION] > 0 ? (uint32_t)o->sc[SC_DURATION] : preset_ms;
}

/* Append one cell as a result; returns it so the caller can fill what only it knows. */
static struct result *add_cell(struct report *rep, const char *preset,
			       const struct cell_shape *sh, const struct cell_costs *k,
			       const struct vqs_ksim_cell *c)
{
	struct result *r = &rep->results[rep->nresults++];
	struct point *pt = &r->pt;
	memset(r, 0, sizeof(*r));
	pt->workload = sh->workload;
	pt->policy = sh->policy;
	pt->placement = sh->placement;
	pt->shared_cpu = sh->shared_cpu;
	pt->event_idx = true; /* the modelled guests negotiate EVENT_IDX */
	pt->driver_block = k->costs->wait == VQS_KSIM_WAIT_BLOCK;
	pt->streams = sh->streams;
	pt->batch_max = sh->batch_max;
	pt->ring = 256; /* the modelled virtio-net queues' size */
	pt->outstanding = 1;
	pt->payload = k->payload;
	pt->drivers = 1;
	pt->workers = 1;
	pt->handler_ns = k->costs->host_pkt_ns;
	pt->exit_ns = k->costs->exit_ns;
	pt->duration_ms = k->cell_ms;
	pt->warmup_ms = k->cell_ms / 5 + 20; /* what ksim waits before measuring */

	struct sample s = {.error = c->err};
	if (!c->err && c->elapsed_ns) {
		s.fig[FIG_OPS] = (double)c->delivered * 1e9 / (double)c->elapsed_ns;
		s.fig[FIG_KICKS] = c->delivered ? (double)c->kicks / (double)c->delivered : 0;
	}
	result_fold(r, &s, 1);
	char point[200];
	point_key(pt, point, sizeof(point));
	snprintf(r->key, sizeof(r->key), "%s/%s/%s", preset, sh->name, point);
	r->repeats = c->err ? 0 : c->repeats;
	return r;
}

/* One line per row: the cell's figures that the report's fields do not hold. */
static void print_run_line(const struct result *r, const struct vqs_ksim_cell *c,
			   const char *rate_unit)
{
	printf("ksim-run %s rate=%.0f %s delivered=%llu drops_batch=%llu drops_ring=%llu "
	       "retransmits=%llu timeouts=%llu cpus_used=%.2f repeats=%u err=%d\n",
	       r->key, c->rate, rate_unit, (unsigned long long)c->delivered,
	       (unsigned long long)c->drops_batch, (unsigned long long)c->drops_ring,
	       (unsigned long long)c->retransmits, (unsigned long long)c->timeouts, c->cpus_used,
	       c->repeats, c->err);
}

static int alloc_results(struct report *rep, unsigned n)
{
	rep->results = calloc(n, sizeof(*rep->results));
	return rep->results ? 0 : -ENOMEM;
}

/* Which of two names `arg` of `flag` is: 0 for NULL or the first (the default), 1 for the
 * second; -EINVAL for anything else, or when the other preset's flag was given. */
static int pick(const char *flag, const char *arg, const char *first, const char *second,
		const char *other_flag, const char *other_arg)
{
	if (other_arg) {
		fprintf(stderr, "vqs-bench: %s is not for this preset (it has %s)\n", other_flag,
			flag);
		return -EINVAL;
	}
	if (!arg || !strcmp(arg, first))
		return 0;
	if (!strcmp(arg, second))
		return 1;
	fprintf(stderr, "vqs-bench: %s %s: expected %s or %s\n", flag, arg, first, second);
	return -EINVAL;
}

/* One report figure from a cell's runs (of `variant`); printed with its samples. The repeats
 * run every cell in turn (ksim_table_run), so sample i of two columns ran at about the same time:
 * when no run failed, the figure says so (by_repeat) and compare pairs the columns by repeat. */
static void add_figure(struct report *rep, const char *name, const char *unit,
		       const struct vqs_ksim_cell *c, const char *variant, unsigned repeats)
{
	struct figure *g = &rep->figures[rep->nfigures++];
	snprintf(g->name, sizeof(g->name), "%s", name);
	g->unit = unit;
	g->higher_better = true;
	g->n = c->err ? 0 : c->repeats;
	g->by_repeat = g->n == repeats;
	printf("figure %s %s (%s):", name, unit, variant);
	for (unsigned i = 0; i < g->n; i++) {
		g->samples[i] = c->run_rate[i];
		printf(" %.0f", g->samples[i]);
	}
	printf("\n");
}

static void set_host(const struct opts *o, struct vqs_ksim_costs *c)
{
	if (o->bare_metal)
		vqs_ksim_costs_set_host(c, VQS_KSIM_HOST_BARE_METAL);
}

/* seed-2017 columns: 4.13 b1, 4.13 b64, fixed b1, fixed b64, vqsched adaptive. */
static void seed2017_shape(unsigned col, unsigned streams, struct cell_shape *sh)
{
	static const char *const names[VQS_KSIM_SEED2017_COLS] = {"4.13-b1", "4.13-b64", "fixed-b1",
								  "fixed-b64", "vqsched-adaptive"};
	bool vqsched = col == VQS_KSIM_SEED2017_COLS - 1;
	*sh = (struct cell_shape){
		.name = names[col],
		.workload = WL_STREAM,
		/* the adapter's scheduler: adaptive, default placement (float) and batch limit */
		.policy = vqsched ? VQS_POLICY_ADAPTIVE : VQS_POLICY_DEDICATED,
		.placement = VQS_PLACE_FLOAT,
		.streams = streams,
		.batch_max = vqsched || col % 2 ? VQS_KSIM_NET_BATCH : 1,
	};
}

int preset_seed2017_run(const struct opts *o, struct report *rep, struct report *base)
{
	/* The 4.13 path with its batch, or what 4.12 ran: the fixed path one packet at a time. */
	static const unsigned variant_col[2] = {VQS_KSIM_SEED2017_413_B64,
						VQS_KSIM_SEED2017_FIXED_B1};
	static const char *const variant_name[2] = {"4.13", "4.12"};
	int variant = pick("--variant", o->variant, "4.13", "4.12", "--worker", o->worker);
	if (variant < 0)
		return variant;
	struct vqs_ksim_seed2017_opts ko;
	vqs_ksim_seed2017_opts_init(&ko, o->quick);
	set_host(o, &ko.costs);
	ko.repeats = repeats_for(o);
	ko.cell_ms = cell_ms_for(o, ko.cell_ms);
	if (o->dim[DIM_STREAMS]) { /* the rows to run, the others not */
		const char *p = o->dim[DIM_STREAMS];
		unsigned n = 0;
		memset(ko.streams, 0, sizeof(ko.streams));
		for (char *end; *p && n < VQS_KSIM_SEED2017_ROWS; p = *end == ',' ? end + 1 : end) {
			unsigned long v = strtoul(p, &end, 10);
			if (end == p || !v || v > UINT16_MAX || (*end && *end != ','))
				break;
			ko.streams[n++] = (unsigned)v;
		}
		if (*p || !n) {
			fprintf(stderr, "vqs-bench: seed-2017 --streams takes 1 to %u stream counts\n",
				VQS_KSIM_SEED2017_ROWS);
			return -EINVAL;
		}
	}
	struct vqs_ksim_seed2017_result kr = {.size = sizeof(kr)};
	fprintf(stderr, "seed-2017: %u cells x %u, %u ms each...\n",
		VQS_KSIM_SEED2017_ROWS * VQS_KSIM_SEED2017_COLS, ko.repeats, ko.cell_ms);
	int rc = vqs_ksim_seed2017_run(&ko, &kr);
	if (rc || (rc = alloc_results(rep, VQS_KSIM_SEED2017_ROWS * VQS_KSIM_SEED2017_COLS)))
		return rc;
	vqs_ksim_seed2017_print(stdout, &ko, &kr);
	printf("figures of variant %s (column %s)%s, one sample per repeat:\n",
	       variant_name[variant], vqs_ksim_seed2017_col_name(variant_col[variant]),
	       base ? ", and of the other for --json-base" : "");
	for (unsigned row = 0; row < VQS_KSIM_SEED2017_ROWS && kr.streams[row]; row++) {
		char name[64];
		snprintf(name, sizeof(name), "goodput-%u-stream%s", kr.streams[row],
			 kr.streams[row] > 1 ? "s" : "");
		add_figure(rep, name, "Mbit/s", &kr.cell[row][variant_col[variant]],
			   variant_name[variant], ko.repeats);
		if (base)
			add_figure(base, name, "Mbit/s", &kr.cell[row][variant_col[!variant]],
				   variant_name[!variant], ko.repeats);
	}
	struct cell_costs k = {.costs = &ko.costs, .cell_ms = ko.cell_ms,
			       .payload = ko.costs.pkt_bytes};
	for (unsigned row = 0; row < VQS_KSIM_SEED2017_ROWS && kr.streams[row]; row++)
		for (unsigned col = 0; col < VQS_KSIM_SEED2017_COLS; col++) {
			struct cell_shape sh;
			seed2017_shape(col, kr.streams[row], &sh);
			const struct vqs_ksim_cell *c = &kr.cell[row][col];
			print_run_line(add_cell(rep, "seed-2017", &sh, &k, c), c, "Mbit/s");
		}
	return 0;
}

/* seed-2023 columns: task mode, kthread mode, vqsched auto (dedicated policy). */
static void seed2023_shape(unsigned row, unsigned col, struct cell_shape *sh)
{
	static const char *const names[VQS_KSIM_SEED2023_COLS] = {"task", "kthread",
								  "vqsched-auto"};
	static const enum vqs_placement place[VQS_KSIM_SEED2023_COLS] = {
		VQS_PLACE_INHERIT, VQS_PLACE_FLOAT, VQS_PLACE_AUTO};
	*sh = (struct cell_shape){
		.name = names[col],
		.workload = row == 0 ? WL_STREAM : WL_RR,
		.policy = VQS_POLICY_DEDICATED,
		.placement = place[col],
		.streams = 1,
		.batch_max = VQS_KSIM_NET_BATCH,
		.shared_cpu = true, /* the owner and the vCPU share one pinned CPU */
	};
}

int preset_seed2023_run(const struct opts *o, struct report *rep, struct report *base)
{
	static const unsigned worker_col[2] = {VQS_KSIM_SEED2023_TASK, VQS_KSIM_SEED2023_KTHREAD};
	static const char *const worker_name[2] = {"task", "kthread"};
	int worker = pick("--worker", o->worker, "task", "kthread", "--variant", o->variant);
	if (worker < 0)
		return worker;
	struct vqs_ksim_seed2023_opts ko;
	vqs_ksim_seed2023_opts_init(&ko, o->quick);
	set_host(o, &ko.costs);
	ko.repeats = repeats_for(o);
	ko.cell_ms = cell_ms_for(o, ko.cell_ms);
	ko.interleave = o->sc[SC_INTERLEAVE] > 0 ? (uint32_t)o->sc[SC_INTERLEAVE] : 0;
	/* The owner and vCPU on the first CPU this process may use, the external host on the
	 * second (floating when there is only one). */
	struct cpu_list all;
	cpu_allowed(&all);
	ko.vcpu_cpu = all.n ? all.cpu[0] : 0;
	ko.peer_cpu = all.n > 1 ? all.cpu[1] : -1;
	struct vqs_ksim_seed2023_result kr = {.size = sizeof(kr)};
	fprintf(stderr, "seed-2023: %u cells x %u, %u ms each%s...\n",
		VQS_KSIM_SEED2023_ROWS * VQS_KSIM_SEED2023_COLS, ko.repeats, ko.cell_ms,
		ko.interleave ? ", task and kthread interleaved" : "");
	int rc = vqs_ksim_seed2023_run(&ko, &kr);
	if (rc || (rc = alloc_results(rep, VQS_KSIM_SEED2023_ROWS * VQS_KSIM_SEED2023_COLS)))
		return rc;
	vqs_ksim_seed2023_print(stdout, &ko, &kr);
	printf("figures of the %s-mode worker%s, one sample per repeat:\n", worker_name[worker],
	       base ? ", and of the other for --json-base" : "");
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++) {
		const char *unit = row == 0 ? "Mbit/s" : "trans/s";
		add_figure(rep, vqs_ksim_seed2023_row_name(row), unit,
			   &kr.cell[row][worker_col[worker]], worker_name[worker], ko.repeats);
		if (base)
			add_figure(base, vqs_ksim_seed2023_row_name(row), unit,
				   &kr.cell[row][worker_col[!worker]], worker_name[!worker],
				   ko.repeats);
	}
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++)
		for (unsigned col = 0; col < VQS_KSIM_SEED2023_COLS; col++) {
			struct cell_shape sh;
			seed2023_shape(row, col, &sh);
			struct cell_costs k = {.costs = &ko.costs, .cell_ms = ko.cell_ms,
					       .payload = row == 0 ? ko.costs.pkt_bytes
								   : VQS_KSIM_SEED2023_RR_BYTES};
			const struct vqs_ksim_cell *c = &kr.cell[row][col];
			struct result *r = add_cell(rep, "seed-2023", &sh, &k, c);
			memcpy(r->worker_cpus, kr.worker_cpus[col], sizeof(kr.worker_cpus[col]));
			print_run_line(r, c, row == 0 ? "Mbit/s" : "trans/s");
		}
	return 0;
}
