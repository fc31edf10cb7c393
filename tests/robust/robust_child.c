/* SPDX-License-Identifier: MIT */
/*
 * The robustness device as its own process, for the crash tests:
 *   robust_child PATH KILL_AT AFTER
 * serves PATH (server mode) and, with KILL_AT pop|fill|flush, kills itself with SIGKILL at that
 * point of the completion path once AFTER requests were handled.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "robust_dev.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: %s PATH pop|fill|flush|never AFTER\n", argv[0]);
		return 2;
	}
	static struct robust_dev dev;
	robust_dev_init(&dev, 1);
	dev.kill_at = robust_kill_parse(argv[2]);
	dev.kill_after = strtoull(argv[3], NULL, 10);
	struct robust_backend rb;
	int r = robust_backend_start(&rb, &dev, argv[1], 1000);
	if (r < 0) {
		fprintf(stderr, "robust_child: %d\n", r);
		return 1;
	}
	for (;;)
		pause();
}
