/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench: measure the floors of this machine, run a preset's points (each `repeat` times,
 * interleaved so that a slow moment of the machine spreads over points instead of spoiling one,
 * and the policies of one point side by side, run_order),
 * then print the table and goals and write JSON/CSV/plots. `vqs-bench compare` judges two reports,
 * `vqs-bench ab` runs two commands alternately and judges their merged reports.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ab.h"
#include "compare.h"
#include "cpu.h"
#include "inject.h"
#include "opts.h"
#include "output.h"
#include "presets.h"

/* Fold the repeats of each point of plan, s[point * repeat + k], into rep's results. */
static int fold(const struct plan *plan, struct sample *s, unsigned repeat, struct report *rep)
{
	int rc = 0;
	rep->results = calloc(plan->n ? plan->n : 1, sizeof(*rep->results));
	if (!rep->results)
		return -ENOMEM;
	for (unsigned i = 0; i < plan->n && !rc; i++) {
		struct result *r = &rep->results[rep->nresults++];
		r->pt = plan->pts[i];
		rc = result_fold(r, &s[(size_t)i * repeat], repeat);
		floors_attach(&rep->floors, r);
	}
	return rc;
}

/* group[i]: the first point of plan that differs from point i in its policy only. */
static void policy_groups(const struct plan *plan, unsigned *group)
{
	char (*keys)[256] = malloc((size_t)plan->n * sizeof(*keys));
	for (unsigned i = 0; i < plan->n; i++) {
		group[i] = i;
		if (!keys)
			continue; /* without memory to compare, each point is a group of its own */
		struct point pt = plan->pts[i];
		pt.policy = VQS_POLICY_DEDICATED;
		point_key(&pt, keys[i], sizeof(keys[i]));
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(keys[i], keys[j])) {
				group[i] = group[j];
				break;
			}
	}
	free(keys);
}

/* The order of repeat k's runs, as indices into the plan: the points that differ only in their
 * policy run one after another, so that a slow spell of the machine (a neighbour's build, steal)
 * meets every policy of a point alike instead of one policy's whole block of points; and each
 * repeat starts such a group at its next policy, so that none always runs first. */
static void run_order(unsigned n, const unsigned *group, unsigned k, unsigned *order)
{
	unsigned o = 0;
	for (unsigned g = 0; g < n; g++) {
		if (group[g] != g)
			continue;
		unsigned m = 0;
		for (unsigned i = g; i < n; i++)
			m += group[i] == g;
		for (unsigned i = g, j = 0; i < n; i++)
			if (group[i] == g)
				order[o + (j++ + m - k % m) % m] = i;
		o += m;
	}
}

/* Run the plan of preset p into rep; with --interleave, the slices without the injection
 * into base (the same points with inject_pct 0). */
static int run_plan(const struct opts *o, const struct preset *p, struct report *rep,
		    struct report *base)
{
	struct plan plan;
	int rc = plan_build(o, p, &plan);
	if (rc) {
		fprintf(stderr, "vqs-bench: preset %s: a list item, --ring, --drivers or --outstanding "
				"is out of range\n", p->name);
		return rc;
	}
	/* The injection is a fraction of each request's time, which only a closed loop (a full
	 * stream, or rr) sets: an offered rate or an idle queue has no such time to slow. */
	for (unsigned i = 0; i < plan.n; i++) {
		const struct point *pt = &plan.pts[i];
		if (pt->inject_pct && (pt->workload == WL_IDLE || pt->rate)) {
			char key[256];
			point_key(pt, key, sizeof(key));
			fprintf(stderr, "vqs-bench: --inject-slowdown-pct needs closed-loop points "
					"(stream or sweep at rate 0, rr), not %s\n", key);
			plan_free(&plan);
			return -EINVAL;
		}
	}
	unsigned repeat = o->repeat ? o->repeat : o->quick ? 1 : p->repeat;
	struct sample *s = calloc((size_t)plan.n * repeat, sizeof(*s));
	struct sample *sb = base ? calloc((size_t)plan.n * repeat, sizeof(*sb)) : NULL;
	struct inject *inject = calloc(plan.n ? plan.n : 1, sizeof(*inject));
	unsigned *order = calloc(plan.n ? 2u * plan.n : 1, sizeof(*order)), *group = order + plan.n;
	if (!s || (base && !sb) || !inject || !order) {
		free(s);
		free(sb);
		free(inject);
		free(order);
		plan_free(&plan);
		return -ENOMEM;
	}
	uint64_t t0 = vqs_now_ns();
	bool tty = isatty(STDERR_FILENO);
	/* An injected slowdown is sized by a run of its own, so that no measured window comes after
	 * more than its warm-up (as without injection): the repeats then only check it. An
	 * interleaved point sizes it on whole windows too, until two in a row measure it within a
	 * fifth of the target (inject_sizing_done): its short calibration slices are timed, and a
	 * stall spoils them, a window too. */
	for (unsigned i = 0; i < plan.n; i++) {
		const struct point *pt = &plan.pts[i];
		struct sample scratch[2]; /* two when interleaved */
		unsigned agreed = 0;
		inject[i].sizing = true;
		for (unsigned k = 0; pt->inject_pct && k < (pt->interleave ? INJECT_SIZING_WINDOWS : 1);
		     k++) {
			if (workload_run(pt, &inject[i], scratch)) {
				fprintf(stderr, "vqs-bench: calibrating the injection: %s\n",
					strerror(-scratch[0].error));
				break;
			}
			if (pt->interleave && inject_sizing_done(pt->inject_pct,
								 scratch[1].inject_achieved_pct, &agreed))
				break;
		}
		inject[i].sizing = false;
	}
	policy_groups(&plan, group);
	for (unsigned k = 0; k < repeat; k++) {
		run_order(plan.n, group, k, order);
		for (unsigned j = 0; j < plan.n; j++) {
			unsigned i = order[j], seq = k * plan.n + j + 1;
			char key[256];
			point_key(&plan.pts[i], key, sizeof(key));
			fprintf(stderr, tty ? "\r[%3u/%u] %-90.90s" : "[%3u/%u] %s\n", seq,
				plan.n * repeat, key);
			/* the goals' reference for this window, just before it */
			double beside = floors_beside(&rep->floors, &plan.pts[i], o->quick);
			struct sample x[2];
			int e = workload_run(&plan.pts[i], &inject[i], x);
			x[0].info.beside = x[1].info.beside = beside;
			x[0].info.run_seq = x[1].info.run_seq = seq;
			if (base) { /* x[0] the slices without the injection, x[1] those with it */
				sb[(size_t)i * repeat + k] = x[0];
				x[0] = x[1];
			}
			s[(size_t)i * repeat + k] = x[0];
			if (e && k == 0)
				fprintf(stderr, "\nvqs-bench: %s: %s\n", key, strerror(-e));
		}
	}
	if (tty)
		fprintf(stderr, "\r%-100s\r", "");
	fprintf(stderr, "ran %u points x %u in %.1f s\n", plan.n, repeat,
		(double)(vqs_now_ns() - t0) / 1e9);
	rc = fold(&plan, s, repeat, rep);
	if (base && !rc) {
		for (unsigned i = 0; i < plan.n; i++)
			plan.pts[i].inject_pct = 0;
		base->floors = rep->floors;
		/* The achieved slowdown stays fold's: the median over the repeats of each window's
		 * ratio of its two sides, which shared the machine slice by slice. The ratio of the
		 * sides' medians over the repeats (what this was) compares side B of one repeat with
		 * side A of another, and drift between repeats moved it: 0.4% for a run whose
		 * repeats' ratios put the slowdown at +7.1% [+1.2%, +14.8%]. */
		rc = fold(&plan, sb, repeat, base);
	}
	for (unsigned i = 0; i < rep->nresults; i++) {
		const struct result *r = &rep->results[i];
		if (r->pt.inject_pct)
			fprintf(stderr, "%s: injected %.1f ns per request (handler %.1f, driver %.1f) "
					"for %u%%, achieved %.1f%% (%s of %u repeats)\n", r->key,
				r->inject_ns, r->inject_side_ns[0], r->inject_side_ns[1], r->pt.inject_pct,
				r->inject_achieved_pct, base ? "median of the sides' ratios" : "median",
				r->nsamples);
	}
	free(s);
	free(sb);
	free(inject);
	free(order);
	plan_free(&plan);
	return rc;
}

int main(int argc, char **argv)
{
	if (VQS_CHECK_VERSION()) {
		fprintf(stderr, "vqs-bench: libvqsched %s is too old for this build\n",
			vqs_version_string());
		return 2;
	}
	if (argc > 1 && !strcmp(argv[1], "compare"))
		return compare_main(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "ab"))
		return ab_main(argc - 2, argv + 2);
	struct opts o;
	int rc = opts_parse(&o, argc - 1, argv + 1);
	if (rc)
		return rc > 0 ? 0 : 2;
	const struct preset *p = preset_find(o.preset);
	if (!p) {
		fprintf(stderr, "vqs-bench: no preset %s\n", o.preset);
		opts_usage(stderr);
		return 2;
	}
	if (!p->run && (o.variant || o.worker || o.bare_metal)) {
		fprintf(stderr, "vqs-bench: --variant, --worker and --bare-metal are for the seed "
				"presets\n");
		return 2;
	}
	if (o.sc[SC_INTERLEAVE] > 0 && p->run != preset_seed2023_run &&
	    (p->run || !o.json_base || !o.json)) {
		fprintf(stderr, "vqs-bench: --interleave needs --json and --json-base, and a preset "
				"of vqs-bench's own points, or seed-2023\n");
		return 2;
	}
	if (o.json_base && (!o.json || (!p->run && o.sc[SC_INTERLEAVE] <= 0))) {
		fprintf(stderr, "vqs-bench: --json-base needs --json, and --interleave or a seed "
				"preset\n");
		return 2;
	}
	if (p->run && o.sc[SC_INJECT_PCT] > 0) {
		fprintf(stderr, "vqs-bench: --inject-slowdown-pct applies to vqs-bench's own points, "
				"not to preset %s\n", p->name);
		return 2;
	}
	uint64_t t0 = vqs_now_ns();
	struct report rep = {.preset = p->name, .quick = o.quick, .argv_line = o.argv_line,
			     .loadavg_start = machine_loadavg()};
	if (rep.loadavg_start > 0.5)
		fprintf(stderr, "vqs-bench: the machine is busy (load average %.2f): figures will be "
				"noisy\n", rep.loadavg_start);
	if (!o.no_floors) {
		struct cpu_list all;
		cpu_allowed(&all);
		int a = all.n ? all.cpu[0] : 0, b = all.n > 1 ? all.cpu[1] : a;
		fprintf(stderr, "measuring floors on CPUs %d and %d...\n", a, b);
		floors_measure(&rep.floors, o.sc[SC_RING] > 0 ? (unsigned)o.sc[SC_RING] : 256, a, b, o.quick);
	}
	struct report base = rep;
	/* vqs-bench's own interleaved points; seed-2023's --interleave is the preset's business */
	bool interleave = o.sc[SC_INTERLEAVE] > 0 && !p->run;
	rc = p->run ? p->run(&o, &rep, o.json_base ? &base : NULL)
		    : run_plan(&o, p, &rep, interleave ? &base : NULL);
	if (rc) {
		fprintf(stderr, "vqs-bench: preset %s: %s\n", p->name, strerror(-rc));
		return 2;
	}
	rep.elapsed_s = base.elapsed_s = (double)(vqs_now_ns() - t0) / 1e9;
	rep.loadavg_end = base.loadavg_end = machine_loadavg();
	if (interleave) {
		goals_evaluate(&base);
		printf("The slices without the injection (--json-base %s):\n", o.json_base);
		output_table(stdout, &base);
		printf("\nThe slices with it (--json %s):\n", o.json);
	}
	if (!p->run) { /* a preset with its own runner printed its own table */
		goals_evaluate(&rep);
		output_table(stdout, &rep);
	}

	int status = 0;
	for (unsigned i = 0; i < rep.nresults; i++) {
		const struct result *r = &rep.results[i];
		if (r->lost || r->duplicated || r->corrupted || r->error)
			status = 1;
	}
	if (o.json && (rc = output_json(o.json, &rep))) {
		fprintf(stderr, "vqs-bench: %s: %s\n", o.json, strerror(-rc));
		status = 2;
	}
	if (o.json_base && (rc = output_json(o.json_base, &base))) {
		fprintf(stderr, "vqs-bench: %s: %s\n", o.json_base, strerror(-rc));
		status = 2;
	}
	if (o.csv && (rc = output_csv(o.csv, &rep))) {
		fprintf(stderr, "vqs-bench: %s: %s\n", o.csv, strerror(-rc));
		status = 2;
	}
	if (o.plot && (rc = output_plots(o.plot, &rep))) {
		fprintf(stderr, "vqs-bench: plots in %s: %s\n", o.plot, strerror(-rc));
		status = 2;
	}
	if (status == 1)
		fprintf(stderr, "vqs-bench: some points lost, duplicated or corrupted requests, or "
				"failed (see the loss column and the errors above)\n");
	results_free(rep.results, rep.nresults);
	if (interleave)
		results_free(base.results, base.nresults);
	return status;
}
