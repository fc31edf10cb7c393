/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE 1
#include "two_cpus.h"

#include <sched.h>

bool vqs_test_two_cpus(int *a, int *b)
{
	cpu_set_t mine;
	*a = *b = -1;
	if (sched_getaffinity(0, sizeof(mine), &mine))
		return false;
	for (int i = 0; i < CPU_SETSIZE && *b < 0; i++)
		if (CPU_ISSET(i, &mine)) {
			if (*a < 0)
				*a = i;
			else
				*b = i;
		}
	return *b >= 0;
}
