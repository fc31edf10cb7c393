/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench-switch-log: what dirty page logging costs vqs-switch, in delivered Mpps and in the
 * switch's CPU time per frame. DPDK's virtio-user never turns logging on, so the traffic comes
 * from the library's own vhost-user frontend, as a live migration's QEMU would drive it: two
 * frontends on two ports of a vqs-switch process started here, port 0 sending 64-byte frames
 * (12-byte virtio-net header first) to port 1's address as fast as the switch takes them, port 1
 * receiving them into 2 KiB buffers; both drivers poll (callbacks disabled, a busy guest).
 * LOG_ALL and LOG_SHMFD are negotiated on both ports and a log region is set on both; logging
 * is then switched off and on live (vqs_vu_frontend_set_log: SET_LOG_BASE, SET_FEATURES,
 * SET_VRING_ADDR with VRING_F_LOG), as QEMU does at a migration's start and end.
 *
 * Per policy, one switch process; `--pairs` pairs of windows, one with logging off and one on,
 * the order alternating from pair to pair (off-on, on-off, ...) so that a drift of the machine's
 * load falls on both alike, each window after its own warm-up. Each window prints its Mpps
 * (frames port 1 received over the window's wall time), the switch's CPU time per frame (its
 * process CPU clock) and the pages marked in each port's bitmap; the policy's summary gives the
 * medians with min-max, and the median of the pairs' on/off ratios with their quartiles. A
 * window (and a warm-up) lasts its time and until a frame arrived; 10 s without one fails, as
 * does a window with logging on that marked no page of either port (port 1: the buffers written
 * and its used ring; port 0: its used ring) or one with logging off that marked any: exit 1.
 *
 * Usage: vqs-bench-switch-log [--switch PATH] [--policies LIST] [--pairs N] [--window-ms MS]
 *                             [--warmup-ms MS] [--switch-cpu N] [--driver-cpu N]
 * --switch defaults to ../examples/vqs-switch/vqs-switch next to this binary's directory (the
 * build tree); the switch runs with --workers 1 pinned to --switch-cpu (default: the second
 * CPU this process may use), the drivers on --driver-cpu (default: the first); -1: unpinned.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <vqsched/vqsched.h>

#define HDR 12u  /* virtio_net_hdr with num_buffers (MRG_RXBUF) */
#define LEN 64u  /* Ethernet frame */
#define RXBUF 2048u
#define RXQ 0
#define TXQ 1
#define MAX_PAIRS 1000

static const uint8_t MAC_A[6] = { 2, 0, 0, 0, 0, 0xa }, MAC_B[6] = { 2, 0, 0, 0, 0, 0xb };

struct opts {
	char switch_path[PATH_MAX];
	char policies[128];
	unsigned pairs, window_ms, warmup_ms, queue_size;
	int switch_cpu, driver_cpu;
};

/* One port: a frontend and its two driver queues. */
struct port {
	struct vqs_vu_frontend *f;
	struct vqs_drv_vq *rx, *tx;
	struct vqs_gmem *g;
	uint8_t *log_copy; /* a bitmap's size, for vqs_vu_frontend_log_sync */
	size_t log_len;
};

struct window {
	double mpps, ns_per_frame;
	uint64_t marks[2];
};

static int usage(void)
{
	fprintf(stderr, "usage: vqs-bench-switch-log [--switch PATH] [--policies LIST] [--pairs N]"
			" [--window-ms MS] [--warmup-ms MS] [--switch-cpu N] [--driver-cpu N]\n");
	return 2;
}

static int parse(struct opts *o, int argc, char **argv)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	snprintf(o->switch_path, sizeof(o->switch_path), "%s/../examples/vqs-switch/vqs-switch",
		 dirname(self));
	snprintf(o->policies, sizeof(o->policies), "dedicated,pool,poll,adaptive");
	o->pairs = 10;
	o->window_ms = 1000;
	o->warmup_ms = 500;
	o->queue_size = 256;
	o->switch_cpu = o->driver_cpu = -2; /* -2: chosen from the affinity mask */
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return usage();
		i++;
		if (!strcmp(a, "--switch"))
			snprintf(o->switch_path, sizeof(o->switch_path), "%s", v);
		else if (!strcmp(a, "--policies"))
			snprintf(o->policies, sizeof(o->policies), "%s", v);
		else if (!strcmp(a, "--pairs"))
			o->pairs = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--window-ms"))
			o->window_ms = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--warmup-ms"))
			o->warmup_ms = (unsigned)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--switch-cpu"))
			o->switch_cpu = atoi(v);
		else if (!strcmp(a, "--driver-cpu"))
			o->driver_cpu = atoi(v);
		else
			return usage();
	}
	if (!o->pairs || o->pairs > MAX_PAIRS || !o->window_ms)
		return usage();
	if (o->switch_cpu == -2 || o->driver_cpu == -2) {
		cpu_set_t set;
		int cpus[2] = { -1, -1 }, found = 0;
		if (!sched_getaffinity(0, sizeof(set), &set))
			for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
				if (CPU_ISSET(c, &set))
					cpus[found++] = c;
		if (found < 2) /* one CPU: pinning both to it would only add a constraint */
			cpus[0] = cpus[1] = -1;
		if (o->driver_cpu == -2)
			o->driver_cpu = cpus[0];
		if (o->switch_cpu == -2)
			o->switch_cpu = cpus[1];
	}
	return 0;
}

static void pin(int cpu)
{
	if (cpu < 0)
		return;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("vqs-bench-switch-log: sched_setaffinity");
}

static pid_t start_switch(const struct opts *o, const char *dir, const char *policy)
{
	char p0[PATH_MAX], p1[PATH_MAX], log[PATH_MAX];
	snprintf(p0, sizeof(p0), "%s/p0", dir);
	snprintf(p1, sizeof(p1), "%s/p1", dir);
	snprintf(log, sizeof(log), "%s/switch.log", dir);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		pin(o->switch_cpu);
		execl(o->switch_path, o->switch_path, "--socket", p0, "--socket", p1, "--policy",
		      policy, "--workers", "1", (char *)NULL);
		_exit(127);
	}
	return pid;
}

/* SIGINT, as the switch's own scripts stop it; SIGKILL after 10 s. */
static void stop_switch(pid_t pid)
{
	kill(pid, SIGINT);
	for (int i = 0; i < 1000; i++) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return;
		usleep(10000);
	}
	fprintf(stderr, "vqs-bench-switch-log: switch %d did not stop on SIGINT\n", (int)pid);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

static uint64_t cpu_ns(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void kick(struct port *p, struct vqs_drv_vq *dq, unsigned q)
{
	uint64_t one = 1;
	if (vqs_drv_kick_prepare(dq) && write(vqs_vu_frontend_kick_fd(p->f, q), &one, 8) != 8)
		perror("vqs-bench-switch-log: kick");
}

static void frame(uint8_t *p, const uint8_t *dst, const uint8_t *src)
{
	memset(p, 0, HDR + LEN);
	memcpy(p + HDR, dst, 6);
	memcpy(p + HDR + 6, src, 6);
	p[HDR + 12] = 0x88; /* local experimental ethertype */
	p[HDR + 13] = 0xb5;
}

static int port_open(struct port *p, const char *path, unsigned qsize)
{
	struct vqs_vu_frontend_opts fo;
	vqs_vu_frontend_opts_init(&fo);
	fo.path = path;
	fo.num_queues = 2;
	fo.queue_size = (uint16_t)qsize;
	fo.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) | VQS_BIT(15) /* MRG_RXBUF */;
	fo.mem_size = 16u << 20;
	fo.timeout_ms = 10000; /* the switch creates its sockets after it starts */
	int rc = vqs_vu_frontend_create(&p->f, &fo);
	if (!rc)
		rc = vqs_vu_frontend_connect(p->f);
	if (!rc)
		rc = vqs_vu_frontend_setup(p->f);
	if (rc) {
		fprintf(stderr, "vqs-bench-switch-log: %s: %s\n", path, strerror(-rc));
		return rc;
	}
	p->g = vqs_vu_frontend_gmem(p->f);
	p->rx = vqs_vu_frontend_vq(p->f, RXQ);
	p->tx = vqs_vu_frontend_vq(p->f, TXQ);
	vqs_drv_disable_cb(p->rx);
	vqs_drv_disable_cb(p->tx);
	return 0;
}

static void port_close(struct port *p)
{
	if (p->f) {
		vqs_vu_frontend_disconnect(p->f, false);
		vqs_vu_frontend_destroy(p->f);
	}
	free(p->log_copy);
	memset(p, 0, sizeof(*p));
}

/* Logging on or off on a port; once the frontend has a bitmap (the first time on), its copy is
 * sized. */
static int port_log(struct port *p, bool on)
{
	int rc = vqs_vu_frontend_set_log(p->f, on);
	if (rc) {
		fprintf(stderr, "vqs-bench-switch-log: set_log(%d): %s\n", on, strerror(-rc));
		return rc;
	}
	if (!p->log_copy && (p->log_len = vqs_vu_frontend_log_sync(p->f, NULL, 0)) &&
	    !(p->log_copy = malloc(p->log_len)))
		return -ENOMEM;
	return 0;
}

/* Pages marked since the last call (and clears them, as a migration's sync does). */
static uint64_t port_marks(struct port *p)
{
	if (!p->log_copy)
		return 0;
	vqs_vu_frontend_log_sync(p->f, p->log_copy, p->log_len);
	uint64_t n = 0;
	for (size_t i = 0; i < p->log_len; i++)
		n += (uint64_t)__builtin_popcount(p->log_copy[i]);
	return n;
}

/* The traffic: port 0's transmit ring kept full of frames to B, port 1's receive ring full of
 * empty buffers; until `until` (vqs_now_ns). Returns the frames port 1 received. */
static uint64_t traffic(struct port *src, struct port *dst, uint64_t until)
{
	uint64_t got = 0;
	uint32_t len;
	void *tok;
	for (unsigned spin = 0;; spin++) {
		while ((tok = vqs_drv_get_used(src->tx, &len))) {
			struct vqs_drv_buf b = { .gpa = (uint64_t)(uintptr_t)tok, .len = HDR + LEN };
			vqs_drv_add(src->tx, &b, 1, 0, tok, false);
		}
		kick(src, src->tx, TXQ);
		while ((tok = vqs_drv_get_used(dst->rx, &len))) {
			got++;
			struct vqs_drv_buf b = { .gpa = (uint64_t)(uintptr_t)tok, .len = RXBUF };
			vqs_drv_add(dst->rx, &b, 0, 1, tok, false);
		}
		kick(dst, dst->rx, RXQ);
		if (!(spin & 63) && vqs_now_ns() >= until)
			return got;
	}
}

/* Fill the rings: port 1 first sends one frame from B to A so that the switch learns B's port
 * (every later frame to B is then switched, not flooded; port 0 gets one buffer to receive it);
 * port 0's transmit ring and port 1's receive ring get their buffers, each reused as it comes
 * back. */
static int fill(struct port *src, struct port *dst, unsigned qsize)
{
	uint64_t learn = vqs_gmem_alloc(dst->g, HDR + LEN, 64);
	if (!learn)
		return -ENOMEM;
	frame(vqs_gmem_host(dst->g, learn, HDR + LEN), MAC_A, MAC_B);
	struct vqs_drv_buf lb = { .gpa = learn, .len = HDR + LEN };
	if (vqs_drv_add(dst->tx, &lb, 1, 0, (void *)(uintptr_t)learn, false))
		return -ENOSPC;
	kick(dst, dst->tx, TXQ);
	uint64_t back = vqs_gmem_alloc(src->g, RXBUF, 64); /* where the learning frame lands */
	struct vqs_drv_buf bb = { .gpa = back, .len = RXBUF };
	if (!back || vqs_drv_add(src->rx, &bb, 0, 1, (void *)(uintptr_t)back, false))
		return -ENOMEM;
	kick(src, src->rx, RXQ);
	for (unsigned i = 0; i < qsize; i++) {
		uint64_t t = vqs_gmem_alloc(src->g, HDR + LEN, 64);
		uint64_t r = vqs_gmem_alloc(dst->g, RXBUF, 64);
		if (!t || !r)
			return -ENOMEM;
		frame(vqs_gmem_host(src->g, t, HDR + LEN), MAC_B, MAC_A);
		struct vqs_drv_buf tb = { .gpa = t, .len = HDR + LEN }, rb = { .gpa = r, .len = RXBUF };
		if (vqs_drv_add(src->tx, &tb, 1, 0, (void *)(uintptr_t)t, false) ||
		    vqs_drv_add(dst->rx, &rb, 0, 1, (void *)(uintptr_t)r, false))
			return -ENOSPC;
	}
	/* The learning frame must be switched before the first frame to B. */
	for (int i = 0; i < 1000; i++) {
		uint32_t len;
		if (vqs_drv_get_used(dst->tx, &len)) {
			kick(src, src->tx, TXQ);
			kick(dst, dst->rx, RXQ);
			return 0;
		}
		usleep(1000);
	}
	fprintf(stderr, "vqs-bench-switch-log: the switch did not take port 1's first frame\n");
	return -ETIMEDOUT;
}

/* Traffic for at least ms and until a frame arrived: on a loaded machine the switch can go
 * unscheduled for a short window's whole length, which is no stall of its own; 10 s without a
 * frame is. Returns the frames received, 0 after such a stall. */
static uint64_t run_for(struct port p[2], unsigned ms, const char *what)
{
	uint64_t start = vqs_now_ns(), got = 0;
	while (!got || vqs_now_ns() - start < ms * 1000000ull) {
		if (vqs_now_ns() - start > 10000000000ull) {
			fprintf(stderr, "vqs-bench-switch-log: no frame in 10 s (%s)\n", what);
			return 0;
		}
		got += traffic(&p[0], &p[1], start + ms * 1000000ull);
	}
	return got;
}

static int window(struct port p[2], clockid_t sw, bool log, const struct opts *o,
		  struct window *w)
{
	for (int i = 0; i < 2; i++)
		if (port_log(&p[i], log))
			return -1;
	/* Switching restarts the rings (SET_VRING_ADDR): the warm-up lasts until frames flow again. */
	if (!run_for(p, o->warmup_ms, log ? "warm-up, logging on" : "warm-up, logging off"))
		return -1;
	/* Marks of batches served before the switch are the warm-up's. */
	port_marks(&p[0]);
	port_marks(&p[1]);
	uint64_t t0 = vqs_now_ns(), c0 = cpu_ns(sw);
	uint64_t got = run_for(p, o->window_ms, log ? "logging on" : "logging off");
	uint64_t t1 = vqs_now_ns(), c1 = cpu_ns(sw);
	if (!got)
		return -1;
	w->marks[0] = port_marks(&p[0]);
	w->marks[1] = port_marks(&p[1]);
	w->mpps = (double)got * 1e3 / (double)(t1 - t0);
	w->ns_per_frame = (double)(c1 - c0) / (double)got;
	if (log ? !w->marks[0] || !w->marks[1] : w->marks[0] || w->marks[1]) {
		fprintf(stderr, "vqs-bench-switch-log: logging %s, pages marked: port 0 %llu, "
				"port 1 %llu\n", log ? "on" : "off",
			(unsigned long long)w->marks[0], (unsigned long long)w->marks[1]);
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Sorts v; its quantile q (nearest rank). */
static double quantile(double *v, unsigned n, double q)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[(unsigned)(q * (n - 1) + 0.5)];
}

/* Mpps and ns/frame, off then on: median [min-max]; then the pairs' on/off ratios: median
 * (quartiles, min-max). */
static void summary(const char *policy, unsigned n, struct window (*w)[2])
{
	double v[MAX_PAIRS];
	printf("switch-log: policy=%s pairs=%u", policy, n);
	for (int k = 0; k < 2; k++)
		for (int on = 0; on < 2; on++) {
			for (unsigned i = 0; i < n; i++)
				v[i] = k ? w[i][on].ns_per_frame : w[i][on].mpps;
			double med = quantile(v, n, 0.5);
			printf(k ? " ns_per_frame_%s=%.0f[%.0f-%.0f]" : " Mpps_%s=%.3f[%.3f-%.3f]",
			       on ? "on" : "off", med, v[0], v[n - 1]);
		}
	for (int k = 0; k < 2; k++) {
		for (unsigned i = 0; i < n; i++)
			v[i] = k ? w[i][1].ns_per_frame / w[i][0].ns_per_frame
				 : w[i][1].mpps / w[i][0].mpps;
		double med = quantile(v, n, 0.5), q1 = v[(unsigned)(0.25 * (n - 1) + 0.5)],
		       q3 = v[(unsigned)(0.75 * (n - 1) + 0.5)];
		printf(" %s_on/off=%.3f(q1-q3 %.3f-%.3f, min-max %.3f-%.3f)",
		       k ? "ns_per_frame" : "Mpps", med, q1, q3, v[0], v[n - 1]);
	}
	printf("\n");
}

static int run_policy(const struct opts *o, const char *policy)
{
	char dir[] = "/tmp/vqs-switch-log-XXXXXX", path[PATH_MAX];
	if (!mkdtemp(dir)) {
		perror("vqs-bench-switch-log: mkdtemp");
		return -1;
	}
	pid_t pid = start_switch(o, dir, policy);
	struct port p[2] = { 0 };
	static struct window w[MAX_PAIRS][2];
	clockid_t sw;
	int rc = pid > 0 ? clock_getcpuclockid(pid, &sw) : -1;
	for (int i = 0; rc == 0 && i < 2; i++) {
		snprintf(path, sizeof(path), "%s/p%d", dir, i);
		rc = port_open(&p[i], path, o->queue_size);
	}
	if (rc == 0)
		rc = fill(&p[0], &p[1], o->queue_size);
	for (unsigned i = 0; rc == 0 && i < o->pairs; i++)
		for (int k = 0; rc == 0 && k < 2; k++) {
			bool on = (i & 1) ? !k : k; /* off-on, then on-off, ... */
			rc = window(p, sw, on, o, &w[i][on]);
			if (rc == 0)
				printf("switch-log: policy=%s pair=%u log=%s Mpps=%.3f ns_per_frame=%.0f "
				       "marked_pages=%llu,%llu\n", policy, i + 1, on ? "on" : "off",
				       w[i][on].mpps, w[i][on].ns_per_frame,
				       (unsigned long long)w[i][on].marks[0],
				       (unsigned long long)w[i][on].marks[1]);
			fflush(stdout);
		}
	if (rc == 0)
		summary(policy, o->pairs, w);
	port_close(&p[0]);
	port_close(&p[1]);
	if (pid > 0)
		stop_switch(pid);
	snprintf(path, sizeof(path), "%s/switch.log", dir);
	FILE *log = fopen(path, "r");
	if (rc && log) { /* the switch's own account of what went wrong */
		char line[512];
		while (fgets(line, sizeof(line), log))
			fputs(line, stderr);
	}
	if (log)
		fclose(log);
	unlink(path);
	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/p%d", dir, i);
		unlink(path);
	}
	rmdir(dir);
	return rc ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	if (parse(&o, argc, argv))
		return 2;
	if (access(o.switch_path, X_OK)) {
		fprintf(stderr, "vqs-bench-switch-log: %s: not executable (--switch)\n", o.switch_path);
		return 2;
	}
	pin(o.driver_cpu);
	printf("switch-log: switch=%s switch_cpu=%d driver_cpu=%d pairs=%u window_ms=%u "
	       "warmup_ms=%u queue_size=%u frame=%u+%u bytes\n", o.switch_path, o.switch_cpu,
	       o.driver_cpu, o.pairs, o.window_ms, o.warmup_ms, o.queue_size, HDR, LEN);
	int failed = 0;
	char list[sizeof(o.policies)], *save = NULL;
	snprintf(list, sizeof(list), "%s", o.policies);
	for (char *pol = strtok_r(list, ",", &save); pol; pol = strtok_r(NULL, ",", &save)) {
		enum vqs_policy check;
		if (vqs_policy_parse(pol, &check)) {
			fprintf(stderr, "vqs-bench-switch-log: unknown policy %s\n", pol);
			return 2;
		}
		if (run_policy(&o, pol)) {
			fprintf(stderr, "vqs-bench-switch-log: policy %s failed\n", pol);
			failed = 1;
		}
	}
	return failed;
}
