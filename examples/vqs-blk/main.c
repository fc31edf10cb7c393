/* SPDX-License-Identifier: MIT */
/*
 * vqs-blk: a vhost-user-blk backend on a file, served by the vqsched scheduler.
 *
 *   vqs-blk --socket PATH --file DISK [--size BYTES] [--client] [--queues N] [--packed]
 *           [--policy dedicated|pool|poll|adaptive] [--workers N] [--io-threads N]
 *           [--latency-us N] [--blk-size N] [--serial ID] [--counters FILE]
 *           [--test-log-unmarked]
 *
 * Requests run on the scheduler's workers, or with --io-threads on that many I/O threads, which
 * complete them out of order; --latency-us makes each I/O thread request wait 0..N us first, as
 * on a disk whose service time varies (completions then overtake each other further).
 *
 * Runs until SIGINT or SIGTERM, then stops every queue (requests in progress complete), closes
 * the connection and the file, and exits 0. Requests are tracked in the frontend's inflight
 * region, so a vqs-blk killed any other way can be restarted on the same socket and file: the
 * frontend reconnects and the requests the dead process had in flight are run again.
 * --counters keeps the device's counters (struct blk_counters: requests taken, done, taken per
 * queue) in FILE, reset at start, so that whoever killed the process can tell what it was doing.
 * --test-log-unmarked (tests only: it breaks live migration) accepts dirty logging but marks no
 * page (vqs_vu_backend_opts.test_log_unmarked), so that a migration test can show its checks fail
 * when the pages the device wrote are not logged.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "blk_dev.h"

struct args {
	const char *socket, *file, *serial, *counters;
	uint64_t size;
	bool client, packed, log_unmarked;
	unsigned queues, workers, io_threads, latency_us, blk_size;
	enum vqs_policy policy;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: vqs-blk --socket PATH --file DISK [--size BYTES] [--client] [--queues N]\n"
		   "               [--packed] [--policy dedicated|pool|poll|adaptive] [--workers N]\n"
		   "               [--io-threads N] [--latency-us N] [--blk-size N] [--serial ID]\n"
		   "               [--counters FILE] [--test-log-unmarked]\n");
}

static bool parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v > max || s[0] == '-')
		return false;
	*out = v;
	return true;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' }, { "file", required_argument, NULL, 'f' },
		{ "size", required_argument, NULL, 'S' },   { "client", no_argument, NULL, 'c' },
		{ "queues", required_argument, NULL, 'q' }, { "packed", no_argument, NULL, 'P' },
		{ "policy", required_argument, NULL, 'p' }, { "workers", required_argument, NULL, 'w' },
		{ "blk-size", required_argument, NULL, 'b' }, { "serial", required_argument, NULL, 'i' },
		{ "io-threads", required_argument, NULL, 't' },
		{ "latency-us", required_argument, NULL, 'L' },
		{ "counters", required_argument, NULL, 'C' },
		{ "test-log-unmarked", no_argument, NULL, 'U' },
		{ "help", no_argument, NULL, 'h' },         { 0 }
	};
	*a = (struct args){ .queues = 1, .workers = 1, .blk_size = 512, .policy = VQS_POLICY_POOL,
			    .serial = "vqs-blk" };
	int c;
	unsigned long long v;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 's': a->socket = optarg; break;
		case 'f': a->file = optarg; break;
		case 'i': a->serial = optarg; break;
		case 'C': a->counters = optarg; break;
		case 'c': a->client = true; break;
		case 'P': a->packed = true; break;
		case 'U': a->log_unmarked = true; break;
		case 'S':
			if (!parse_uint(optarg, INT64_MAX, &v))
				return -EINVAL;
			a->size = v;
			break;
		case 'q':
			if (!parse_uint(optarg, 256, &v) || !v)
				return -EINVAL;
			a->queues = (unsigned)v;
			break;
		case 'w':
			if (!parse_uint(optarg, 64, &v) || !v)
				return -EINVAL;
			a->workers = (unsigned)v;
			break;
		case 't':
			if (!parse_uint(optarg, 64, &v))
				return -EINVAL;
			a->io_threads = (unsigned)v;
			break;
		case 'L':
			if (!parse_uint(optarg, 1000000, &v))
				return -EINVAL;
			a->latency_us = (unsigned)v;
			break;
		case 'b':
			if (!parse_uint(optarg, 1u << 16, &v))
				return -EINVAL;
			a->blk_size = (unsigned)v;
			break;
		case 'p':
			if (vqs_policy_parse(optarg, &a->policy) < 0)
				return -EINVAL;
			break;
		case 'h': usage(stdout); exit(0);
		default: return -EINVAL;
		}
	}
	return a->socket && a->file && optind == argc ? 0 : -EINVAL;
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "vqs-blk: %s: %s\n", what, strerror(-err));
	return 1;
}

/* The counters in a shared mapping of path, zeroed: the page cache keeps them after a SIGKILL. */
static struct blk_counters *map_counters(const char *path, int *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	void *p = MAP_FAILED;
	if (fd >= 0 && ftruncate(fd, sizeof(struct blk_counters)) == 0)
		p = mmap(NULL, sizeof(struct blk_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	*err = p == MAP_FAILED ? -errno : 0;
	if (fd >= 0)
		close(fd);
	return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
	struct args a;
	if (parse_args(argc, argv, &a) < 0) {
		usage(stderr);
		return 2;
	}
	if (VQS_CHECK_VERSION() < 0)
		return fail("library version", -ENOTSUP);
	/* Blocked before any thread exists, so every thread inherits the mask and the signals
	 * wait for sigwait below. A peer closing its socket must not kill us either. */
	sigset_t stop;
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &stop, NULL);
	signal(SIGPIPE, SIG_IGN);

	static struct blk_dev dev;
	struct blk_counters *counters = NULL;
	int err;
	if (a.counters && !(counters = map_counters(a.counters, &err)))
		return fail(a.counters, err);
	struct blk_disk disk;
	if ((err = blk_disk_open(&disk, a.file, a.size)) < 0)
		return fail(a.file, err);
	struct blk_dev_opts bo = { .num_queues = (uint16_t)a.queues, .blk_size = a.blk_size,
				   .serial = a.serial, .packed = a.packed, .counters = counters };
	if ((err = blk_dev_init(&dev, &bo, &disk)) < 0) {
		blk_disk_close(&disk);
		return fail("device", err);
	}

	static struct blk_io io;
	if (a.io_threads && (err = blk_io_start(&io, &dev, a.io_threads, a.latency_us)) < 0) {
		blk_disk_close(&dev.disk);
		return fail("I/O threads", err);
	}
	dev.io = a.io_threads ? &io : NULL;

	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = a.policy;
	so.nworkers = a.workers;
	struct vqs_sched *sched;
	if ((err = vqs_sched_create(&sched, &so)) < 0) {
		if (dev.io)
			blk_io_stop(dev.io);
		blk_disk_close(&dev.disk);
		return fail("scheduler", err);
	}
	struct vqs_vu_backend_opts vo;
	vqs_vu_backend_opts_init(&vo);
	vo.path = a.socket;
	vo.client = a.client;
	vo.sched = sched;
	vo.ops = &dev.ops;
	vo.opaque = &dev;
	vo.test_log_unmarked = a.log_unmarked;
	struct vqs_vu_backend *backend;
	if ((err = vqs_vu_backend_create(&backend, &vo)) < 0) {
		vqs_sched_destroy(sched);
		if (dev.io)
			blk_io_stop(dev.io);
		blk_disk_close(&dev.disk);
		return fail(a.socket, err);
	}
	fprintf(stderr, "vqs-blk: %s, %llu sectors, %u queue(s), %s x%u, %s %s\n", a.file,
		(unsigned long long)dev.disk.sectors, a.queues, vqs_policy_name(a.policy),
		a.workers, a.client ? "connecting to" : "listening on", a.socket);

	int sig;
	sigwait(&stop, &sig);
	/* The backend's queues wait for their requests, so the I/O threads stop after it. */
	vqs_vu_backend_destroy(backend);
	vqs_sched_destroy(sched);
	if (dev.io)
		blk_io_stop(dev.io);
	blk_disk_close(&dev.disk);
	fprintf(stderr, "vqs-blk: %s: stopped after %llu requests\n", strsignal(sig),
		(unsigned long long)atomic_load(&dev.counters->done));
	return 0;
}
