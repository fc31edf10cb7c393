/* SPDX-License-Identifier: MIT */
/* vqs-switch's command line. */
#ifndef VQS_SWITCH_CLI_H
#define VQS_SWITCH_CLI_H

#include <vqsched/vqsched.h>

#include "switch.h"

struct sw_cli {
	const char *paths[SW_MAX_PORTS];
	struct sw_opts sw;      /* nports/paths/client/packed/mrg/ages; sched left NULL */
	struct vqs_sched_opts sched;
};

/* Parse argv. 0, 1 when --help was printed, -EINVAL after printing why to stderr. */
int sw_cli_parse(struct sw_cli *c, int argc, char **argv);
/* "0-3,6" into a cpu set. 0 or -EINVAL. */
int sw_cpulist_parse(const char *s, cpu_set_t *set);

#endif
