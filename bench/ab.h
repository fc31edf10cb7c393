/* SPDX-License-Identifier: MIT */
#ifndef VQS_BENCH_AB_H
#define VQS_BENCH_AB_H
/* `vqs-bench ab ...` (argv after "ab"). Returns the process exit status. */
int ab_main(int argc, char **argv);
#endif
