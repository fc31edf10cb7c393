/* SPDX-License-Identifier: MIT */
/*
 * PNG plots through gnuplot: for each figure (throughput, p99, worker CPU per op), one chart
 * against offered load for the sweep runs and one against streams for stream/rr runs, one line
 * per policy (and batch limit). Data and scripts stay next to the PNGs, so a chart can be
 * re-rendered or restyled by hand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "output.h"

struct chart {
	const char *name;   /* file stem */
	enum workload wl;
	bool by_rate;       /* x = offered load (ops/s, "max" at its achieved rate), else streams */
	enum fig y;
	const char *ylabel;
	double yscale;
};

static double x_of(const struct chart *c, const struct result *r)
{
	if (!c->by_rate)
		return r->pt.streams;
	return r->pt.rate ? (double)r->pt.rate : r->med[FIG_OPS];
}

static bool in_chart(const struct chart *c, const struct result *r)
{
	return r->pt.workload == c->wl && r->repeats && !r->pt.shared_cpu;
}

/* Series: one per (policy, batch) seen, in order of appearance. */
static unsigned series_of(const struct report *rep, const struct chart *c, unsigned *pol,
			  unsigned *bat, unsigned cap)
{
	unsigned n = 0;
	for (unsigned i = 0; i < rep->nresults; i++) {
		const struct result *r = &rep->results[i];
		if (!in_chart(c, r))
			continue;
		unsigned k = 0;
		while (k < n && !(pol[k] == r->pt.policy && bat[k] == r->pt.batch_max))
			k++;
		if (k == n && n < cap) {
			pol[n] = r->pt.policy;
			bat[n++] = r->pt.batch_max;
		}
	}
	return n;
}

static int cmp_xy(const void *a, const void *b)
{
	const double *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int chart(const char *dir, const struct report *rep, const struct chart *c)
{
	unsigned pol[32], bat[32];
	unsigned ns = series_of(rep, c, pol, bat, 32);
	if (!ns)
		return 0;
	bool many_batches = false;
	for (unsigned k = 1; k < ns; k++)
		many_batches |= bat[k] != bat[0];
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s.dat", dir, c->name);
	FILE *d = fopen(path, "w");
	if (!d)
		return -errno;
	double (*xy)[2] = calloc(rep->nresults, sizeof(*xy));
	if (!xy) {
		fclose(d);
		return -ENOMEM;
	}
	for (unsigned k = 0; k < ns; k++) {
		unsigned m = 0;
		for (unsigned i = 0; i < rep->nresults; i++) {
			const struct result *r = &rep->results[i];
			if (in_chart(c, r) && r->pt.policy == pol[k] && r->pt.batch_max == bat[k]) {
				xy[m][0] = x_of(c, r);
				xy[m++][1] = r->med[c->y] / c->yscale;
			}
		}
		qsort(xy, m, sizeof(xy[0]), cmp_xy);
		fprintf(d, "# %s batch %u\n", vqs_policy_name(pol[k]), bat[k]);
		for (unsigned i = 0; i < m; i++)
			fprintf(d, "%g %g\n", xy[i][0], xy[i][1]);
		fprintf(d, "\n\n");
	}
	free(xy);
	fclose(d);

	snprintf(path, sizeof(path), "%s/%s.gp", dir, c->name);
	FILE *g = fopen(path, "w");
	if (!g)
		return -errno;
	fprintf(g, "set terminal pngcairo size 900,560 noenhanced\nset output '%s/%s.png'\n", dir,
		c->name);
	fprintf(g, "set title '%s: %s (preset %s)'\nset grid\nset key outside right\n",
		workload_name(c->wl), c->ylabel, rep->preset);
	fprintf(g, "set xlabel '%s'\nset ylabel '%s'\nset logscale x\n",
		c->by_rate ? "offered load (ops/s; rightmost: as fast as possible)" : "streams",
		c->ylabel);
	if (c->y != FIG_OPS)
		fprintf(g, "set logscale y\n");
	fprintf(g, "plot ");
	for (unsigned k = 0; k < ns; k++) {
		char label[64];
		snprintf(label, sizeof(label), many_batches ? "%s batch %u" : "%s",
			 vqs_policy_name(pol[k]), bat[k]);
		fprintf(g, "%s'%s/%s.dat' index %u with linespoints lw 2 title '%s'", k ? ", " : "", dir,
			c->name, k, label);
	}
	fprintf(g, "\n");
	fclose(g);

	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "gnuplot '%s' 2>&1", path);
	int st = system(cmd);
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "vqs-bench: gnuplot failed on %s (is gnuplot installed?)\n", path);
		return -EIO;
	}
	return 0;
}

int output_plots(const char *dir, const struct report *rep)
{
	if (mkdir(dir, 0755) && errno != EEXIST)
		return -errno;
	static const struct chart charts[] = {
		{"sweep_throughput", WL_SWEEP, true, FIG_OPS, "ops/s", 1},
		{"sweep_p99", WL_SWEEP, true, FIG_P99, "p99 latency (us)", 1e3},
		{"sweep_cpu_per_op", WL_SWEEP, true, FIG_WCPU, "worker CPU per op (us)", 1e3},
		{"stream_throughput", WL_STREAM, false, FIG_OPS, "ops/s", 1},
		{"stream_p99", WL_STREAM, false, FIG_P99, "p99 latency (us)", 1e3},
		{"stream_cpu_per_op", WL_STREAM, false, FIG_WCPU, "worker CPU per op (us)", 1e3},
		{"rr_throughput", WL_RR, false, FIG_OPS, "ops/s", 1},
		{"rr_p99", WL_RR, false, FIG_P99, "p99 latency (us)", 1e3},
		{"rr_cpu_per_op", WL_RR, false, FIG_WCPU, "worker CPU per op (us)", 1e3},
	};
	int rc = 0;
	for (unsigned i = 0; i < sizeof(charts) / sizeof(charts[0]); i++) {
		int r = chart(dir, rep, &charts[i]);
		if (r && !rc)
			rc = r;
	}
	return rc;
}
