/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench ab --a CMD --b CMD [--rounds N] [--dir DIR] [compare flags]: run two benchmark
 * commands alternately, N rounds (A B, then B A, ...), each writing its JSON report, so that a
 * slow stretch of a shared machine lands on both sides instead of on whichever ran then. The
 * rounds of each side are merged into one report (DIR/a.json, DIR/b.json: every run's samples
 * of all rounds with the round of each, loss counters summed) and `compare` judges B against A,
 * pairing each round's A with its B.
 *
 * A command is a shell command line (sh -c) to which `--json FILE` is appended: two builds
 * (build-old/bench/vqs-bench ...), or one binary against two library files
 * (LD_LIBRARY_PATH=old/lib vqs-bench ...), or one build with and without a flag.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ab.h"
#include "bench.h"
#include "compare.h"
#include "json.h"
#include "output.h"

#define AB_MAX_ROUNDS 1000

static void ab_usage(FILE *f)
{
	fprintf(f, "usage: vqs-bench ab --a 'CMD' --b 'CMD' [--rounds N] [--dir DIR] [--reuse] "
		   "[compare flags]\n"
		   "  --a, --b CMD  shell command lines of a benchmark run; `--json FILE` is appended\n"
		   "  --rounds N    rounds of one A and one B run, alternating which goes first "
		   "(default 10)\n"
		   "  --dir DIR     where the rounds' reports and logs and the merged a.json, b.json go "
		   "(default: a new /tmp/vqs-bench-ab-*)\n"
		   "  --reuse       keep the rounds' reports already in DIR (resume, or judge again)\n"
		   "  other flags go to `vqs-bench compare DIR/a.json DIR/b.json` (see compare --help)\n"
		   "exit status: compare's; 2 when a command fails to write its report\n");
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Run one side's command for one round; 0 when it wrote its report. */
static int run_side(const char *cmd, const char *dir, char side, unsigned round)
{
	char line[8192];
	int n = snprintf(line, sizeof(line), "%s --json '%s/%c-%u.json' >'%s/%c-%u.log' 2>&1", cmd,
			 dir, side, round, dir, side, round);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -E2BIG;
	fflush(NULL);
	int st = system(line);
	/* 1 is a run that lost requests or failed a point: its report says so, compare judges it */
	if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) > 1) {
		fprintf(stderr, "vqs-bench ab: round %u of %c failed (status %d): see %s/%c-%u.log\n",
			round, side, st, dir, side, round);
		return -EIO;
	}
	return 0;
}

/* One run of the merged report, its samples growing round by round. */
struct merged {
	char *key;
	double lost, duplicated, corrupted, error, inject_pct;
	double *s[FIG__COUNT];
	unsigned n[FIG__COUNT], cap[FIG__COUNT];
	double *achieved; /* inject_achieved_pct of each round */
	unsigned nachieved;
	double *round; /* the round of each sample */
	unsigned nround, capround;
};

static int push(double **v, unsigned *n, unsigned *cap, double x)
{
	if (*n == *cap) {
		unsigned nc = *cap ? *cap * 2 : 16;
		double *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = x;
	return 0;
}

static struct merged *merged_find(struct merged **m, unsigned *nm, const char *key)
{
	for (unsigned i = 0; i < *nm; i++)
		if (!strcmp((*m)[i].key, key))
			return &(*m)[i];
	struct merged *g = realloc(*m, (*nm + 1) * sizeof(*g));
	if (!g)
		return NULL;
	*m = g;
	g = &g[(*nm)++];
	memset(g, 0, sizeof(*g));
	g->key = strdup(key);
	return g->key ? g : NULL;
}

static int merge_report(const char *path, unsigned round, struct merged **m, unsigned *nm)
{
	struct json doc;
	int rc = json_parse_file(path, &doc);
	if (rc)
		return rc;
	const struct json *runs = json_get(&doc, "runs");
	for (size_t i = 0; !rc && runs && runs->type == JSON_ARR && i < runs->n; i++) {
		const struct json *r = &runs->items[i];
		struct merged *g = merged_find(m, nm, json_str_or(r, "key", "?"));
		if (!g) {
			rc = -ENOMEM;
			break;
		}
		g->lost += json_num_or(r, "lost", 0);
		g->duplicated += json_num_or(r, "duplicated", 0);
		g->corrupted += json_num_or(r, "corrupted", 0);
		if (!g->error)
			g->error = json_num_or(r, "error", 0);
		g->inject_pct = json_num_or(r, "inject_pct", 0);
		unsigned cap = g->nachieved;
		if (g->inject_pct)
			rc = push(&g->achieved, &g->nachieved, &cap,
				  json_num_or(r, "inject_achieved_pct", 0));
		for (unsigned k = 0; !rc && k < FIG__COUNT; k++) {
			const struct json *a = json_get(json_get(r, "samples"), fig_names[k]);
			for (size_t j = 0; !rc && a && a->type == JSON_ARR && j < a->n; j++) {
				rc = push(&g->s[k], &g->n[k], &g->cap[k], a->items[j].num);
				if (!rc && !k) /* a repeat has every figure: count rounds once */
					rc = push(&g->round, &g->nround, &g->capround, round);
			}
		}
	}
	json_free(&doc);
	return rc;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(const double *v, unsigned n)
{
	if (!n)
		return 0;
	double t[n];
	memcpy(t, v, n * sizeof(*t));
	qsort(t, n, sizeof(*t), cmp_double);
	return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The merged report: what compare reads (key, loss, error, samples) and each figure's median. */
static int write_merged(const char *path, const char *cmd, unsigned rounds,
			const struct merged *m, unsigned nm)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -errno;
	/* one process ran both sides' rounds, each round's A next to its B: compare pairs them */
	fprintf(f, "{\n  \"schema\": 2,\n  \"tool\": \"vqs-bench ab\",\n  \"process\": ");
	json_write_str(f, output_process_id());
	fprintf(f, ",\n  \"command\": ");
	json_write_str(f, cmd);
	fprintf(f, ",\n  \"rounds\": %u,\n  \"runs\": [", rounds);
	for (unsigned i = 0; i < nm; i++) {
		const struct merged *g = &m[i];
		fprintf(f, "%s\n    {\"key\": ", i ? "," : "");
		json_write_str(f, g->key);
		fprintf(f, ", \"lost\": %.0f, \"duplicated\": %.0f, \"corrupted\": %.0f, "
			   "\"error\": %.0f, \"inject_pct\": %.0f, \"inject_achieved_pct\": ",
			g->lost, g->duplicated, g->corrupted, g->error, g->inject_pct);
		json_write_num(f, median(g->achieved, g->nachieved));
		for (unsigned k = 0; k < FIG__COUNT; k++) {
			fprintf(f, ", \"%s\": ", fig_names[k]);
			json_write_num(f, median(g->s[k], g->n[k]));
		}
		fprintf(f, ",\n     \"sample_round\": [");
		for (unsigned j = 0; j < g->nround; j++)
			fprintf(f, "%s%.0f", j ? ", " : "", g->round[j]);
		fprintf(f, "],\n     \"samples\": {");
		for (unsigned k = 0; k < FIG__COUNT; k++) {
			fprintf(f, "%s\"%s\": [", k ? ", " : "", fig_names[k]);
			for (unsigned j = 0; j < g->n[k]; j++) {
				fputs(j ? ", " : "", f);
				json_write_num(f, g->s[k][j]);
			}
			fputc(']', f);
		}
		fprintf(f, "}}");
	}
	fprintf(f, "\n  ]\n}\n");
	int rc = ferror(f) ? -EIO : 0;
	if (fclose(f))
		rc = -errno;
	return rc;
}

static void merged_free(struct merged *m, unsigned nm)
{
	for (unsigned i = 0; i < nm; i++) {
		free(m[i].key);
		free(m[i].achieved);
		free(m[i].round);
		for (unsigned k = 0; k < FIG__COUNT; k++)
			free(m[i].s[k]);
	}
	free(m);
}

int ab_main(int argc, char **argv)
{
	const char *cmd[2] = {NULL, NULL}, *dir = NULL;
	unsigned rounds = 10;
	bool reuse = false;
	char **rest = calloc((size_t)argc + 3, sizeof(*rest));
	int nrest = 2, status = 2;
	if (!rest)
		return 2;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if ((!strcmp(a, "--a") || !strcmp(a, "--b")) && v) {
			cmd[a[2] == 'b'] = v;
			i++;
		} else if (!strcmp(a, "--rounds") && v) {
			char *end;
			long n = strtol(v, &end, 10);
			i++;
			if (*end || n < 1 || n > AB_MAX_ROUNDS)
				goto usage;
			rounds = (unsigned)n;
		} else if (!strcmp(a, "--reuse")) {
			reuse = true;
		} else if (!strcmp(a, "--dir") && v) {
			dir = v;
			i++;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			ab_usage(stdout);
			free(rest);
			return 0;
		} else {
			rest[nrest++] = argv[i];
		}
	}
	if (!cmd[0] || !cmd[1])
		goto usage;
	char tmp[] = "/tmp/vqs-bench-ab-XXXXXX";
	if (dir ? mkdir(dir, 0755) && errno != EEXIST : !(dir = mkdtemp(tmp))) {
		fprintf(stderr, "vqs-bench ab: %s: %s\n", dir ? dir : tmp, strerror(errno));
		goto out;
	}
	fprintf(stderr, "vqs-bench ab: %u rounds, reports and logs in %s\n", rounds, dir);
	double t0 = now_s();
	for (unsigned r = 0; r < rounds; r++) {
		double t[2] = {0, 0};
		for (unsigned k = 0; k < 2; k++) {
			unsigned side = (k + r) % 2; /* A B, B A, ... */
			double ts = now_s();
			char done[4096];
			snprintf(done, sizeof(done), "%s/%c-%u.json", dir, "ab"[side], r);
			if (reuse && !access(done, R_OK))
				continue;
			if (run_side(cmd[side], dir, "ab"[side], r))
				goto out;
			t[side] = now_s() - ts;
		}
		fprintf(stderr, "round %u/%u: A %.1f s, B %.1f s\n", r + 1, rounds, t[0], t[1]);
	}
	char path[2][4096];
	for (unsigned side = 0; side < 2; side++) {
		struct merged *m = NULL;
		unsigned nm = 0;
		int rc = 0;
		for (unsigned r = 0; !rc && r < rounds; r++) {
			char in[4096];
			snprintf(in, sizeof(in), "%s/%c-%u.json", dir, "ab"[side], r);
			rc = merge_report(in, r, &m, &nm);
		}
		snprintf(path[side], sizeof(path[side]), "%s/%c.json", dir, "ab"[side]);
		if (!rc)
			rc = write_merged(path[side], cmd[side], rounds, m, nm);
		merged_free(m, nm);
		if (rc) {
			fprintf(stderr, "vqs-bench ab: merging %c: %s\n", "ab"[side], strerror(-rc));
			goto out;
		}
	}
	fprintf(stderr, "vqs-bench ab: %u rounds in %.1f s; vqs-bench compare %s %s\n", rounds,
		now_s() - t0, path[0], path[1]);
	rest[0] = path[0];
	rest[1] = path[1];
	status = compare_main(nrest, rest);
out:
	free(rest);
	return status;
usage:
	ab_usage(stderr);
	free(rest);
	return 2;
}
