/* SPDX-License-Identifier: MIT */
/*
 * Run both kernel-regression reproductions of the ksim model and print their tables and verdicts.
 *
 *   ksim-repro [--quick] [--bare-metal] [--repeats N] [--only 2017|2023] [--cost k=v,...]
 *              [--window N]
 *
 * --quick       short cells (a few seconds in all)
 * --bare-metal  model a host with cheap wake-ups (spinning waits, 3 us per wake-up) instead of
 *               this machine's real ones (same as --cost wait=spin,wake=3000)
 * --cost        override model costs (see vqs_ksim_costs_parse), after --bare-metal's
 * --window      seed-2017 total window / seed-2023 TCP_STREAM window, in packets
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vqsched/vqsched.h>

static void usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [--quick] [--bare-metal] [--repeats N] [--only 2017|2023] "
		"[--cost k=v,...] [--window N]\n",
		prog);
}

int main(int argc, char **argv)
{
	bool quick = false, bare = false;
	unsigned repeats = 1;
	const char *only = NULL, *cost = NULL;
	uint32_t window = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			quick = true;
		} else if (!strcmp(argv[i], "--bare-metal")) {
			bare = true;
		} else if (!strcmp(argv[i], "--repeats") && i + 1 < argc) {
			repeats = (unsigned)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--cost") && i + 1 < argc) {
			cost = argv[++i];
		} else if (!strcmp(argv[i], "--window") && i + 1 < argc) {
			window = (uint32_t)strtoul(argv[++i], NULL, 10);
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else {
			usage(argv[0]);
			return 2;
		}
	}
	if (VQS_CHECK_VERSION()) {
		fprintf(stderr, "libvqsched too old for this program\n");
		return 1;
	}
	/* Each preset starts from its own costs; --bare-metal and --cost change them. */
	int status = 0;
	if (!only || !strcmp(only, "2017")) {
		struct vqs_ksim_seed2017_opts o;
		vqs_ksim_seed2017_opts_init(&o, quick);
		o.repeats = repeats;
		if (window)
			o.total_window = window;
		if (bare)
			vqs_ksim_costs_set_host(&o.costs, VQS_KSIM_HOST_BARE_METAL);
		if (cost && vqs_ksim_costs_parse(&o.costs, cost)) {
			fprintf(stderr, "bad --cost '%s'\n", cost);
			return 2;
		}
		struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
		int rc = vqs_ksim_seed2017_run(&o, &r);
		if (rc) {
			fprintf(stderr, "seed-2017: %s\n", strerror(-rc));
			status = 1;
		} else {
			vqs_ksim_seed2017_print(stdout, &o, &r);
		}
		printf("\n");
	}
	if (!only || !strcmp(only, "2023")) {
		struct vqs_ksim_seed2023_opts o;
		vqs_ksim_seed2023_opts_init(&o, quick);
		o.repeats = repeats;
		if (window)
			o.stream_window = window;
		if (bare)
			vqs_ksim_costs_set_host(&o.costs, VQS_KSIM_HOST_BARE_METAL);
		if (cost && vqs_ksim_costs_parse(&o.costs, cost)) {
			fprintf(stderr, "bad --cost '%s'\n", cost);
			return 2;
		}
		struct vqs_ksim_seed2023_result r = {.size = sizeof(r)};
		int rc = vqs_ksim_seed2023_run(&o, &r);
		if (rc) {
			fprintf(stderr, "seed-2023: %s\n", strerror(-rc));
			status = 1;
		} else {
			vqs_ksim_seed2023_print(stdout, &o, &r);
		}
	}
	return status;
}
