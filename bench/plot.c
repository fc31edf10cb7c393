/* SPDX-License-Identifier: MIT */
/*
 * PNG plots through gnuplot: for each figure (throughput, p99, worker CPU per op), one chart
 * against offered load for the sweep runs and one against streams for stream/rr runs, one line
 * per policy (and batch limit, and queue count for the sweep); and per queue count of the
 * sweep a Pareto chart, p99 against worker CPU per op, one point per policy and load. Data and
 * scripts stay next to the PNGs, so a chart can be re-rendered or restyled by hand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "output.h"

enum x_axis { X_STREAMS, X_RATE, X_WCPU };

struct chart {
	char name[32];      /* file stem */
	enum workload wl;
	enum x_axis x;      /* X_RATE: offered load (ops/s, "max" at its achieved rate) */
	enum fig y;
	const char *ylabel;
	double yscale;
	unsigned streams;   /* only points with this many queues; 0 = all */
};

static double x_of(const struct chart *c, const struct result *r)
{
	if (c->x == X_STREAMS)
		return r->pt.streams;
	if (c->x == X_WCPU)
		return r->med[FIG_WCPU] / 1e3;
	return r->pt.rate ? (double)r->pt.rate : r->med[FIG_OPS];
}

static bool in_chart(const struct chart *c, const struct result *r)
{
	return r->pt.workload == c->wl && r->repeats && !r->pt.shared_cpu &&
	       (!c->streams || r->pt.streams == c->streams);
}

/* What makes a line: policy and batch, and against load also the queue count. */
struct series {
	unsigned pol, bat, streams;
};

static bool in_series(const struct chart *c, const struct series *s, const struct result *r)
{
	return s->pol == r->pt.policy && s->bat == r->pt.batch_max &&
	       (c->x != X_RATE || s->streams == r->pt.streams);
}

/* Series, in order of appearance. */
static unsigned series_of(const struct report *rep, const struct chart *c, struct series *s,
			  unsigned cap)
{
	unsigned n = 0;
	for (unsigned i = 0; i < rep->nresults; i++) {
		const struct result *r = &rep->results[i];
		if (!in_chart(c, r))
			continue;
		unsigned k = 0;
		while (k < n && !in_series(c, &s[k], r))
			k++;
		if (k == n && n < cap)
			s[n++] = (struct series){r->pt.policy, r->pt.batch_max, r->pt.streams};
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
	struct series s[32];
	unsigned ns = series_of(rep, c, s, 32);
	if (!ns)
		return 0;
	bool many_batches = false, many_streams = false;
	for (unsigned k = 1; k < ns; k++) {
		many_batches |= s[k].bat != s[0].bat;
		many_streams |= s[k].streams != s[0].streams;
	}
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
			if (in_chart(c, r) && in_series(c, &s[k], r)) {
				xy[m][0] = x_of(c, r);
				xy[m++][1] = r->med[c->y] / c->yscale;
			}
		}
		qsort(xy, m, sizeof(xy[0]), cmp_xy);
		fprintf(d, "# %s batch %u\n", vqs_policy_name(s[k].pol), s[k].bat);
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
	char queues[32] = "";
	if (c->streams)
		snprintf(queues, sizeof(queues), ", %u queues", c->streams);
	fprintf(g, "set title '%s: %s%s (preset %s)'\nset grid\nset key outside right\n",
		workload_name(c->wl), c->ylabel, queues, rep->preset);
	fprintf(g, "set xlabel '%s'\nset ylabel '%s'\nset logscale x\n",
		c->x == X_RATE	   ? "offered load (ops/s; rightmost: as fast as possible)"
		: c->x == X_WCPU ? "worker CPU per op (us); one point per offered load"
				 : "streams",
		c->ylabel);
	if (c->y != FIG_OPS)
		fprintf(g, "set logscale y\n");
	fprintf(g, "plot ");
	for (unsigned k = 0; k < ns; k++) {
		char label[64];
		int off = snprintf(label, sizeof(label), "%s", vqs_policy_name(s[k].pol));
		if (many_batches)
			off += snprintf(label + off, sizeof(label) - (size_t)off, " batch %u", s[k].bat);
		if (many_streams)
			snprintf(label + off, sizeof(label) - (size_t)off, " %uq", s[k].streams);
		/* a Pareto chart's points are loads, not a curve: no lines between them */
		fprintf(g, "%s'%s/%s.dat' index %u with %s lw 2 title '%s'", k ? ", " : "", dir,
			c->name, k, c->x == X_WCPU ? "points ps 1.5" : "linespoints", label);
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
	static const struct {
		const char *stem;
		enum fig y;
		const char *ylabel;
		double yscale;
	} figs[] = {{"throughput", FIG_OPS, "ops/s", 1},
		    {"p99", FIG_P99, "p99 latency (us)", 1e3},
		    {"cpu_per_op", FIG_WCPU, "worker CPU per op (us)", 1e3}};
	static const struct {
		enum workload wl;
		enum x_axis x;
	} against[] = {{WL_SWEEP, X_RATE}, {WL_STREAM, X_STREAMS}, {WL_RR, X_STREAMS}};
	static const unsigned pareto_queues[] = {1, 8, 50};
	int rc = 0;
	for (unsigned a = 0; a < 3; a++)
		for (unsigned k = 0; k < 3; k++) {
			struct chart c = {.wl = against[a].wl, .x = against[a].x, .y = figs[k].y,
					  .ylabel = figs[k].ylabel, .yscale = figs[k].yscale};
			snprintf(c.name, sizeof(c.name), "%s_%s", workload_name(c.wl), figs[k].stem);
			int r = chart(dir, rep, &c);
			if (r && !rc)
				rc = r;
		}
	for (unsigned i = 0; i < 3; i++) {
		struct chart c = {.wl = WL_SWEEP, .x = X_WCPU, .y = FIG_P99, .ylabel = figs[1].ylabel,
				  .yscale = 1e3, .streams = pareto_queues[i]};
		snprintf(c.name, sizeof(c.name), "sweep_pareto_q%u", c.streams);
		int r = chart(dir, rep, &c);
		if (r && !rc)
			rc = r;
	}
	return rc;
}
