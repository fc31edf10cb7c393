/* SPDX-License-Identifier: MIT */
/* Running vqs-bench from tests and checking its JSON reports. */
#ifndef VQS_TEST_BENCH_RUN_H
#define VQS_TEST_BENCH_RUN_H

#include <stdbool.h>

/* Run vqs-bench with args (NULL-terminated), stdout to out_path (NULL: /dev/null), stderr
 * inherited. Returns its exit status, or -1 when it could not run or died of a signal. */
int bench_run(const char *out_path, const char *const *args);
/* The same for another of the bench's programs. */
int bench_run_bin(const char *bin, const char *out_path, const char *const *args);
/* A fresh directory for one test's files; path of `name` inside it (static buffers). */
const char *bench_tmpdir(void);
const char *bench_path(const char *name);
/* The report must be well-formed JSON (python3's json module, when python3 is there, and our
 * reader), have machine/floors/runs/goals, at least min_runs runs, every run with the documented
 * figures, zero lost/duplicated/corrupted and no error, and some run that completed requests
 * (unless it is all idle). Fails the test otherwise. */
void bench_check_report(const char *json_path, unsigned min_runs);
/* Group teardown: remove the directory and everything in it. */
int bench_cleanup(void **state);
/* True when file exists and is not empty. */
bool bench_file_nonempty(const char *path);

#endif
