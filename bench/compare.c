/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench compare BASE.json NEW.json: match runs by key and decide, per figure, whether NEW is
 * worse than BASE by more than the threshold beyond the run-to-run noise.
 *
 * "Worse by X%" is measured in time per operation: for throughput X = base/new - 1, for latency
 * and CPU per op X = new/base - 1, so a halving of throughput and a doubling of latency are both
 * +100%. The noise of a figure is the larger relative spread (max - min over median) of its two
 * runs. A figure regresses when X - noise > threshold. (Not "when the [min, max] ranges are
 * disjoint": one stalled repeat on a shared machine stretches a range over everything.) Any lost,
 * duplicated or corrupted request in NEW, or a run that failed, fails too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "compare.h"
#include "json.h"

struct fig_view {
	double med, min, max;
};

static struct fig_view fig_of(const struct json *run, const char *name)
{
	struct fig_view v = {json_num_or(run, name, 0), 0, 0};
	v.min = json_num_or(json_get(run, "min"), name, v.med);
	v.max = json_num_or(json_get(run, "max"), name, v.med);
	return v;
}

static const struct json *find_run(const struct json *runs, const char *key)
{
	for (size_t i = 0; runs && i < runs->n; i++)
		if (!strcmp(json_str_or(&runs->items[i], "key", ""), key))
			return &runs->items[i];
	return NULL;
}

static int fig_index(const char *name)
{
	for (int k = 0; k < FIG__COUNT; k++)
		if (!strcmp(fig_names[k], name))
			return k;
	return -1;
}

static void compare_usage(FILE *f)
{
	fprintf(f, "usage: vqs-bench compare BASE.json NEW.json [--threshold PCT] [--metrics LIST] "
		   "[--quiet]\n"
		   "  --threshold PCT  how much worse (time per op) beyond the noise fails (default 10)\n"
		   "  --metrics LIST   figures to judge (default "
		   "ops_per_s,p50_ns,p99_ns,worker_cpu_ns_per_op)\n"
		   "  --quiet          print only regressions and failures\n"
		   "exit status: 0 no regression, 1 regression or loss in NEW, 2 usage or unreadable file\n");
}

int compare_main(int argc, char **argv)
{
	const char *files[2] = {NULL, NULL};
	double threshold = 10;
	const char *metrics = "ops_per_s,p50_ns,p99_ns,worker_cpu_ns_per_op";
	bool quiet = false;
	unsigned nf = 0;
	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--threshold") && i + 1 < argc) {
			char *end;
			threshold = strtod(argv[++i], &end);
			if (*end || threshold < 0) {
				compare_usage(stderr);
				return 2;
			}
		} else if (!strcmp(argv[i], "--metrics") && i + 1 < argc) {
			metrics = argv[++i];
		} else if (!strcmp(argv[i], "--quiet")) {
			quiet = true;
		} else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			compare_usage(stdout);
			return 0;
		} else if (argv[i][0] != '-' && nf < 2) {
			files[nf++] = argv[i];
		} else {
			compare_usage(stderr);
			return 2;
		}
	}
	if (nf != 2) {
		compare_usage(stderr);
		return 2;
	}
	int figs[FIG__COUNT], nfig = 0;
	char mbuf[512];
	snprintf(mbuf, sizeof(mbuf), "%s", metrics);
	for (char *sv = NULL, *t = strtok_r(mbuf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		int k = fig_index(t);
		if (k < 0 || !fig_better[k] || nfig == FIG__COUNT) {
			fprintf(stderr, "vqs-bench compare: %s is not a judged figure\n", t);
			return 2;
		}
		figs[nfig++] = k;
	}

	struct json base, cur;
	if (json_parse_file(files[0], &base))
		return 2;
	if (json_parse_file(files[1], &cur)) {
		json_free(&base);
		return 2;
	}
	const struct json *bruns = json_get(&base, "runs"), *nruns = json_get(&cur, "runs");
	if (!bruns || bruns->type != JSON_ARR || !nruns || nruns->type != JSON_ARR) {
		fprintf(stderr, "vqs-bench compare: no \"runs\" array\n");
		json_free(&base);
		json_free(&cur);
		return 2;
	}

	unsigned regressions = 0, failures = 0, matched = 0;
	printf("%-8s %-22s %-32s %-32s %9s %7s  %s\n", "", "figure", "base median [min,max]",
	       "new median [min,max]", "worse", "noise", "verdict");
	for (size_t i = 0; i < nruns->n; i++) {
		const struct json *nr = &nruns->items[i];
		const char *key = json_str_or(nr, "key", "?");
		double loss = json_num_or(nr, "lost", 0) + json_num_or(nr, "duplicated", 0) +
			      json_num_or(nr, "corrupted", 0);
		if (loss > 0 || json_num_or(nr, "error", 0) != 0) {
			printf("run %s\n  FAIL: lost+duplicated+corrupted %.0f, error %.0f\n", key, loss,
			       json_num_or(nr, "error", 0));
			failures++;
		}
		const struct json *br = find_run(bruns, key);
		if (!br) {
			if (!quiet)
				printf("run %s\n  only in %s\n", key, files[1]);
			continue;
		}
		matched++;
		bool header = false;
		for (int f = 0; f < nfig; f++) {
			int k = figs[f];
			struct fig_view b = fig_of(br, fig_names[k]), n = fig_of(nr, fig_names[k]);
			if (b.med <= 0 || n.med <= 0)
				continue; /* not measured for this workload (idle latency, say) */
			double worse = fig_better[k] > 0 ? b.med / n.med - 1 : n.med / b.med - 1;
			double nb = (b.max - b.min) / b.med, nn = (n.max - n.min) / n.med;
			double noise = nb > nn ? nb : nn;
			bool reg = (worse - noise) * 100 > threshold;
			bool better = (-worse - noise) * 100 > threshold;
			regressions += reg;
			if (quiet && !reg)
				continue;
			if (!header) {
				printf("run %s\n", key);
				header = true;
			}
			char bs[64], ns[64];
			snprintf(bs, sizeof(bs), "%.4g [%.4g,%.4g]", b.med, b.min, b.max);
			snprintf(ns, sizeof(ns), "%.4g [%.4g,%.4g]", n.med, n.min, n.max);
			printf("%-8s %-22s %-32s %-32s %+8.1f%% %6.1f%%  %s\n", "", fig_names[k], bs, ns,
			       worse * 100, noise * 100,
			       reg ? "REGRESSION" : better ? "improved" : "same within noise");
		}
	}
	for (size_t i = 0; !quiet && i < bruns->n; i++) {
		const char *key = json_str_or(&bruns->items[i], "key", "?");
		if (!find_run(nruns, key))
			printf("run %s\n  only in %s\n", key, files[0]);
	}
	printf("\ncompare: %u runs matched, %u regressions beyond %.1f%% + noise, %u runs with loss "
	       "or errors\n", matched, regressions, threshold, failures);
	json_free(&base);
	json_free(&cur);
	if (!matched) {
		fprintf(stderr, "vqs-bench compare: no run of %s matches one of %s\n", files[1], files[0]);
		return 2;
	}
	return regressions || failures ? 1 : 0;
}
