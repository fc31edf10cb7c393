/* SPDX-License-Identifier: MIT */
#include "ksim/report.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

void vqs_ksim_costs_init(struct vqs_ksim_costs *c, enum vqs_ksim_host host)
{
	memset(c, 0, sizeof(*c));
	c->size = sizeof(*c);
	c->send_pkt_ns = 1000;
	c->recv_pkt_ns = 2000;
	c->exit_ns = 1500;
	c->ring_lock_ns = 200;
	c->host_pkt_ns = 300;
	c->pkt_bytes = 1500;
	c->loss_recovery_us = 500;
	c->rto_us = 200000;
	c->leak_gap_us = 500000;
	vqs_ksim_costs_set_host(c, host);
}

void vqs_ksim_costs_set_host(struct vqs_ksim_costs *c, enum vqs_ksim_host host)
{
	c->wait = host == VQS_KSIM_HOST_BARE_METAL ? VQS_KSIM_WAIT_SPIN : VQS_KSIM_WAIT_BLOCK;
	c->wake_ns = host == VQS_KSIM_HOST_BARE_METAL ? 3000 : 0;
}

static int cmp_rate(const void *a, const void *b)
{
	const struct vqs_ksim_cell *x = a, *y = b;
	return (x->rate > y->rate) - (x->rate < y->rate);
}

void ksim_table_run(ksim_cell_fn fn, const void *opts, unsigned rows, unsigned cols,
		    unsigned repeats, struct vqs_ksim_cell *cells)
{
	if (repeats < 1)
		repeats = 1;
	size_t ncells = (size_t)rows * cols;
	struct vqs_ksim_cell *runs = calloc(ncells * repeats, sizeof(*runs));
	double *runs_rate = calloc(ncells * repeats, sizeof(*runs_rate)); /* -1: the run failed */
	double *runs_cpus = calloc(ncells * repeats, sizeof(*runs_cpus));
	unsigned *ok = calloc(ncells, sizeof(*ok));
	memset(cells, 0, ncells * sizeof(*cells));
	if (!runs || !runs_rate || !runs_cpus || !ok) {
		for (size_t i = 0; i < ncells; i++)
			cells[i].err = -ENOMEM;
		goto out;
	}
	/* Repeats outermost: a burst of load from elsewhere then hits every column alike. */
	for (unsigned rep = 0; rep < repeats; rep++)
		for (size_t i = 0; i < ncells; i++) {
			struct vqs_ksim_cell c = {0};
			c.err = fn(opts, (unsigned)(i / cols), (unsigned)(i % cols), &c);
			runs_rate[i * repeats + rep] = c.err ? -1 : c.rate;
			runs_cpus[i * repeats + rep] = c.cpus_used;
			if (c.err)
				cells[i].err = c.err;
			else
				runs[i * repeats + ok[i]++] = c;
		}
	for (size_t i = 0; i < ncells; i++) {
		if (!ok[i])
			continue;
		qsort(&runs[i * repeats], ok[i], sizeof(*runs), cmp_rate);
		int err = cells[i].err;
		cells[i] = runs[i * repeats + ok[i] / 2];
		cells[i].err = err;
		cells[i].repeats = ok[i];
	}
	for (size_t i = 0; i < ncells; i++)
		for (unsigned k = 0, rep = 0; rep < repeats; rep++)
			if (runs_rate[i * repeats + rep] >= 0) {
				cells[i].run_cpus[k] = runs_cpus[i * repeats + rep];
				cells[i].run_rate[k++] = runs_rate[i * repeats + rep];
			}
out:
	free(ok);
	free(runs_cpus);
	free(runs_rate);
	free(runs);
}

void ksim_sleep_ms(uint32_t ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

void ksim_snap_take(struct ksim_world *w, uint64_t transactions, struct ksim_snap *s)
{
	memset(s, 0, sizeof(*s));
	s->t = vqs_now_ns();
	struct timespec ts;
	if (!clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts))
		s->cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (unsigned i = 0; i < w->nflows; i++)
		s->delivered += atomic_load_explicit(&w->flows[i].delivered, memory_order_relaxed);
	s->delivered += transactions;
	s->drops_batch = atomic_load_explicit(&w->drops_batch, memory_order_relaxed);
	s->drops_ring = atomic_load_explicit(&w->drops_ring, memory_order_relaxed);
	s->kicks = atomic_load_explicit(&w->kicks, memory_order_relaxed);
}

void ksim_snap_cell(const struct ksim_world *w, const struct ksim_snap *a,
		    const struct ksim_snap *b, bool rr, struct vqs_ksim_cell *out)
{
	out->elapsed_ns = b->t - a->t;
	out->delivered = b->delivered - a->delivered;
	out->drops_batch = b->drops_batch - a->drops_batch;
	out->drops_ring = b->drops_ring - a->drops_ring;
	out->kicks = b->kicks - a->kicks;
	double secs = (double)out->elapsed_ns / 1e9;
	out->cpus_used = (double)(b->cpu - a->cpu) / (double)out->elapsed_ns;
	out->rate = rr ? (double)out->delivered / secs
		       : (double)out->delivered * w->costs.pkt_bytes * 8.0 / secs / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void cell_add(struct vqs_ksim_cell *c, const struct ksim_snap *a, const struct ksim_snap *b,
		     double *cpu_ns)
{
	c->delivered += b->delivered - a->delivered;
	c->drops_batch += b->drops_batch - a->drops_batch;
	c->drops_ring += b->drops_ring - a->drops_ring;
	c->kicks += b->kicks - a->kicks;
	c->elapsed_ns += b->t - a->t;
	*cpu_ns += (double)(b->cpu - a->cpu);
}

#define SLICES_MAX 1024 /* per side of an interleaved window */

int ksim_interleaved_window(struct ksim_world *w, const struct ksim_interleave *il,
			    struct vqs_ksim_cell side[2], double ratio[2])
{
	/* per[s][i]: side s's time per delivery in its slice i; rounds[m][j]: round j's ratio
	 * by wall time (m 0) and by CPU time (m 1) */
	double *per = malloc(2 * SLICES_MAX * sizeof(*per)),
	       *rounds = malloc(2 * (SLICES_MAX / 2) * sizeof(*rounds)), cpu_ns[2] = {0, 0};
	if (!per || !rounds) {
		free(per);
		free(rounds);
		return -ENOMEM;
	}
	int rc = 0;
	unsigned n[2] = {0, 0}, nrounds = 0;
	/* the current A B B A round's wall time, CPU time and deliveries per side */
	uint64_t round_t[2] = {0, 0}, round_c[2] = {0, 0}, round_d[2] = {0, 0};
	uint64_t t0 = vqs_now_ns(), t_end = t0 + il->cell_ms * 1000000ull,
		 t_max = t0 + 20ull * il->cell_ms * 1000000ull;
	for (unsigned k = 0;; k++) {
		unsigned s = (k + 1) / 2 % 2;
		if ((rc = il->set_side(il->opaque, s)))
			break;
		struct ksim_snap a, b;
		uint64_t tr = il->transactions ? atomic_load(il->transactions) : 0;
		ksim_snap_take(w, tr, &a);
		uint64_t from = a.delivered, lost = a.drops_batch + a.drops_ring;
		uint64_t t_cut = il->slice_max_ms ? a.t + il->slice_max_ms * 1000000ull : UINT64_MAX;
		do {
			ksim_sleep_ms(1);
			tr = il->transactions ? atomic_load(il->transactions) : 0;
			ksim_snap_take(w, tr, &b);
			if (il->loss_restarts && b.drops_batch + b.drops_ring != lost) {
				lost = b.drops_batch + b.drops_ring;
				from = b.delivered;
				t_cut = UINT64_MAX;
			}
		} while (b.delivered - from < il->slice && b.t < t_max && b.t < t_cut);
		cell_add(&side[s], &a, &b, &cpu_ns[s]);
		if (b.delivered > a.delivered && n[s] < SLICES_MAX)
			per[s * SLICES_MAX + n[s]++] =
				(double)(b.t - a.t) / (double)(b.delivered - a.delivered);
		round_t[s] += b.t - a.t;
		round_c[s] += b.cpu - a.cpu;
		round_d[s] += b.delivered - a.delivered;
		if (k % 4 == 3) {
			/* Side 0 over side 1 in this round: its slices sit symmetrically about the
			 * round's middle, so a share of the CPUs that other programs change
			 * steadily across it moves both sides alike. */
			if (round_d[0] && round_d[1] && round_t[0] && round_t[1] && round_c[0] &&
			    round_c[1]) {
				rounds[nrounds] = ((double)round_d[0] / (double)round_t[0]) /
						  ((double)round_d[1] / (double)round_t[1]);
				rounds[SLICES_MAX / 2 + nrounds++] =
					((double)round_d[0] / (double)round_c[0]) /
					((double)round_d[1] / (double)round_c[1]);
			}
			memset(round_t, 0, sizeof(round_t));
			memset(round_c, 0, sizeof(round_c));
			memset(round_d, 0, sizeof(round_d));
		}
		if (b.t >= t_max || (k % 4 == 3 && b.t >= t_end && n[0] >= 2 && n[1] >= 2) ||
		    n[s] == SLICES_MAX)
			break;
	}
	for (unsigned s = 0; s < 2; s++) {
		struct vqs_ksim_cell *c = &side[s];
		c->cpus_used = c->elapsed_ns ? cpu_ns[s] / (double)c->elapsed_ns : 0;
		if (!n[s]) {
			c->rate = 0;
			continue;
		}
		qsort(&per[s * SLICES_MAX], n[s], sizeof(*per), cmp_double);
		double ns = per[s * SLICES_MAX + n[s] / 2]; /* per delivery */
		c->rate = il->rr ? 1e9 / ns : (double)w->costs.pkt_bytes * 8.0 * 1e3 / ns;
	}
	for (unsigned m = 0; ratio && m < 2; m++)
		ratio[m] = ksim_median(&rounds[m * (SLICES_MAX / 2)], nrounds);
	free(rounds);
	free(per);
	return rc;
}

void vqs_ksim_costs_print(FILE *f, const struct vqs_ksim_costs *c)
{
	fprintf(f,
		"model costs: send %u ns/pkt, recv %u ns/pkt, exit %u ns/kick, wake +%u ns (%s "
		"waits), tun lock %u ns/round, vhost %u ns/pkt, %u B payload, busyloop %u us, "
		"loss recovery %u us, rto %u us, halt poll %u ns, 4.13 leak gap %u us\n",
		c->send_pkt_ns, c->recv_pkt_ns, c->exit_ns, c->wake_ns,
		c->wait == VQS_KSIM_WAIT_SPIN ? "spinning" : "blocking", c->ring_lock_ns,
		c->host_pkt_ns, c->pkt_bytes, c->busyloop_us, c->loss_recovery_us, c->rto_us, c->halt_poll_ns,
		c->leak_gap_us);
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, 0);
	if (!errno && nice > 0)
		fprintf(f, "warning: this thread runs at nice %d; kthread-mode workers reset theirs "
			   "to 0 where the process may (root), outrank the modelled vCPUs, and the "
			   "figures are not an un-niced run's\n",
			nice);
}

struct cost_key {
	const char *name;
	size_t off;
	uint32_t max;
};

static const struct cost_key cost_keys[] = {
	{"send", offsetof(struct vqs_ksim_costs, send_pkt_ns), 100000000},
	{"recv", offsetof(struct vqs_ksim_costs, recv_pkt_ns), 100000000},
	{"exit", offsetof(struct vqs_ksim_costs, exit_ns), 100000000},
	{"wake", offsetof(struct vqs_ksim_costs, wake_ns), 100000000},
	{"lock", offsetof(struct vqs_ksim_costs, ring_lock_ns), 100000000},
	{"vhost", offsetof(struct vqs_ksim_costs, host_pkt_ns), 100000000},
	{"bytes", offsetof(struct vqs_ksim_costs, pkt_bytes), 9000},
	{"busyloop", offsetof(struct vqs_ksim_costs, busyloop_us), 1000000},
	{"recovery", offsetof(struct vqs_ksim_costs, loss_recovery_us), 10000000},
	{"rto", offsetof(struct vqs_ksim_costs, rto_us), 10000000},
	{"haltpoll", offsetof(struct vqs_ksim_costs, halt_poll_ns), 100000000},
	{"leak", offsetof(struct vqs_ksim_costs, leak_gap_us), 100000000},
};

static int cost_set(struct vqs_ksim_costs *c, const char *key, size_t klen, const char *val)
{
	if (klen == 4 && !strncmp(key, "wait", 4)) {
		if (!strncmp(val, "block", 5))
			c->wait = VQS_KSIM_WAIT_BLOCK;
		else if (!strncmp(val, "spin", 4))
			c->wait = VQS_KSIM_WAIT_SPIN;
		else
			return -EINVAL;
		return 0;
	}
	for (size_t i = 0; i < sizeof(cost_keys) / sizeof(cost_keys[0]); i++) {
		if (strlen(cost_keys[i].name) != klen || strncmp(cost_keys[i].name, key, klen))
			continue;
		char *end;
		errno = 0;
		unsigned long v = strtoul(val, &end, 10);
		if (errno || end == val || (*end && *end != ',') || v > cost_keys[i].max)
			return -EINVAL;
		uint32_t u = (uint32_t)v;
		memcpy((char *)c + cost_keys[i].off, &u, sizeof(u));
		return 0;
	}
	return -EINVAL;
}

int vqs_ksim_costs_parse(struct vqs_ksim_costs *c, const char *spec)
{
	if (!c || !spec)
		return -EINVAL;
	for (const char *p = spec; *p;) {
		const char *eq = strchr(p, '=');
		const char *comma = strchr(p, ',');
		if (!eq || (comma && comma < eq))
			return -EINVAL;
		int rc = cost_set(c, p, (size_t)(eq - p), eq + 1);
		if (rc)
			return rc;
		if (!comma)
			break;
		p = comma + 1;
	}
	return c->pkt_bytes ? 0 : -EINVAL;
}

double ksim_ratio(double a, double b) { return b > 0 ? a / b : 0; }

double ksim_median(double *v, unsigned n)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double ksim_paired_ratio(const struct vqs_ksim_cell *a, const struct vqs_ksim_cell *const *b,
			 unsigned nb)
{
	double r[VQS_KSIM_MAX_REPEATS];
	unsigned n = a->repeats;
	for (unsigned k = 0; k < nb; k++)
		n = b[k]->repeats < n ? b[k]->repeats : n;
	for (unsigned i = 0; i < n; i++) {
		double best = 0;
		for (unsigned k = 0; k < nb; k++)
			best = b[k]->run_rate[i] > best ? b[k]->run_rate[i] : best;
		r[i] = ksim_ratio(a->run_rate[i], best);
	}
	return ksim_median(r, n);
}

double ksim_judged_ratio(const struct vqs_ksim_cell *a, const struct vqs_ksim_cell *b,
			 double min_cpus_a, double min_cpus_b, unsigned *judged)
{
	double r[VQS_KSIM_MAX_REPEATS];
	unsigned n = a->repeats < b->repeats ? a->repeats : b->repeats, k = 0;
	for (unsigned i = 0; i < n; i++)
		if (a->run_cpus[i] >= min_cpus_a && b->run_cpus[i] >= min_cpus_b)
			r[k++] = ksim_ratio(a->run_rate[i], b->run_rate[i]);
	*judged = k;
	return ksim_median(r, k);
}

void ksim_cpus_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;
	if (len)
		buf[0] = 0;
	for (int c = 0; c < CPU_SETSIZE && off < len; c++) {
		if (!CPU_ISSET(c, set))
			continue;
		int e = c;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		off += (size_t)snprintf(buf + off, len - off, e > c ? "%s%d-%d" : "%s%d",
					off ? "," : "", c, e);
		c = e;
	}
}

double ksim_cell_ratio(const struct vqs_ksim_cell *a, const struct vqs_ksim_cell *b)
{
	return ksim_paired_ratio(a, &b, 1);
}

int ksim_cpus_usable(void)
{
	cpu_set_t mine;
	return sched_getaffinity(0, sizeof(mine), &mine) ? 1 : CPU_COUNT(&mine);
}
