/* SPDX-License-Identifier: MIT */
/*
 * vqs-switch: a vhost-user L2 switch. Every thread the library starts inherits a signal mask
 * blocking SIGINT, SIGTERM and SIGUSR1, so only the main thread takes them (sigtimedwait), between
 * rounds of housekeeping.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "switch.h"

/* The scheduler's counters (every worker's and queue's: batch sizes, polls, latency) as one JSON
 * line: what tells where a forwarding rate goes. */
static void print_sched(struct vqs_sched *sched, const char *prefix)
{
	int len = vqs_sched_stats_json(sched, NULL, 0);
	char *buf = len > 0 ? malloc((size_t)len + 1) : NULL;
	if (!buf)
		return;
	vqs_sched_stats_json(sched, buf, (size_t)len + 1);
	printf("%ssched %s\n", prefix, buf);
	free(buf);
}

int main(int argc, char **argv)
{
	struct sw_cli cli;
	int err = sw_cli_parse(&cli, argc, argv);
	if (err)
		return err > 0 ? 0 : 2;
	if (VQS_CHECK_VERSION()) {
		fprintf(stderr, "vqs-switch: libvqsched %s is too old\n", vqs_version_string());
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigset_t sigs;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN); /* a frontend closing mid-reply is an error return, not a death */

	struct vqs_sched *sched;
	err = vqs_sched_create(&sched, &cli.sched);
	if (err) {
		fprintf(stderr, "vqs-switch: scheduler: %s\n", strerror(-err));
		return 1;
	}
	cli.sw.sched = sched;
	struct sw_switch *sw;
	err = sw_create(&sw, &cli.sw);
	if (err) {
		fprintf(stderr, "vqs-switch: ports: %s\n", strerror(-err));
		vqs_sched_destroy(sched);
		return 1;
	}
	printf("vqs-switch: ready ports=%u policy=%s workers=%u placement=%s\n", sw->nports,
	       vqs_policy_name(cli.sched.policy), vqs_sched_nworkers(sched),
	       vqs_placement_name(cli.sched.placement));

	unsigned wait_ms = 0;
	for (;;) {
		struct timespec ts = { .tv_sec = wait_ms / 1000, .tv_nsec = (long)(wait_ms % 1000) * 1000000 };
		int sig = sigtimedwait(&sigs, NULL, &ts);
		if (sig == SIGINT || sig == SIGTERM)
			break;
		if (sig == SIGUSR1) {
			sw_print(sw, stdout, "vqs-switch: ");
			print_sched(sched, "vqs-switch: ");
		}
		wait_ms = sw_housekeep(sw, vqs_now_ns());
	}
	sw_stop(sw);
	sw_print(sw, stdout, "vqs-switch: final ");
	sw_destroy(sw);
	vqs_sched_destroy(sched);
	return 0;
}
