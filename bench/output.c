/* SPDX-License-Identifier: MIT */
#include "output.h"

#include <errno.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cpu.h"
#include "json.h"

static void fmt_ns(char *b, size_t n, double ns)
{
	if (ns <= 0)
		snprintf(b, n, "-");
	else if (ns < 10000)
		snprintf(b, n, "%.0fns", ns);
	else if (ns < 10000000)
		snprintf(b, n, "%.1fus", ns / 1e3);
	else
		snprintf(b, n, "%.1fms", ns / 1e6);
}

static void fmt_rate(char *b, size_t n, double v)
{
	if (v >= 1e6)
		snprintf(b, n, "%.2fM", v / 1e6);
	else if (v >= 1e3)
		snprintf(b, n, "%.1fk", v / 1e3);
	else
		snprintf(b, n, "%.0f", v);
}

static void print_floors(FILE *f, const struct floors *fl)
{
	if (!fl->measured) {
		fprintf(f, "floors: not measured\n");
		return;
	}
	fprintf(f, "floors (CPU %d <-> CPU %d, both polling unless noted):\n", fl->cpu_a, fl->cpu_b);
	fprintf(f, "  cache-line round trip          %8.0f ns\n", fl->cacheline_rtt_ns);
	fprintf(f, "  eventfd wake-up round trip     %8.0f ns   (both sides sleeping)\n",
		fl->eventfd_rtt_ns);
	fprintf(f, "  timed sleep of %5.0f ns        %8.0f ns   (timer slack 50 us), %.0f ns "
		   "(slack 1 ns)\n",
		fl->timed_sleep_req_ns, fl->timed_sleep_ns[0], fl->timed_sleep_ns[1]);
	fprintf(f, "  minimal ring request/response  %8.0f ns p50, %.0f ns p99\n", fl->ring_rr_p50_ns,
		fl->ring_rr_p99_ns);
	for (unsigned i = 0; i < fl->nbatch; i++) {
		char r[32];
		fmt_rate(r, sizeof(r), fl->ring_ops_per_s[i]);
		fprintf(f, "  minimal ring stream, batch %-3u %8s ops/s\n", fl->batch[i], r);
	}
	fprintf(f, "reference, not a floor: vqsched's rings alone (no scheduler):\n");
	fprintf(f, "  (over the minimal ring: the median and range of %d trials, each the minimal ring "
		   "and both rings alone in turn;\n   waits: the device's sessions that found no chain, "
		   "the driver's steps that found no room)\n", FLOOR_TRIALS);
	for (unsigned l = 0; l < 2; l++) {
		const struct floor_x *x = &fl->vring_rr_x[l];
		fprintf(f, "  %-6s ring request/response    %8.0f ns p50, %.0f ns p99 (%.2fx the minimal "
			   "ring, %.2f-%.2fx)\n",
			l ? "packed" : "split", fl->vring_rr_p50_ns[l], fl->vring_rr_p99_ns[l], x->med,
			x->lo, x->hi);
	}
	for (unsigned l = 0; l < 2; l++)
		for (unsigned i = 0; i < fl->nbatch; i++) {
			char r[32];
			const struct floor_x *x = &fl->vring_stream_x[l][i];
			fmt_rate(r, sizeof(r), fl->vring_stream_ops_per_s[l][i]);
			fprintf(f, "  %-6s ring stream, batch %-3u %8s ops/s (%.0f%% of the minimal ring, "
				   "%.0f-%.0f%%; waits: device %.0f%%, driver %.0f%%)\n",
				l ? "packed" : "split", fl->batch[i], r, 100 * x->med, 100 * x->lo,
				100 * x->hi, 100 * fl->vring_stream_dev_empty[l][i],
				100 * fl->vring_stream_drv_full[l][i]);
		}
}

double machine_loadavg(void)
{
	double v = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

void output_table(FILE *f, const struct report *rep)
{
	fprintf(f, "\nvqs-bench preset %s (machine load average %.2f before the run, %.2f at its end, "
		   "which counts its own spinning threads)\n", rep->preset, rep->loadavg_start,
		rep->loadavg_end);
	print_floors(f, &rep->floors);
	fprintf(f, "\n%-7s %-6s %-9s %-12s %4s %5s %7s %8s %8s %8s %4s %8s %8s %8s %5s %5s %5s %5s %5s "
		   "%6s %9s %4s %7s\n",
		"load", "ring", "policy", "place", "strm", "batch", "rate", "ops/s", "p50", "p99", "+-%",
		"p99.9",
		"wCPU/op", "dCPU/op", "wCPU", "kick", "call", "rearm", "wake", "batch", "vs-floor", "loss",
		"samples");
	for (unsigned i = 0; i < rep->nresults; i++) {
		const struct result *r = &rep->results[i];
		const struct point *pt = &r->pt;
		char rate[16], ops[16], p50[16], p99[16], p999[16], wc[16], dc[16], fl[24];
		fmt_rate(rate, sizeof(rate), (double)pt->rate);
		if (!pt->rate)
			strcpy(rate, pt->workload == WL_RR ? "closed" : "max");
		fmt_rate(ops, sizeof(ops), r->med[FIG_OPS]);
		fmt_ns(p50, sizeof(p50), r->med[FIG_P50]);
		fmt_ns(p99, sizeof(p99), r->med[FIG_P99]);
		fmt_ns(p999, sizeof(p999), r->med[FIG_P999]);
		fmt_ns(wc, sizeof(wc), r->med[FIG_WCPU]);
		fmt_ns(dc, sizeof(dc), r->med[FIG_DCPU]);
		if (r->floor_name)
			snprintf(fl, sizeof(fl), "%.2fx", r->floor_ratio);
		else
			strcpy(fl, "-");
		const char *ring = pt->packed ? "packed" : "split";
		char place[96];
		snprintf(place, sizeof(place), "%s%s%s%s", vqs_placement_name(pt->placement),
			 pt->shared_cpu ? "*" : "", pt->placement == VQS_PLACE_PIN ? "" : ":",
			 pt->placement == VQS_PLACE_PIN ? "" : r->worker_cpus);
		if (r->error && !r->repeats) {
			fprintf(f, "%-7s %-6s %-9s %-12s %4u %5u %7s  error: %s\n",
				workload_name(pt->workload), ring, vqs_policy_name(pt->policy), place,
				pt->streams, pt->batch_max, rate, strerror(-r->error));
			continue;
		}
		fprintf(f,
			"%-7s %-6s %-9s %-12s %4u %5u %7s %8s %8s %8s %4.0f %8s %8s %8s %4.0f%% %5.2f %5.2f "
			"%5.2f %5.2f %6.1f %9s %4llu %7.0f%s\n",
			workload_name(pt->workload), ring, vqs_policy_name(pt->policy), place, pt->streams,
			pt->batch_max, rate, ops, p50, p99,
			r->med[FIG_P99] > 0 ? 50 * (r->max[FIG_P99] - r->min[FIG_P99]) / r->med[FIG_P99] : 0,
			p999, wc, dc, r->med[FIG_WUTIL] * 100,
			r->med[FIG_KICKS], r->med[FIG_CALLS], r->med[FIG_REARMS], r->med[FIG_WAKES],
			r->med[FIG_BATCH], fl, (unsigned long long)(r->lost + r->duplicated + r->corrupted),
			r->min[FIG_SAMPLES], r->error ? " (some repeats failed)" : "");
	}
	fprintf(f, "(place*: owner and driver share one CPU; place:N = CPUs the worker got; vs-floor: "
		   "at max rate, ops/s over the minimal ring at that batch; otherwise p50 over the "
		   "minimal ring request/response; +-%%: half the p99's range over the repeats, in %% "
		   "of its median; rearm, wake: notification re-arms and worker wake-ups per op; "
		   "samples: latency samples of the smallest repeat)\n");
	if (rep->ngoals) {
		fprintf(f, "\ngoals (computed from this run):\n");
		for (unsigned i = 0; i < rep->ngoals; i++) {
			const struct goal *g = &rep->goals[i];
			fprintf(f, "  [%s] %s: %s\n       %s\n",
				g->status == 1 ? "PASS" : g->status == 0 ? "FAIL" : "n/a ", g->name, g->rule,
				g->detail);
		}
	}
	fprintf(f, "\nelapsed %.1f s\n", rep->elapsed_s);
}

/* ---- JSON ---- */

/* `, "key": v`: a field after the first of an object. */
static void json_field(FILE *f, const char *key, double v)
{
	fprintf(f, ", \"%s\": ", key);
	json_write_num(f, v);
}

static void read_line(const char *path, const char *prefix, char *out, size_t len)
{
	out[0] = 0;
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, prefix, strlen(prefix))) {
			const char *v = strchr(line, ':');
			v = v ? v + 1 : line + strlen(prefix);
			while (*v == ' ' || *v == '\t')
				v++;
			snprintf(out, len, "%s", v);
			out[strcspn(out, "\n")] = 0;
			break;
		}
	fclose(f);
}

const char *output_process_id(void)
{
	static char id[64];
	if (!id[0]) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		snprintf(id, sizeof(id), "%ld-%lld.%09ld", (long)getpid(), (long long)ts.tv_sec,
			 ts.tv_nsec);
	}
	return id;
}

static void json_machine(FILE *f, const struct report *rep)
{
	struct utsname u;
	char model[512], date[64];
	struct cpu_list allowed;
	uname(&u);
	read_line("/proc/cpuinfo", "model name", model, sizeof(model));
	cpu_allowed(&allowed);
	time_t now = time(NULL);
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(f, "  \"machine\": {\"cpu_model\": ");
	json_write_str(f, model);
	fprintf(f, ", \"cpus_online\": %ld, \"cpus_allowed\": [", sysconf(_SC_NPROCESSORS_ONLN));
	for (unsigned i = 0; i < allowed.n; i++)
		fprintf(f, "%s%d", i ? ", " : "", allowed.cpu[i]);
	fprintf(f, "], \"kernel\": ");
	json_write_str(f, u.release);
	fprintf(f, ", \"arch\": ");
	json_write_str(f, u.machine);
	fprintf(f, ", \"hostname\": ");
	json_write_str(f, u.nodename);
	fprintf(f, ", \"vqsched_version\": ");
	json_write_str(f, vqs_version_string());
	fprintf(f, ", \"loadavg_start\": ");
	json_write_num(f, rep->loadavg_start);
	fprintf(f, ", \"loadavg_end\": ");
	json_write_num(f, rep->loadavg_end);
	fprintf(f, ", \"date_utc\": \"%s\"},\n", date);
}

/* A ratio over the floors' trials: {"median": M, "min": L, "max": H}. */
static void json_floor_x(FILE *f, const struct floor_x *x)
{
	fprintf(f, "{\"median\": ");
	json_write_num(f, x->med);
	json_field(f, "min", x->lo);
	json_field(f, "max", x->hi);
	fputc('}', f);
}

static void json_floors(FILE *f, const struct floors *fl)
{
	fprintf(f, "  \"floors\": {\"measured\": %s, \"cpu_a\": %d, \"cpu_b\": %d, ",
		fl->measured ? "true" : "false", fl->cpu_a, fl->cpu_b);
	fprintf(f, "\"cacheline_rtt_ns\": ");
	json_write_num(f, fl->cacheline_rtt_ns);
	json_field(f, "eventfd_rtt_ns", fl->eventfd_rtt_ns);
	json_field(f, "timed_sleep_req_ns", fl->timed_sleep_req_ns);
	fprintf(f, ", \"timed_sleep_ns\": [");
	json_write_num(f, fl->timed_sleep_ns[0]);
	fprintf(f, ", ");
	json_write_num(f, fl->timed_sleep_ns[1]);
	fprintf(f, "]");
	json_field(f, "ring_rr_p50_ns", fl->ring_rr_p50_ns);
	json_field(f, "ring_rr_p99_ns", fl->ring_rr_p99_ns);
	fprintf(f, ", \"vring_rr_p50_ns\": {\"split\": ");
	json_write_num(f, fl->vring_rr_p50_ns[0]);
	json_field(f, "packed", fl->vring_rr_p50_ns[1]);
	fprintf(f, "}, \"vring_rr_p99_ns\": {\"split\": ");
	json_write_num(f, fl->vring_rr_p99_ns[0]);
	json_field(f, "packed", fl->vring_rr_p99_ns[1]);
	fprintf(f, "}, \"vring_rr_x_minimal\": {\"split\": ");
	json_floor_x(f, &fl->vring_rr_x[0]);
	fprintf(f, ", \"packed\": ");
	json_floor_x(f, &fl->vring_rr_x[1]);
	fprintf(f, "}");
	fprintf(f, ", \"vring_stream\": [");
	for (unsigned i = 0; i < fl->nbatch; i++) {
		fprintf(f, "%s{\"batch\": %u, \"ops_per_s\": ", i ? ", " : "", fl->batch[i]);
		json_write_num(f, fl->vring_stream_ops_per_s[0][i]);
		json_field(f, "packed_ops_per_s", fl->vring_stream_ops_per_s[1][i]);
		fprintf(f, ", \"x_minimal\": ");
		json_floor_x(f, &fl->vring_stream_x[0][i]);
		fprintf(f, ", \"packed_x_minimal\": ");
		json_floor_x(f, &fl->vring_stream_x[1][i]);
		json_field(f, "dev_empty", fl->vring_stream_dev_empty[0][i]);
		json_field(f, "drv_full", fl->vring_stream_drv_full[0][i]);
		json_field(f, "packed_dev_empty", fl->vring_stream_dev_empty[1][i]);
		json_field(f, "packed_drv_full", fl->vring_stream_drv_full[1][i]);
		fprintf(f, "}");
	}
	fprintf(f, "]");
	fprintf(f, ", \"ring_stream\": [");
	for (unsigned i = 0; i < fl->nbatch; i++) {
		fprintf(f, "%s{\"batch\": %u, \"ops_per_s\": ", i ? ", " : "", fl->batch[i]);
		json_write_num(f, fl->ring_ops_per_s[i]);
		fputc('}', f);
	}
	fprintf(f, "]},\n");
}

/* When each repeat ran; for adaptive, what its worker napped and had learned by the window's
 * end: the inputs of its decisions (docs/sched.md, "Cost model"). */
static void json_repeat_info(FILE *f, const struct result *r)
{
	fprintf(f, ", \"run_seq\": [");
	for (unsigned i = 0; i < r->nsamples; i++)
		fprintf(f, "%s%u", i ? ", " : "", r->info[i].run_seq);
	fputc(']', f);
	fprintf(f, ", \"window_faults\": [");
	for (unsigned i = 0; i < r->nsamples; i++)
		fprintf(f, "%s%llu", i ? ", " : "", (unsigned long long)r->info[i].faults);
	fputc(']', f);
	if (point_beside(&r->pt) != BESIDE_NONE) {
		fprintf(f, ", \"beside\": [");
		for (unsigned i = 0; i < r->nsamples; i++) {
			fprintf(f, "%s", i ? ", " : "");
			json_write_num(f, r->info[i].beside);
		}
		fputc(']', f);
	}
	if (r->pt.policy != VQS_POLICY_ADAPTIVE)
		return;
	fprintf(f, ",\n     \"worker0\": [");
	for (unsigned i = 0; i < r->nsamples; i++) {
		const struct repeat_info *x = &r->info[i];
		const struct vqs_worker_stats *w = &x->w0;
		fprintf(f, "%s{\"naps_per_op\": ", i ? ", " : "");
		json_write_num(f, x->naps_per_op);
		fprintf(f, ", \"cost_reads_per_op\": ");
		json_write_num(f, x->cost_reads_per_op);
		fprintf(f, ", \"wake_ns\": %llu, \"timer_ns\": %llu, \"nap_cpu_ns\": %llu, "
			   "\"sleep_cpu_ns\": %llu, \"spin_max_ns\": %llu, \"poll_max_ns\": %llu, "
			   "\"stall_ns\": %llu, \"stall_tail_ns\": %llu, \"mode_changes\": %llu, "
			   "\"polling_ends\": %llu, \"rent_naps\": %llu, \"late_naps\": %llu}",
			(unsigned long long)w->wake_ns, (unsigned long long)w->timer_ns,
			(unsigned long long)w->nap_cpu_ns, (unsigned long long)w->sleep_cpu_ns,
			(unsigned long long)w->spin_max_ns, (unsigned long long)w->poll_max_ns,
			(unsigned long long)w->stall_ns, (unsigned long long)w->stall_tail_ns,
			(unsigned long long)x->mode_changes, (unsigned long long)x->polling_ends,
			(unsigned long long)x->rent_naps, (unsigned long long)x->late_naps);
	}
	fputc(']', f);
}

static void json_figs(FILE *f, const double *v)
{
	for (unsigned k = 0; k < FIG__COUNT; k++) {
		fprintf(f, "%s\"%s\": ", k ? ", " : "", fig_names[k]);
		json_write_num(f, v[k]);
	}
}

static void json_run(FILE *f, const struct result *r)
{
	const struct point *pt = &r->pt;
	fprintf(f, "    {\"key\": ");
	json_write_str(f, r->key);
	fprintf(f, ", \"workload\": \"%s\", \"policy\": \"%s\", \"placement\": \"%s\", "
		   "\"shared_cpu\": %s, \"layout\": \"%s\", \"event_idx\": %s, \"driver_wait\": \"%s\", "
		   "\"transport\": \"%s\", "
		   "\"streams\": %u, \"batch_max\": %u, \"tx_batch\": %u, \"ring\": %u, "
		   "\"outstanding\": %u, \"payload\": %u, \"touch\": \"%s\", \"drivers\": %u, "
		   "\"workers\": %u, \"poll_timeout_us\": %u, \"spin_pct\": %u, \"rate\": %llu, "
		   "\"handler_ns\": %u, \"exit_ns\": %u, \"inject_pct\": %u, \"inject_ns\": %.2f, "
		   "\"inject_ns_worker\": %.2f, \"inject_ns_driver\": %.2f, "
		   "\"inject_achieved_pct\": %.2f, \"duration_ms\": %u, \"repeats\": %u, "
		   "\"error\": %d, \"worker_cpus\": \"%s\",\n     ",
		workload_name(pt->workload), vqs_policy_name(pt->policy),
		vqs_placement_name(pt->placement), pt->shared_cpu ? "true" : "false",
		pt->packed ? "packed" : "split", pt->event_idx ? "true" : "false",
		pt->driver_block ? "block" : "spin", transport_name(pt->transport), pt->streams,
		pt->batch_max, pt->tx_batch, pt->ring,
		pt->outstanding, pt->payload, touch_name(pt->touch), pt->drivers, pt->workers,
		pt->poll_timeout_us, pt->spin_pct, (unsigned long long)pt->rate, pt->handler_ns,
		pt->exit_ns, pt->inject_pct, r->inject_ns, r->inject_side_ns[0], r->inject_side_ns[1],
		r->inject_achieved_pct, pt->duration_ms,
		r->repeats, r->error, r->worker_cpus);
	json_figs(f, r->med);
	fprintf(f, ", \"lost\": %llu, \"duplicated\": %llu, \"corrupted\": %llu,\n     \"min\": {",
		(unsigned long long)r->lost, (unsigned long long)r->duplicated,
		(unsigned long long)r->corrupted);
	json_figs(f, r->min);
	fprintf(f, "},\n     \"max\": {");
	json_figs(f, r->max);
	fprintf(f, "},\n     \"samples\": {");
	for (unsigned k = 0; k < FIG__COUNT; k++) {
		fprintf(f, "%s\"%s\": [", k ? ", " : "", fig_names[k]);
		for (unsigned i = 0; i < r->nsamples; i++) {
			fputs(i ? ", " : "", f);
			json_write_num(f, r->samples[(size_t)i * FIG__COUNT + k]);
		}
		fputc(']', f);
	}
	fputc('}', f);
	if (r->info)
		json_repeat_info(f, r);
	/* both sides of an interleaved run come from the same repeats: compare pairs them */
	if (pt->interleave) {
		fprintf(f, ", \"interleave\": %u, \"sample_round\": [", pt->interleave);
		for (unsigned i = 0; i < r->nsamples; i++)
			fprintf(f, "%s%u", i ? ", " : "", i);
		fputc(']', f);
	}
	fprintf(f, ",\n     \"batch_hist\": [");
	for (unsigned b = 0; b < BATCH_BUCKETS; b++)
		fprintf(f, "%s%llu", b ? ", " : "", (unsigned long long)r->batch_hist[b]);
	fprintf(f, "], \"floor\": ");
	if (r->floor_name) {
		json_write_str(f, r->floor_name);
		fprintf(f, ", \"floor_value\": ");
		json_write_num(f, r->floor_value);
		fprintf(f, ", \"floor_ratio\": ");
		json_write_num(f, r->floor_ratio);
	} else {
		fprintf(f, "null, \"floor_value\": null, \"floor_ratio\": null");
	}
	fputc('}', f);
}

int output_json(const char *path, const struct report *rep)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "{\n  \"schema\": 2,\n  \"tool\": \"vqs-bench\",\n  \"preset\": ");
	json_write_str(f, rep->preset);
	fprintf(f, ",\n  \"process\": ");
	json_write_str(f, output_process_id());
	fprintf(f, ",\n  \"command\": ");
	json_write_str(f, rep->argv_line);
	fprintf(f, ",\n  \"elapsed_s\": ");
	json_write_num(f, rep->elapsed_s);
	fprintf(f, ",\n");
	json_machine(f, rep);
	json_floors(f, &rep->floors);
	fprintf(f, "  \"runs\": [\n");
	for (unsigned i = 0; i < rep->nresults; i++) {
		json_run(f, &rep->results[i]);
		fprintf(f, "%s\n", i + 1 < rep->nresults ? "," : "");
	}
	fprintf(f, "  ],\n  \"figures\": [");
	for (unsigned i = 0; i < rep->nfigures; i++) {
		const struct figure *g = &rep->figures[i];
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_write_str(f, g->name);
		fprintf(f, ", \"unit\": ");
		json_write_str(f, g->unit);
		fprintf(f, ", \"better\": \"%s\", \"samples\": [", g->higher_better ? "higher" : "lower");
		for (unsigned k = 0; k < g->n; k++) {
			fprintf(f, "%s", k ? ", " : "");
			json_write_num(f, g->samples[k]);
		}
		fputc(']', f);
		for (unsigned k = 0; g->by_repeat && k < g->n; k++)
			fprintf(f, "%s%u", k ? ", " : ", \"sample_round\": [", k);
		fprintf(f, "%s}", g->by_repeat && g->n ? "]" : "");
	}
	fprintf(f, "\n  ],\n  \"goals\": [");
	for (unsigned i = 0; i < rep->ngoals; i++) {
		const struct goal *g = &rep->goals[i];
		fprintf(f, "%s\n    {\"name\": ", i ? "," : "");
		json_write_str(f, g->name);
		fprintf(f, ", \"rule\": ");
		json_write_str(f, g->rule);
		fprintf(f, ", \"status\": \"%s\", \"detail\": ",
			g->status == 1 ? "pass" : g->status == 0 ? "fail" : "not_measured");
		json_write_str(f, g->detail);
		fputc('}', f);
	}
	fprintf(f, "\n  ]\n}\n");
	int rc = ferror(f) ? -EIO : 0;
	if (fclose(f))
		rc = -errno;
	return rc;
}

/* ---- CSV ---- */

int output_csv(const char *path, const struct report *rep)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "key,workload,policy,placement,worker_cpus,shared_cpu,layout,driver_wait,transport,streams,"
		   "batch_max,ring,outstanding,payload,touch,rate,handler_ns,exit_ns,inject_pct,inject_ns,"
		   "inject_achieved_pct,repeats,error");
	for (unsigned k = 0; k < FIG__COUNT; k++)
		fprintf(f, ",%s,%s_min,%s_max", fig_names[k], fig_names[k], fig_names[k]);
	fprintf(f, ",lost,duplicated,corrupted,floor,floor_value,floor_ratio\n");
	for (unsigned i = 0; i < rep->nresults; i++) {
		const struct result *r = &rep->results[i];
		const struct point *pt = &r->pt;
		fprintf(f, "%s,%s,%s,%s,\"%s\",%d,%s,%s,%s,%u,%u,%u,%u,%u,%s,%llu,%u,%u,%u,%.1f,%.2f,%u,%d",
			r->key,
			workload_name(pt->workload), vqs_policy_name(pt->policy),
			vqs_placement_name(pt->placement), r->worker_cpus, pt->shared_cpu,
			pt->packed ? "packed" : "split",
			pt->driver_block ? "block" : "spin", transport_name(pt->transport), pt->streams,
			pt->batch_max, pt->ring,
			pt->outstanding, pt->payload, touch_name(pt->touch), (unsigned long long)pt->rate,
			pt->handler_ns, pt->exit_ns, pt->inject_pct, r->inject_ns, r->inject_achieved_pct,
			r->repeats, r->error);
		for (unsigned k = 0; k < FIG__COUNT; k++)
			fprintf(f, ",%.6g,%.6g,%.6g", r->med[k], r->min[k], r->max[k]);
		fprintf(f, ",%llu,%llu,%llu,%s,%.6g,%.6g\n", (unsigned long long)r->lost,
			(unsigned long long)r->duplicated, (unsigned long long)r->corrupted,
			r->floor_name ? r->floor_name : "", r->floor_value, r->floor_ratio);
	}
	int rc = ferror(f) ? -EIO : 0;
	if (fclose(f))
		rc = -errno;
	return rc;
}
