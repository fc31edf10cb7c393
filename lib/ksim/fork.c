/* SPDX-License-Identifier: MIT */
#include "ksim/fork.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sysinfo.h>
#include <unistd.h>
#include "util/log.h"

/* Tasks (threads) whose real uid is `uid`, as the kernel's per-user NPROC count sees them. */
static long user_tasks(uid_t uid)
{
	DIR *dir = opendir("/proc");
	if (!dir)
		return -errno;
	long total = 0;
	struct dirent *de;
	while ((de = readdir(dir))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char path[300], line[256];
		snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue; /* the process exited meanwhile */
		long real_uid = -1, threads = 0;
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, "Uid:", 4))
				real_uid = strtol(line + 4, NULL, 10);
			else if (!strncmp(line, "Threads:", 8))
				threads = strtol(line + 8, NULL, 10);
		}
		fclose(f);
		if (real_uid == (long)uid)
			total += threads;
	}
	closedir(dir);
	return total;
}

/* copy_process's RLIMIT_NPROC check, applied whatever the caller's privileges. */
static int nproc_check(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NPROC, &rl))
		return -errno;
	if (rl.rlim_cur == RLIM_INFINITY)
		return 0;
	long n = user_tasks(getuid());
	if (n < 0)
		return (int)n;
	return (rlim_t)n >= rl.rlim_cur ? -EAGAIN : 0;
}

struct kthreadd_req {
	void *(*fn)(void *);
	void *arg;
	pthread_t *th;
	int rc;
};

/* The helper runs with every CPU and default scheduling; what it creates inherits that. */
static void *kthreadd(void *p)
{
	struct kthreadd_req *req = p;
	if (setpriority(PRIO_PROCESS, 0, 0))
		vqs_debug("ksim: kthreadd cannot reset nice: %s", strerror(errno));
	req->rc = -pthread_create(req->th, NULL, req->fn, req->arg);
	return NULL;
}

void ksim_kthread_cpus(cpu_set_t *all)
{
	CPU_ZERO(all);
	int ncpu = get_nprocs_conf();
	for (int i = 0; i < ncpu && i < CPU_SETSIZE; i++)
		CPU_SET(i, all);
}

static int fork_kthread(void *(*fn)(void *), void *arg, pthread_t *th)
{
	cpu_set_t all;
	ksim_kthread_cpus(&all);
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc)
		return -rc;
	struct sched_param sp = {.sched_priority = 0};
	if (!(rc = pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED)) &&
	    !(rc = pthread_attr_setschedpolicy(&attr, SCHED_OTHER)) &&
	    !(rc = pthread_attr_setschedparam(&attr, &sp)))
		rc = pthread_attr_setaffinity_np(&attr, sizeof(all), &all);
	struct kthreadd_req req = {.fn = fn, .arg = arg, .th = th, .rc = 0};
	pthread_t helper;
	if (!rc)
		rc = pthread_create(&helper, &attr, kthreadd, &req);
	pthread_attr_destroy(&attr);
	if (rc)
		return -rc;
	pthread_join(helper, NULL);
	return req.rc;
}

int ksim_fork(enum vqs_ksim_fork mode, void *(*fn)(void *), void *arg, pthread_t *th)
{
	if (mode == VQS_KSIM_FORK_KTHREAD)
		return fork_kthread(fn, arg, th);
	int rc = nproc_check();
	if (rc)
		return rc;
	/* Default attributes: the new thread inherits this thread's CPU mask and scheduling. */
	return -pthread_create(th, NULL, fn, arg);
}
