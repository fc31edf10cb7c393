/* SPDX-License-Identifier: MIT */
/*
 * Stand-in for libFuzzer's driver in builds without it: runs LLVMFuzzerTestOneInput once on every
 * file named on the command line, or in a directory named there. Exit status 0 when every input
 * ran (a crash or sanitizer report fails the process, as it would under libFuzzer).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		return -1;
	}
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 4096;
			uint8_t *n = realloc(buf, cap);
			if (!n) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = n;
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, len);
	free(buf);
	return 0;
}

static int run_path(const char *path, unsigned *count)
{
	struct stat st;
	if (stat(path, &st) < 0) {
		perror(path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		(*count)++;
		return run_file(path);
	}
	DIR *d = opendir(path);
	if (!d) {
		perror(path);
		return -1;
	}
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d)) && rc == 0) {
		if (de->d_name[0] == '.')
			continue;
		char child[4096];
		snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
		rc = run_path(child, count);
	}
	closedir(d);
	return rc;
}

int main(int argc, char **argv)
{
	unsigned count = 0;
	for (int i = 1; i < argc; i++)
		if (run_path(argv[i], &count))
			return 1;
	printf("replayed %u inputs\n", count);
	/* An empty corpus would make this test pass without testing anything. */
	return count ? 0 : 1;
}
