/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench compare BASE.json NEW.json: match runs by key (or pairs of runs by --pair) and decide,
 * per figure, whether NEW is worse than BASE, on the per-repeat samples of both (or, for the
 * merged reports of `vqs-bench ab`, whose samples carry their round, on the pairs of each round's
 * medians: what changed between rounds then moves both sides of a pair).
 *
 * The reports of an interleaved run (--interleave: the slices without and with an injection,
 * within each repeat's window) carry the repeat as the round: their pairs are repeats. Pairs are
 * claimed only between reports of one process (their "process" ids equal): the rounds of two
 * separate runs are mere indices, and pairing them by index turned drift between the runs into
 * false alarms; such reports get the unpaired rank test. --halves judges a report against
 * itself: half of its repeats against the other half, ABBA, in pairs of neighbours.
 *
 * "Worse by X%" is in time per operation: for throughput X = base/new - 1, for latency and CPU per
 * op X = new/base - 1, so a halved throughput and a doubled latency are both +100%. X is the
 * Hodges-Lehmann estimate (the median of all NEW/BASE sample ratios) with its Mann-Whitney
 * interval (stats.c). A figure regresses when the interval lies wholly above 0 (a one-sided rank
 * test at level alpha says NEW is worse) and X exceeds the threshold: significant and large
 * enough to matter. Too few samples to reach the level at all cannot pass; neither can lost,
 * duplicated or corrupted requests or an error in NEW, nor a run or figure missing on one side.
 */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "compare.h"
#include "json.h"
#include "stats.h"

#define MAX_PAIRS 16

struct cmp {
	double threshold, alpha; /* threshold as a fraction */
	int figs[FIG__COUNT];
	unsigned nfig;
	bool quiet;
	const char *pair[MAX_PAIRS][2]; /* --pair BASE_GLOB=NEW_GLOB, split in place */
	unsigned npairs;
	const char *file[2];
	unsigned matched, regressions, failures;
	bool figures; /* a report declares its figures: judge those, not its runs' */
	bool same_process; /* both reports carry the same "process": rounds may be paired */
	bool halves;       /* --halves */
};

static void compare_usage(FILE *f)
{
	fprintf(f, "usage: vqs-bench compare BASE.json NEW.json [--threshold PCT] [--alpha A] "
		   "[--metrics LIST] [--pair BASE_GLOB=NEW_GLOB]... [--halves] [--quiet]\n"
		   "  --threshold PCT  a significant change worse than this (time per op) fails "
		   "(default 5)\n"
		   "  --alpha A        level of the one-sided rank test (default 0.01)\n"
		   "  --metrics LIST   figures to judge (default "
		   "ops_per_s,ns_per_op,p50_ns,p99_ns,worker_cpu_ns_per_op)\n"
		   "  --pair B=N       judge the one BASE run whose key matches glob B against the one "
		   "NEW run matching N (repeatable; no other run is judged)\n"
		   "  --halves         judge NEW's repeats 1, 2, 5, 6, ... against BASE's 0, 3, 4, 7, "
		   "...,\n                   paired as neighbours: with BASE = NEW, the run against "
		   "itself\n"
		   "  --quiet          print only regressions and failures\n"
		   "exit status: 0 no regression; 1 regression, loss or error in NEW, a run or figure "
		   "missing on one side, or too few samples to decide; 2 usage, unreadable file, or "
		   "no run in either report\n");
}

static int fig_index(const char *name)
{
	for (int k = 0; k < FIG__COUNT; k++)
		if (!strcmp(fig_names[k], name))
			return k;
	return -1;
}

static const struct json *find_run(const struct json *runs, const char *key)
{
	for (size_t i = 0; i < runs->n; i++)
		if (!strcmp(json_str_or(&runs->items[i], "key", ""), key))
			return &runs->items[i];
	return NULL;
}

/* The one run whose key matches glob; NULL with *count the number that matched otherwise. */
static const struct json *glob_run(const struct json *runs, const char *glob, unsigned *count)
{
	const struct json *hit = NULL;
	*count = 0;
	for (size_t i = 0; i < runs->n; i++)
		if (!fnmatch(glob, json_str_or(&runs->items[i], "key", ""), 0)) {
			hit = &runs->items[i];
			++*count;
		}
	return *count == 1 ? hit : NULL;
}


/* One side's samples of a figure, with the round of each (NULL: the report has none). */
struct side {
	double *v, *round;
	unsigned n;
};

/* Whether the samples of both sides are paired by round: only when one process ran both sides
 * interleaved (the same "process" id in both reports) and both carry rounds (or --halves made
 * them). Rounds of two processes are their repeats' indices, and nothing makes repeat i of one
 * process meet the conditions of repeat i of another. */
static bool paired(const struct cmp *c, const struct side *b, const struct side *v)
{
	return c->same_process && b->round && v->round;
}

/*
 * The samples of array a (a figure's) of run or figure obj into s, for side 0 (BASE) or 1 (NEW);
 * with --halves only that side's half of the repeats, ABBA: repeats 0, 3, 4, 7, ... are BASE's
 * and 1, 2, 5, 6, ... NEW's, the pair of repeat i being i / 2. The order alternates within the
 * pairs, so a trend through the run (load coming or going) falls on both sides. false: no array.
 */
static bool take(const struct cmp *c, const struct json *obj, const struct json *a, int side,
		 struct side *s)
{
	*s = (struct side){0};
	if (!a || a->type != JSON_ARR)
		return false;
	const struct json *rounds = json_get(obj, "sample_round");
	bool have = c->halves || (rounds && rounds->type == JSON_ARR && rounds->n == a->n);
	s->v = malloc((a->n + 1) * sizeof(*s->v));
	s->round = have ? malloc((a->n + 1) * sizeof(*s->round)) : NULL;
	if (!s->v || (have && !s->round)) {
		free(s->v);
		free(s->round);
		*s = (struct side){0};
		return true; /* judge reports the lack of memory */
	}
	for (size_t i = 0; i < a->n; i++) {
		if (a->items[i].type != JSON_NUM ||
		    (c->halves && (i % 4 == 0 || i % 4 == 3) != (side == 0)))
			continue;
		if (have)
			s->round[s->n] = c->halves ? (double)(i / 2) : rounds->items[i].num;
		s->v[s->n++] = a->items[i].num;
	}
	return true;
}

/* The median of a side's samples of round r (the 0s of a smaller-is-better figure, not
 * measured, left out); NAN when there is none. */
static double round_median(const struct side *s, int better, double r)
{
	double pick[s->n + 1];
	unsigned k = 0;
	for (unsigned i = 0; i < s->n; i++)
		if (s->round[i] == r && (better > 0 || s->v[i] > 0))
			pick[k++] = s->v[i];
	if (!k)
		return NAN;
	for (unsigned i = 1; i < k; i++) /* insertion sort: a round holds a few repeats */
		for (unsigned j = i; j && pick[j - 1] > pick[j]; j--) {
			double t = pick[j];
			pick[j] = pick[j - 1];
			pick[j - 1] = t;
		}
	return k % 2 ? pick[k / 2] : (pick[k / 2 - 1] + pick[k / 2]) / 2;
}

/* The paired test over the rounds both sides have. */
static int shift_by_round(const struct side *b, const struct side *v, int better, double alpha,
			  struct shift *sh)
{
	double last = -1;
	for (unsigned i = 0; i < b->n; i++)
		last = b->round[i] > last ? b->round[i] : last;
	unsigned nrounds = last >= 0 ? (unsigned)last + 1 : 0, k = 0;
	double *x = malloc((nrounds + 1) * sizeof(*x)), *y = malloc((nrounds + 1) * sizeof(*y));
	int rc = -ENOMEM;
	if (x && y) {
		for (unsigned r = 0; r < nrounds; r++) {
			x[k] = round_median(b, better, r);
			y[k] = round_median(v, better, r);
			k += !isnan(x[k]) && !isnan(y[k]);
		}
		rc = stats_shift_paired(x, y, k, better, alpha, sh);
	}
	free(x);
	free(y);
	return rc;
}

static double median_of(double *v, unsigned n)
{
	if (!n)
		return 0;
	for (unsigned i = 1; i < n; i++) /* insertion sort: a run's repeats are few */
		for (unsigned j = i; j && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void pct(char *b, size_t n, double x)
{
	if (isinf(x))
		snprintf(b, n, x > 0 ? "+inf" : "-inf");
	else
		snprintf(b, n, "%+.1f%%", x * 100);
}

/*
 * Judge one figure from its BASE and NEW sides (a present side's samples may be NULL: out of
 * memory), larger being better when better > 0, from objects ob and on (the BASE and NEW run or
 * figure objects; either NULL: the figure is absent there). Prints its line (unless quiet and
 * fine); frees both sides.
 */
static void judge(struct cmp *c, const char *name, int better, const struct json *ob,
		  const struct json *on, struct side *b, struct side *v, bool *header,
		  const char *title)
{
	const char *verdict = NULL;
	char line[256] = "";
	bool fail = false;
	struct shift sh = {0};
	if (!ob || !on) {
		snprintf(line, sizeof(line), "no samples of this figure in %s (a report of an older "
			 "vqs-bench, or another tool)", !ob ? c->file[0] : c->file[1]);
		fail = true;
	} else if (!b->v || !v->v ||
		   (paired(c, b, v) ? shift_by_round(b, v, better, c->alpha, &sh)
				    : stats_shift(b->v, b->n, v->v, v->n, better, c->alpha, &sh))) {
		snprintf(line, sizeof(line), "out of memory");
		fail = true;
	} else if (!sh.m && !sh.n) {
		goto out; /* not measured by this workload (an idle run's latency) */
	} else if (!sh.m || !sh.n) {
		snprintf(line, sizeof(line), "measured in %s only", sh.m ? c->file[0] : c->file[1]);
		fail = true;
	} else {
		char est[32], lo[32], hi[32];
		pct(est, sizeof(est), sh.est);
		pct(lo, sizeof(lo), sh.lo);
		pct(hi, sizeof(hi), sh.hi);
		bool worse = sh.decidable && sh.lo > 0, improved = sh.decidable && sh.hi < 0;
		bool reg = worse && sh.est > c->threshold;
		fail = !sh.decidable;
		c->regressions += reg;
		verdict = !sh.decidable ? "UNDECIDED: too few samples for this alpha"
			: reg ? "REGRESSION" : worse ? "worse, within the threshold"
			: improved ? "improved" : "no significant change";
		double bm = median_of(b->v, b->n), nm = median_of(v->v, v->n);
		snprintf(line, sizeof(line), "%10.4g (%3u) %10.4g (%3u) %8s [%s, %s]  %s", bm, sh.m, nm,
			 sh.n, est, lo, hi, verdict);
		if (!reg && !fail && c->quiet)
			goto out;
	}
	c->failures += fail;
	if (!*header) {
		printf("%s\n", title);
		*header = true;
	}
	printf("  %-22s %s%s\n", name, verdict ? "" : "FAIL: ", line);
out:
	free(b->v);
	free(b->round);
	free(v->v);
	free(v->round);
}

/* How the samples of both sides are compared, printed once above a run's or the figures' lines. */
static void say_pairing(const struct cmp *c, const struct side *b, const struct side *v)
{
	if (paired(c, b, v))
		printf("  (paired by round: the counts are ab rounds, each a median of its repeats, "
		       "the repeats of an interleaved run or of a seed preset's columns%s)\n",
		       c->halves ? ", or pairs of repeats of --halves" : "");
	else if (b->round && v->round)
		printf("  (not paired: the reports come from different processes, whose rounds or "
		       "repeats met different conditions; a rank test on all samples)\n");
}

/* Lost, duplicated or corrupted requests or an error in a NEW run fail. */
static void check_loss(struct cmp *c, const struct json *nr, bool *header, const char *title)
{
	double loss = json_num_or(nr, "lost", 0) + json_num_or(nr, "duplicated", 0) +
		      json_num_or(nr, "corrupted", 0);
	if (loss > 0 || json_num_or(nr, "error", 0) != 0) {
		if (!*header)
			printf("%s\n", title);
		*header = true;
		printf("  FAIL: NEW lost, duplicated or corrupted %.0f requests, error %.0f\n", loss,
		       json_num_or(nr, "error", 0));
		c->failures++;
	}
}

static void judge_run(struct cmp *c, const struct json *br, const struct json *nr)
{
	const char *bk = json_str_or(br, "key", "?"), *nk = json_str_or(nr, "key", "?");
	char title[600];
	if (strcmp(bk, nk))
		snprintf(title, sizeof(title), "run %s\n vs %s", bk, nk);
	else
		snprintf(title, sizeof(title), "run %s", bk);
	bool header = false;
	c->matched++;
	for (unsigned f = 0; f < c->nfig; f++) {
		const char *name = fig_names[c->figs[f]];
		const struct json *ob = json_get(json_get(br, "samples"), name);
		const struct json *on = json_get(json_get(nr, "samples"), name);
		struct side b, v;
		ob = take(c, br, ob, 0, &b) ? ob : NULL;
		on = take(c, nr, on, 1, &v) ? on : NULL;
		if (!f && !c->quiet) {
			printf("%s\n", title);
			header = true;
			say_pairing(c, &b, &v);
			double inj = json_num_or(nr, "inject_pct", 0);
			if (inj > 0)
				printf("  (NEW injected a slowdown of %.0f%%; it measured %.1f%%)\n",
				       inj, json_num_or(nr, "inject_achieved_pct", 0));
		}
		if (!f)
			check_loss(c, nr, &header, title);
		judge(c, name, fig_better[c->figs[f]], ob, on, &b, &v, &header, title);
	}
}

static const struct json *find_figure(const struct json *figs, const char *name)
{
	for (size_t i = 0; figs && figs->type == JSON_ARR && i < figs->n; i++)
		if (!strcmp(json_str_or(&figs->items[i], "name", ""), name))
			return &figs->items[i];
	return NULL;
}

/* The reports' own figures ("figures": [{"name", "unit", "better", "samples"}], the ksim
 * presets'), matched by name; the direction is the report's. */
static void judge_figures(struct cmp *c, const struct json *bf, const struct json *nf)
{
	bool header = false;
	for (unsigned side = 0; side < 2; side++) {
		const struct json *mine = side ? nf : bf, *other = side ? bf : nf;
		for (size_t i = 0; mine && mine->type == JSON_ARR && i < mine->n; i++) {
			const char *name = json_str_or(&mine->items[i], "name", "?");
			if (find_figure(other, name))
				continue;
			printf("figure %s\n  FAIL: missing in %s\n", name, c->file[!side]);
			c->failures++;
		}
	}
	for (size_t i = 0; bf && bf->type == JSON_ARR && i < bf->n; i++) {
		const struct json *b = &bf->items[i];
		const char *name = json_str_or(b, "name", "?");
		const struct json *n = find_figure(nf, name);
		if (!n)
			continue;
		const char *dir = json_str_or(b, "better", "");
		if (strcmp(dir, "higher") && strcmp(dir, "lower")) {
			printf("figure %s\n  FAIL: %s does not say whether higher or lower is better\n",
			       name, c->file[0]);
			c->failures++;
			continue;
		}
		const struct json *ob = json_get(b, "samples"), *on = json_get(n, "samples");
		struct side x, y;
		ob = take(c, b, ob, 0, &x) ? ob : NULL;
		on = take(c, n, on, 1, &y) ? on : NULL;
		c->matched++;
		if (!header && !c->quiet) {
			printf("figures of the reports\n");
			header = true;
			say_pairing(c, &x, &y);
		}
		/* two columns of one seed run carry their repeats: paired like ab's rounds */
		judge(c, name, dir[0] == 'h' ? 1 : -1, ob, on, &x, &y, &header,
		      "figures of the reports");
	}
}

static void missing(struct cmp *c, const char *what, const char *where)
{
	printf("run %s\n  FAIL: missing in %s\n", what, where);
	c->failures++;
}

static int parse_args(struct cmp *c, int argc, char **argv)
{
	const char *metrics = "ops_per_s,ns_per_op,p50_ns,p99_ns,worker_cpu_ns_per_op";
	unsigned nf = 0;
	c->threshold = 0.05;
	c->alpha = 0.01;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end = NULL;
		if (!strcmp(a, "--threshold") && v) {
			c->threshold = strtod(v, &end) / 100;
			i++;
			if (*end || c->threshold < 0)
				return -EINVAL;
		} else if (!strcmp(a, "--alpha") && v) {
			c->alpha = strtod(v, &end);
			i++;
			if (*end || !(c->alpha > 0 && c->alpha < 0.5))
				return -EINVAL;
		} else if (!strcmp(a, "--metrics") && v) {
			metrics = v;
			i++;
		} else if (!strcmp(a, "--pair") && v) {
			char *eq = strchr(argv[++i], '=');
			if (!eq || c->npairs == MAX_PAIRS)
				return -EINVAL;
			*eq = 0;
			c->pair[c->npairs][0] = argv[i];
			c->pair[c->npairs++][1] = eq + 1;
		} else if (!strcmp(a, "--halves")) {
			c->halves = true;
		} else if (!strcmp(a, "--quiet")) {
			c->quiet = true;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			return 1;
		} else if (a[0] != '-' && nf < 2) {
			c->file[nf++] = a;
		} else {
			return -EINVAL;
		}
	}
	if (nf != 2)
		return -EINVAL;
	char mbuf[512];
	snprintf(mbuf, sizeof(mbuf), "%s", metrics);
	for (char *sv = NULL, *t = strtok_r(mbuf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		int k = fig_index(t);
		if (k < 0 || !fig_better[k] || c->nfig == FIG__COUNT) {
			fprintf(stderr, "vqs-bench compare: %s is not a judged figure\n", t);
			return -EINVAL;
		}
		c->figs[c->nfig++] = k;
	}
	return c->nfig ? 0 : -EINVAL;
}

static const struct json *load_runs(const char *path, struct json *doc)
{
	if (json_parse_file(path, doc))
		return NULL;
	const struct json *runs = json_get(doc, "runs");
	if (!runs || runs->type != JSON_ARR) {
		fprintf(stderr, "vqs-bench compare: %s has no \"runs\" array\n", path);
		return NULL;
	}
	return runs;
}

int compare_main(int argc, char **argv)
{
	struct cmp c = {0};
	int rc = parse_args(&c, argc, argv);
	if (rc) {
		compare_usage(rc > 0 ? stdout : stderr);
		return rc > 0 ? 0 : 2;
	}
	struct json doc[2] = {0};
	const struct json *runs[2];
	if (!(runs[0] = load_runs(c.file[0], &doc[0])) || !(runs[1] = load_runs(c.file[1], &doc[1]))) {
		json_free(&doc[0]);
		json_free(&doc[1]);
		return 2;
	}
	int status = 0;
	const char *proc[2] = {json_str_or(&doc[0], "process", ""), json_str_or(&doc[1], "process", "")};
	c.same_process = proc[0][0] && !strcmp(proc[0], proc[1]);
	const struct json *figs[2] = {json_get(&doc[0], "figures"), json_get(&doc[1], "figures")};
	c.figures = !c.npairs && ((figs[0] && figs[0]->n) || (figs[1] && figs[1]->n));
	if (c.figures) {
		judge_figures(&c, figs[0], figs[1]);
		for (size_t i = 0; i < runs[1]->n; i++) { /* loss or errors in NEW still fail */
			bool header = false;
			char title[300];
			snprintf(title, sizeof(title), "run %s",
				 json_str_or(&runs[1]->items[i], "key", "?"));
			check_loss(&c, &runs[1]->items[i], &header, title);
		}
	}
	for (unsigned p = 0; p < c.npairs && !status; p++) {
		unsigned nb, nn;
		const struct json *br = glob_run(runs[0], c.pair[p][0], &nb);
		const struct json *nr = glob_run(runs[1], c.pair[p][1], &nn);
		if (nb > 1 || nn > 1) {
			fprintf(stderr, "vqs-bench compare: --pair %s=%s: %u runs of %s and %u of %s "
					"match: one each is needed\n", c.pair[p][0], c.pair[p][1], nb,
				c.file[0], nn, c.file[1]);
			status = 2;
		} else if (!br || !nr) {
			missing(&c, br ? c.pair[p][1] : c.pair[p][0], br ? c.file[1] : c.file[0]);
		} else {
			judge_run(&c, br, nr);
		}
	}
	for (size_t i = 0; !c.npairs && !c.figures && i < runs[0]->n; i++) {
		const struct json *br = &runs[0]->items[i];
		const struct json *nr = find_run(runs[1], json_str_or(br, "key", ""));
		if (nr)
			judge_run(&c, br, nr);
		else
			missing(&c, json_str_or(br, "key", "?"), c.file[1]);
	}
	for (size_t i = 0; !c.npairs && !c.figures && i < runs[1]->n; i++) {
		const char *key = json_str_or(&runs[1]->items[i], "key", "?");
		if (!find_run(runs[0], key))
			missing(&c, key, c.file[0]);
	}
	printf("\ncompare: %u runs judged, %u regressions (worse by more than %.1f%% at one-sided "
	       "level %g), %u failures (loss or errors in NEW, missing runs or figures, too few "
	       "samples)\n", c.matched, c.regressions, c.threshold * 100, c.alpha, c.failures);
	json_free(&doc[0]);
	json_free(&doc[1]);
	if (!status && !c.matched && !c.failures) {
		fprintf(stderr, "vqs-bench compare: no run of %s matches one of %s\n", c.file[1],
			c.file[0]);
		status = 2;
	}
	return status ? status : c.regressions || c.failures ? 1 : 0;
}
