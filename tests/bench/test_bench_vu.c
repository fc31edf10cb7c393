/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench over vhost-user (--transport vhost-user): the workloads run through the library's
 * vhost-user backend and frontend with zero loss, every run says so in its record and its key,
 * and that key is the direct run's key plus the transport, so compare matches like with like.
 * Never a speed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json.h"
#include "run.h"

#define TINY "--quick", "--no-floors", "--duration-ms", "10", "--warmup-ms", "5"
#define VU_SUFFIX "/vhost-user"

/* Every run of the report was over `transport`, its key ending in "/" and the transport's name
 * unless it is direct. */
static void check_transport(const char *json_path, const char *transport)
{
	char suffix[32];
	snprintf(suffix, sizeof(suffix), "/%s", transport);
	struct json doc;
	assert_int_equal(json_parse_file(json_path, &doc), 0);
	const struct json *runs = json_get(&doc, "runs");
	assert_non_null(runs);
	assert_true(runs->n > 0);
	bool direct = !strcmp(transport, "direct");
	for (size_t i = 0; i < runs->n; i++) {
		const struct json *r = &runs->items[i];
		const char *key = json_str_or(r, "key", "");
		size_t kl = strlen(key), sl = strlen(suffix);
		assert_string_equal(json_str_or(r, "transport", "?"), transport);
		assert_int_equal(kl > sl && !strcmp(key + kl - sl, suffix), !direct);
		assert_false(direct && strstr(key, "/vhost-user"));
	}
	json_free(&doc);
}

static void workload_vu(const char *wl)
{
	char name[64];
	snprintf(name, sizeof(name), "vu-%s.json", wl);
	const char *json = bench_path(name);
	const char *args[] = {"--workloads", wl, "--policies", "pool,poll", "--streams", "1,3",
			      "--batch", "1,64", "--transport", "vhost-user", TINY, "--json", json,
			      NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	bench_check_report(json, 8);
	check_transport(json, "vhost-user");
}

static void test_vu_stream_no_loss(void **state) { workload_vu("stream"); }

/* With dirty logging on for the run (as during a live migration): copies through every buffer,
 * nothing lost, duplicated or corrupted. */
static void test_vu_log_stream_copy_no_loss(void **state)
{
	const char *json = bench_path("vu-log.json");
	const char *args[] = {"--workloads", "stream,rr", "--policies", "pool,poll", "--streams", "1",
			      "--batch", "64", "--payload", "1500", "--touch", "copy",
			      "--transport", "vhost-user-log", TINY, "--json", json, NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	bench_check_report(json, 4);
	check_transport(json, "vhost-user-log");
}
static void test_vu_rr_no_loss(void **state) { workload_vu("rr"); }

/* The log-cost preset runs each point with logging off and on, and its goal pairs their repeats
 * (never judged here: a speed). */
static void test_vu_log_cost_preset_pairs_repeats(void **state)
{
	const char *json = bench_path("vu-log-cost.json");
	const char *args[] = {"--preset", "log-cost", "--policies", "poll", "--repeat", "3", TINY,
			      "--json", json, NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	bench_check_report(json, 2);
	struct json doc;
	assert_int_equal(json_parse_file(json, &doc), 0);
	const struct json *runs = json_get(&doc, "runs"), *goals = json_get(&doc, "goals");
	assert_int_equal(runs->n, 2);
	assert_string_equal(json_str_or(&runs->items[0], "transport", "?"), "vhost-user");
	assert_string_equal(json_str_or(&runs->items[1], "transport", "?"), "vhost-user-log");
	const struct json *g = NULL;
	for (size_t i = 0; i < goals->n; i++)
		if (!strcmp(json_str_or(&goals->items[i], "name", ""), "dirty-log-cost"))
			g = &goals->items[i];
	assert_non_null(g);
	/* A pair counts when the repeat without logging completed something: on a loaded machine a
	 * 10 ms window may not, and the goal says so by its count. */
	const struct json *off = json_get(json_get(&runs->items[0], "samples"), "ops_per_s");
	const struct json *on = json_get(json_get(&runs->items[1], "samples"), "ops_per_s");
	assert_non_null(off);
	assert_non_null(on);
	assert_int_equal(off->n, 3);
	assert_int_equal(on->n, 3);
	unsigned pairs = 0;
	for (size_t i = 0; i < off->n; i++)
		pairs += off->items[i].num > 0;
	if (!pairs) {
		assert_string_equal(json_str_or(g, "status", "?"), "not_measured");
	} else {
		char want[32];
		snprintf(want, sizeof(want), ", %u pairs,", pairs);
		assert_string_not_equal(json_str_or(g, "status", "not_measured"), "not_measured");
		assert_non_null(strstr(json_str_or(g, "detail", ""), "poll "));
		assert_non_null(strstr(json_str_or(g, "detail", ""), want));
	}
	json_free(&doc);
}

/* The packed layout, blocking drivers (the backend's calls wake them), several drivers and
 * outstanding requests per stream, over the real connection. */
static void test_vu_packed_block_drivers_no_loss(void **state)
{
	const char *json = bench_path("vu-packed.json");
	const char *args[] = {"--workloads", "stream,rr", "--policies", "adaptive", "--placements",
			      "pin", "--streams", "3", "--drivers", "2", "--batch", "16",
			      "--outstanding", "4", "--layout", "packed", "--driver-wait", "block",
			      "--rates", "0", "--transport", "vhost-user", TINY, "--json", json,
			      NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	bench_check_report(json, 2);
	check_transport(json, "vhost-user");
}

/* The same point run direct and over vhost-user: keys differ by the suffix only, and direct
 * keeps the key it had before transports existed (no suffix). */
static void test_vu_key_is_direct_key_plus_transport(void **state)
{
	const char *dj = bench_path("key-direct.json"), *vj = bench_path("key-vu.json");
	const char *direct[] = {"--workloads", "rr", "--policies", "poll", "--placements", "pin",
				"--streams", "1", "--batch", "1", TINY, "--json", dj, NULL};
	const char *vu[] = {"--workloads", "rr", "--policies", "poll", "--placements", "pin",
			    "--streams", "1", "--batch", "1", "--transport", "vhost-user", TINY,
			    "--json", vj, NULL};
	assert_int_equal(bench_run(NULL, direct), 0);
	assert_int_equal(bench_run(NULL, vu), 0);
	check_transport(dj, "direct");
	check_transport(vj, "vhost-user");
	struct json a, b;
	assert_int_equal(json_parse_file(dj, &a), 0);
	assert_int_equal(json_parse_file(vj, &b), 0);
	const struct json *ra = json_get(&a, "runs"), *rb = json_get(&b, "runs");
	assert_true(ra->n > 0);
	assert_int_equal(ra->n, rb->n); /* the same plan, in the same order */
	for (size_t i = 0; i < ra->n; i++) {
		char want[300];
		snprintf(want, sizeof(want), "%s%s", json_str_or(&ra->items[i], "key", ""), VU_SUFFIX);
		assert_string_equal(json_str_or(&rb->items[i], "key", ""), want);
	}
	json_free(&a);
	json_free(&b);
}

static void test_vu_bad_transport_fails(void **state)
{
	const char *bad[] = {"--transport", "tcp", NULL};
	assert_int_equal(bench_run(NULL, bad), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vu_stream_no_loss),
		cmocka_unit_test(test_vu_log_stream_copy_no_loss),
		cmocka_unit_test(test_vu_rr_no_loss),
		cmocka_unit_test(test_vu_log_cost_preset_pairs_repeats),
		cmocka_unit_test(test_vu_packed_block_drivers_no_loss),
		cmocka_unit_test(test_vu_key_is_direct_key_plus_transport),
		cmocka_unit_test(test_vu_bad_transport_fails),
	};
	return cmocka_run_group_tests(tests, NULL, bench_cleanup);
}
