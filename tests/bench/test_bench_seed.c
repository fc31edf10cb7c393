/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench presets seed-2017 and seed-2023 (the ksim reproductions), run with --quick: a
 * well-formed report with one run per table cell and no loss; the mechanisms each reproduces,
 * which do not depend on timing (the 4.13 RX variant loses packets while the fixed variant and
 * vqsched lose and retransmit nothing; the task-mode worker runs on the vCPU's CPU); ksim's own
 * table and no workload table or goal lines; and the report's figures: one per stream count
 * (seed-2017) or workload (seed-2023), each with the samples of the column --variant or --worker
 * chose. Never a speed: tests/ksim asserts the effects.
 */
#define _GNU_SOURCE 1
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"
#include "run.h"

/* The figures of one `ksim-run KEY name=value ...` line of the text output. */
struct ksim_run {
	char key[256];
	double rate;
	unsigned long long delivered, drops_batch, drops_ring, retransmits, timeouts;
	int err;
};

static bool field(const char *line, const char *name, unsigned long long *v)
{
	char pat[32];
	snprintf(pat, sizeof(pat), " %s=", name);
	const char *p = strstr(line, pat);
	return p && sscanf(p + strlen(pat), "%llu", v) == 1;
}

/* Every ksim-run line of a text report; fails the test on a malformed one. */
static unsigned read_runs(const char *path, struct ksim_run *out, unsigned max)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[1024];
	unsigned n = 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "ksim-run ", 9))
			continue;
		assert_true(n < max);
		struct ksim_run *r = &out[n++];
		unsigned long long err;
		assert_int_equal(sscanf(line + 9, "%255s rate=%lf", r->key, &r->rate), 2);
		if (!field(line, "delivered", &r->delivered) ||
		    !field(line, "drops_batch", &r->drops_batch) ||
		    !field(line, "drops_ring", &r->drops_ring) ||
		    !field(line, "retransmits", &r->retransmits) ||
		    !field(line, "timeouts", &r->timeouts) || !strstr(line, " err="))
			fail_msg("malformed line: %s", line);
		r->err = field(line, "err", &err) ? (int)err : -1;
	}
	fclose(f);
	return n;
}

static bool text_has(const char *path, const char *needle)
{
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* Runs the preset (with `choice`, e.g. "--variant", "4.12", or NULL, NULL); the JSON report is
 * checked by the shared rules (well-formed, no loss, no error); every JSON run must have its
 * ksim-run line and the other way round; the text has ksim's table and not the workload
 * table's header or goal lines. */
static unsigned run_preset(const char *preset, const char *flag, const char *choice,
			   const char *txt, const char *json, const char *csv, unsigned cells,
			   struct ksim_run *runs)
{
	const char *args[] = {"--preset", preset, "--quick", "--no-floors", "--json", json,
			      "--csv", csv, flag, choice, NULL};
	assert_int_equal(bench_run(txt, args), 0);
	assert_true(text_has(txt, "verdict: "));
	assert_false(text_has(txt, "policy    place"));
	assert_false(text_has(txt, "goals (computed"));
	bench_check_report(json, cells);
	assert_true(bench_file_nonempty(csv));
	unsigned n = read_runs(txt, runs, cells);
	assert_int_equal(n, cells);
	struct json doc;
	assert_int_equal(json_parse_file(json, &doc), 0);
	const struct json *jr = json_get(&doc, "runs");
	assert_int_equal(jr->n, cells);
	for (unsigned i = 0; i < cells; i++) {
		const char *key = json_str_or(&jr->items[i], "key", "");
		assert_int_equal(strncmp(key, preset, strlen(preset)), 0);
		assert_string_equal(key, runs[i].key);
		assert_int_equal(runs[i].err, 0);
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(runs[j].key, key);
	}
	json_free(&doc);
	return n;
}

/*
 * The report's figures: `names` in order, each in `unit`, higher better, one sample (--quick
 * runs once) equal to the rate of the ksim-run line whose key holds `col` and `row_key[i]`.
 */
static void check_figures(const char *json, const struct ksim_run *runs, unsigned nruns,
			  const char *col, const char *const *names, const char *const *row_key,
			  const char *const *units, unsigned n)
{
	struct json doc;
	assert_int_equal(json_parse_file(json, &doc), 0);
	const struct json *figs = json_get(&doc, "figures");
	assert_non_null(figs);
	assert_int_equal(figs->n, n);
	for (unsigned i = 0; i < n; i++) {
		const struct json *g = &figs->items[i];
		assert_string_equal(json_str_or(g, "name", ""), names[i]);
		assert_string_equal(json_str_or(g, "unit", ""), units[i]);
		assert_string_equal(json_str_or(g, "better", ""), "higher");
		const struct json *samples = json_get(g, "samples");
		assert_non_null(samples);
		assert_int_equal(samples->n, 1);
		const struct ksim_run *r = NULL;
		for (unsigned k = 0; k < nruns && !r; k++)
			if (strstr(runs[k].key, col) && strstr(runs[k].key, row_key[i]))
				r = &runs[k];
		assert_non_null(r);
		double v = samples->items[0].num;
		if (v < r->rate - 1 || v > r->rate + 1) /* the text rounds to a unit */
			fail_msg("%s: sample %.1f, %s rate %.1f", names[i], v, r->key, r->rate);
	}
	json_free(&doc);
}

static const char *const names2017[] = {"goodput-1-stream", "goodput-10-streams",
					"goodput-50-streams"};
static const char *const rows2017[] = {"/s1/", "/s10/", "/s50/"};
static const char *const units2017[] = {"Mbit/s", "Mbit/s", "Mbit/s"};

static void test_seed2017_413_drops_fixed_and_vqsched_lose_nothing(void **state)
{
	struct ksim_run runs[15];
	unsigned n = run_preset("seed-2017", NULL, NULL, bench_path("2017.txt"),
				bench_path("2017.json"), bench_path("2017.csv"), 15, runs);
	unsigned long long drops_413 = 0;
	unsigned kept = 0;
	for (unsigned i = 0; i < n; i++) {
		const struct ksim_run *r = &runs[i];
		if (strstr(r->key, "/4.13-")) {
			/* a leak may fall in the warm-up: count its resend */
			drops_413 += r->drops_batch + r->retransmits;
			continue;
		}
		assert_true(strstr(r->key, "/fixed-") || strstr(r->key, "/vqsched-adaptive/"));
		if (r->drops_batch || r->drops_ring || r->retransmits || r->timeouts || !r->delivered)
			fail_msg("%s: drops %llu/%llu, retransmits %llu, timeouts %llu, delivered %llu",
				 r->key, r->drops_batch, r->drops_ring, r->retransmits, r->timeouts,
				 r->delivered);
		kept++;
	}
	assert_int_equal(kept, 9); /* fixed b1, fixed b64, adaptive at 1, 10, 50 streams */
	assert_true(drops_413 > 0);
	assert_true(text_has(bench_path("2017.txt"),
			     "drops what the fixed variant and vqsched keep: REPRODUCED"));
	/* Without --variant the figures are 4.13's: the batched RX path. */
	check_figures(bench_path("2017.json"), runs, n, "/4.13-b64/", names2017, rows2017,
		      units2017, 3);
}

static void test_seed2017_variant_412_carries_the_fixed_b1_column(void **state)
{
	struct ksim_run runs[15];
	unsigned n = run_preset("seed-2017", "--variant", "4.12", bench_path("412.txt"),
				bench_path("412.json"), bench_path("412.csv"), 15, runs);
	check_figures(bench_path("412.json"), runs, n, "/fixed-b1/", names2017, rows2017,
		      units2017, 3);
	const char *bad[][2] = {{"--variant", "4.14"}, {"--worker", "task"}};
	for (unsigned i = 0; i < 2; i++) {
		const char *args[] = {"--preset", "seed-2017", "--quick", "--no-floors", bad[i][0],
				      bad[i][1], NULL};
		assert_int_equal(bench_run(NULL, args), 2);
	}
	const char *args[] = {"--preset", "default", "--quick", "--variant", "4.12", NULL};
	assert_int_equal(bench_run(NULL, args), 2);
}

/* The figures of one report as name -> samples, and their sample_round, checked to be 0..n-1. */
static const struct json *figures_by_repeat(const struct json *doc, unsigned n, unsigned repeats)
{
	const struct json *figs = json_get(doc, "figures");
	assert_non_null(figs);
	assert_int_equal(figs->n, n);
	for (unsigned i = 0; i < n; i++) {
		const struct json *rounds = json_get(&figs->items[i], "sample_round");
		assert_non_null(rounds);
		assert_int_equal(rounds->n, repeats);
		assert_int_equal(json_get(&figs->items[i], "samples")->n, repeats);
		for (unsigned k = 0; k < repeats; k++)
			assert_int_equal(rounds->items[k].num, k);
	}
	return figs;
}

/* --json-base: the same run's other worker mode, by repeat, for compare to pair: both reports
 * carry TCP_STREAM and TCP_RR with one sample per repeat, and the columns differ. */
static void test_seed2023_json_base_carries_the_other_worker_by_repeat(void **state)
{
	const char *args[] = {"--preset", "seed-2023", "--quick", "--no-floors", "--repeat", "2",
			      "--json", bench_path("2023-task.json"), "--json-base",
			      bench_path("2023-kthread.json"), NULL};
	assert_int_equal(bench_run(bench_path("2023-base.txt"), args), 0);
	assert_true(text_has(bench_path("2023-base.txt"), "(kthread):"));
	struct json task, kthread;
	assert_int_equal(json_parse_file(bench_path("2023-task.json"), &task), 0);
	assert_int_equal(json_parse_file(bench_path("2023-kthread.json"), &kthread), 0);
	const struct json *t = figures_by_repeat(&task, 2, 2), *k = figures_by_repeat(&kthread, 2, 2);
	bool differ = false;
	for (unsigned i = 0; i < 2; i++) {
		assert_string_equal(json_str_or(&t->items[i], "name", "?"),
				    json_str_or(&k->items[i], "name", "!"));
		for (unsigned r = 0; r < 2; r++)
			differ |= json_get(&t->items[i], "samples")->items[r].num !=
				  json_get(&k->items[i], "samples")->items[r].num;
	}
	assert_true(differ);
	json_free(&task);
	json_free(&kthread);
	const char *alone[] = {"--preset", "seed-2023", "--quick", "--json-base", "x.json", NULL};
	assert_int_equal(bench_run(NULL, alone), 2); /* without --json */
}

static bool list_has(const char *list, int cpu)
{
	for (const char *p = list; *p;) {
		char *end;
		long a = strtol(p, &end, 10), b = a;
		if (end == p)
			return false;
		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		if (cpu >= a && cpu <= b)
			return true;
		p = *end == ',' ? end + 1 : end;
	}
	return false;
}

static void test_seed2023_task_worker_runs_on_the_vcpu_cpu(void **state)
{
	cpu_set_t mine;
	assert_int_equal(sched_getaffinity(0, sizeof(mine), &mine), 0);
	int vcpu = 0;
	while (!CPU_ISSET(vcpu, &mine))
		vcpu++;
	char vcpu_only[16];
	snprintf(vcpu_only, sizeof(vcpu_only), "%d", vcpu);
	struct ksim_run runs[6];
	const char *json = bench_path("2023.json");
	unsigned n = run_preset("seed-2023", "--worker", "kthread", bench_path("2023.txt"), json,
				bench_path("2023.csv"), 6, runs);
	static const char *const names[] = {"TCP_STREAM", "TCP_RR"};
	static const char *const rows[] = {"/stream/", "/rr/"};
	static const char *const units[] = {"Mbit/s", "trans/s"};
	check_figures(json, runs, n, "seed-2023/kthread/", names, rows, units, 2);
	struct json doc;
	assert_int_equal(json_parse_file(json, &doc), 0);
	const struct json *jr = json_get(&doc, "runs");
	unsigned task = 0;
	for (size_t i = 0; i < jr->n; i++) {
		const struct json *r = &jr->items[i];
		const char *key = json_str_or(r, "key", ""), *cpus = json_str_or(r, "worker_cpus", "");
		assert_true(json_num_or(r, "ops_per_s", 0) > 0);
		if (strstr(key, "seed-2023/task/")) {
			assert_string_equal(json_str_or(r, "placement", ""), "inherit");
			if (!list_has(cpus, vcpu))
				fail_msg("%s: worker on %s, vCPU on %d", key, cpus, vcpu);
			assert_string_equal(cpus, vcpu_only);
			task++;
		} else if (CPU_COUNT(&mine) > 1) {
			/* kthread and auto workers are not confined to the vCPU's CPU */
			assert_string_not_equal(cpus, vcpu_only);
		}
	}
	assert_int_equal(task, 2); /* TCP_STREAM and TCP_RR */
	json_free(&doc);
	if (CPU_COUNT(&mine) > 1)
		assert_true(text_has(bench_path("2023.txt"), "kthread and auto do not: REPRODUCED"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed2017_413_drops_fixed_and_vqsched_lose_nothing),
		cmocka_unit_test(test_seed2017_variant_412_carries_the_fixed_b1_column),
		cmocka_unit_test(test_seed2023_task_worker_runs_on_the_vcpu_cpu),
		cmocka_unit_test(test_seed2023_json_base_carries_the_other_worker_by_repeat),
	};
	return cmocka_run_group_tests(tests, NULL, bench_cleanup);
}
