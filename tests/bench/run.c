/* SPDX-License-Identifier: MIT */
#include "run.h"

#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "json.h"

static int spawn(const char *prog, const char *out_path, const char *const *args)
{
	const char *argv[64];
	unsigned n = 0;
	argv[n++] = prog;
	for (; args && args[n - 1] && n < 63; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(out_path ? out_path : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		execvp(prog, (char *const *)argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int bench_run(const char *out_path, const char *const *args)
{
	return spawn(VQS_BENCH_BIN, out_path, args);
}

int bench_run_bin(const char *bin, const char *out_path, const char *const *args)
{
	return spawn(bin, out_path, args);
}

const char *bench_tmpdir(void)
{
	static char dir[64];
	if (!dir[0]) {
		strcpy(dir, "/tmp/vqs-bench-test-XXXXXX");
		assert_non_null(mkdtemp(dir));
	}
	return dir;
}

const char *bench_path(const char *name)
{
	static char bufs[8][PATH_MAX];
	static unsigned next;
	char *b = bufs[next++ % 8];
	snprintf(b, PATH_MAX, "%s/%s", bench_tmpdir(), name);
	return b;
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

int bench_cleanup(void **state)
{
	if (bench_tmpdir()[0])
		nftw(bench_tmpdir(), remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	return 0;
}

bool bench_file_nonempty(const char *path)
{
	struct stat st;
	return !stat(path, &st) && st.st_size > 0;
}

static bool have_python3(void)
{
	const char *args[] = {"-c", "pass", NULL};
	return spawn("python3", NULL, args) == 0;
}

void bench_check_report(const char *json_path, unsigned min_runs)
{
	if (have_python3()) {
		const char *args[] = {"-c", "import json, sys; json.load(open(sys.argv[1]))", json_path,
				      NULL};
		assert_int_equal(spawn("python3", NULL, args), 0);
	}
	struct json doc;
	assert_int_equal(json_parse_file(json_path, &doc), 0);
	assert_non_null(json_get(&doc, "machine"));
	const struct json *floors = json_get(&doc, "floors");
	assert_non_null(floors);
	if (json_num_or(floors, "measured", 0)) {
		/* the floors and the ring references next to them all came out */
		assert_true(json_num_or(floors, "ring_rr_p50_ns", 0) > 0);
		assert_true(json_num_or(json_get(floors, "vring_rr_p50_ns"), "split", 0) > 0);
		assert_true(json_num_or(json_get(floors, "vring_rr_p50_ns"), "packed", 0) > 0);
		const struct json *vs = json_get(floors, "vring_stream");
		assert_non_null(vs);
		assert_true(vs->type == JSON_ARR && vs->n > 0);
		static const char *const waits[] = {"dev_empty", "drv_full", "packed_dev_empty",
						    "packed_drv_full"};
		for (size_t i = 0; i < vs->n; i++) {
			assert_true(json_num_or(&vs->items[i], "ops_per_s", 0) > 0);
			assert_true(json_num_or(&vs->items[i], "packed_ops_per_s", 0) > 0);
			/* which side waited, as shares of its polls */
			for (size_t k = 0; k < sizeof(waits) / sizeof(waits[0]); k++) {
				double share = json_num_or(&vs->items[i], waits[k], -1);
				assert_true(share >= 0 && share <= 1);
			}
		}
	}
	assert_non_null(json_get(&doc, "goals"));
	const struct json *runs = json_get(&doc, "runs");
	assert_non_null(runs);
	assert_int_equal(runs->type, JSON_ARR);
	assert_true(runs->n >= min_runs);
	bool moved = false, traffic = false;
	static const char *const fields[] = {
		"key", "policy", "workload", "streams", "batch_max", "ops_per_s", "p50_ns", "p99_ns",
		"p999_ns", "worker_cpu_ns_per_op", "driver_cpu_ns_per_op", "kicks_per_op",
		"calls_per_op", "worker_runq_share", "lost", "duplicated", "min", "max"};
	for (size_t i = 0; i < runs->n; i++) {
		const struct json *r = &runs->items[i];
		for (size_t f = 0; f < sizeof(fields) / sizeof(fields[0]); f++)
			if (!json_get(r, fields[f]))
				fail_msg("run %zu has no %s", i, fields[f]);
		const char *key = json_str_or(r, "key", "?");
		if (json_num_or(r, "lost", -1) != 0 || json_num_or(r, "duplicated", -1) != 0 ||
		    json_num_or(r, "corrupted", -1) != 0 || json_num_or(r, "error", -1) != 0)
			fail_msg("%s: lost %.0f duplicated %.0f corrupted %.0f error %.0f", key,
				 json_num_or(r, "lost", -1), json_num_or(r, "duplicated", -1),
				 json_num_or(r, "corrupted", -1), json_num_or(r, "error", -1));
		moved |= json_num_or(json_get(r, "max"), "ops_per_s", 0) > 0;
		traffic |= strcmp(json_str_or(r, "workload", ""), "idle") != 0;
	}
	/* Liveness, not speed: some repeat of some run completed requests inside its window (one
	 * 10 ms window may see none on a machine shared with spinning tests; all of them cannot). */
	if (traffic && !moved)
		fail_msg("no run completed a request");
	json_free(&doc);
}
