/* SPDX-License-Identifier: MIT */
#ifndef VQS_BENCH_COMPARE_H
#define VQS_BENCH_COMPARE_H
/* `vqs-bench compare ...` (argv after "compare"). Returns the process exit status. */
int compare_main(int argc, char **argv);
#endif
