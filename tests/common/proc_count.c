/* SPDX-License-Identifier: MIT */
#include "proc_count.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static unsigned count_dir(const char *path)
{
	DIR *d = opendir(path);
	unsigned n = 0;
	if (!d)
		return 0;
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

unsigned vqs_test_count_fds(void) { return count_dir("/proc/self/fd") - 1; /* opendir's own */ }

unsigned vqs_test_count_threads(void)
{
	/* two reads 2 ms apart that agree; bounded at about a second */
	unsigned n = count_dir("/proc/self/task");
	for (int i = 0; i < 500; i++) {
		usleep(2000);
		unsigned again = count_dir("/proc/self/task");
		if (again == n)
			break;
		n = again;
	}
	return n;
}

unsigned vqs_test_count_maps(bool memfd_only)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned n = 0;
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += !memfd_only || strstr(line, "/memfd:") != NULL;
	fclose(f);
	return n;
}
