/* SPDX-License-Identifier: MIT */
/* Names, keys and repeat folding of points. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const char *const wl_names[WL__COUNT] = {"stream", "rr", "sweep", "idle"};
static const char *const touch_names[] = {"none", "read", "copy"};
static const char *const transport_names[] = {"direct", "vhost-user", "vhost-user-log"};

const char *const fig_names[FIG__COUNT] = {
	"ops_per_s", "p50_ns", "p99_ns", "p999_ns", "worker_cpu_ns_per_op", "driver_cpu_ns_per_op",
	"kicks_per_op", "calls_per_op", "batch_mean", "worker_cpu_util", "driver_cpu_util",
	"rearms_per_op", "worker_wakeups_per_op", "latency_samples", "ns_per_op",
	"worker_runq_share"};
const int fig_better[FIG__COUNT] = {+1, -1, -1, -1, -1, -1, 0, 0, 0, 0, 0, 0, 0, 0, -1, 0};

const char *workload_name(enum workload w) { return w < WL__COUNT ? wl_names[w] : "?"; }

int workload_parse(const char *s, enum workload *out)
{
	for (unsigned i = 0; i < WL__COUNT; i++)
		if (!strcmp(s, wl_names[i])) {
			*out = (enum workload)i;
			return 0;
		}
	return -EINVAL;
}

const char *touch_name(enum touch t) { return t <= TOUCH_COPY ? touch_names[t] : "?"; }

int touch_parse(const char *s, enum touch *out)
{
	for (unsigned i = 0; i <= TOUCH_COPY; i++)
		if (!strcmp(s, touch_names[i])) {
			*out = (enum touch)i;
			return 0;
		}
	return -EINVAL;
}

const char *transport_name(enum transport t)
{
	return t <= TRANSPORT_VHOST_USER_LOG ? transport_names[t] : "?";
}

int transport_parse(const char *s, enum transport *out)
{
	for (unsigned i = 0; i <= TRANSPORT_VHOST_USER_LOG; i++)
		if (!strcmp(s, transport_names[i])) {
			*out = (enum transport)i;
			return 0;
		}
	return -EINVAL;
}

/* Everything that makes two points the same experiment; compare matches runs on it. The direct
 * transport and adaptive's knob at its default add nothing, so keys of reports from before
 * either existed still match. */
void point_key(const struct point *pt, char *buf, size_t len)
{
	char spin[24] = "";
	if (pt->spin_pct != BENCH_SPIN_PCT_DEFAULT)
		snprintf(spin, sizeof(spin), "/spin%u", pt->spin_pct);
	snprintf(buf, len,
		 "%s/%s/%s%s/s%u/b%u/tx%u/r%u/k%u/p%u%s/d%u/w%u/pt%u/rate%llu/h%u/x%u/%s%s%s%s%s%s",
		 workload_name(pt->workload), vqs_policy_name(pt->policy),
		 vqs_placement_name(pt->placement), pt->shared_cpu ? "-shared" : "", pt->streams,
		 pt->batch_max, pt->tx_batch, pt->ring, pt->outstanding, pt->payload,
		 pt->touch ? touch_name(pt->touch) : "", pt->drivers, pt->workers,
		 pt->poll_timeout_us, (unsigned long long)pt->rate, pt->handler_ns, pt->exit_ns,
		 pt->packed ? "packed" : "split", pt->event_idx ? "" : "/noevidx",
		 pt->driver_block ? "/block" : "",
		 pt->transport == TRANSPORT_DIRECT ? "" : "/",
		 pt->transport == TRANSPORT_DIRECT ? "" : transport_name(pt->transport), spin);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double median_sorted(double *v, unsigned k)
{
	qsort(v, k, sizeof(v[0]), cmp_double);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

enum beside point_beside(const struct point *pt)
{
	if (pt->transport != TRANSPORT_DIRECT || pt->shared_cpu || pt->driver_block ||
	    pt->handler_ns || pt->exit_ns || pt->touch != TOUCH_NONE || pt->poll_timeout_us ||
	    pt->inject_pct || pt->interleave || pt->policy != VQS_POLICY_POLL || pt->streams != 1 ||
	    pt->rate)
		return BESIDE_NONE;
	if (pt->workload == WL_STREAM && (pt->batch_max == 1 || pt->batch_max == 64))
		return BESIDE_RINGS_ALONE;
	return pt->workload == WL_RR ? BESIDE_RING_RR : BESIDE_NONE;
}

struct floor_x trials_spread(const double *fig, unsigned n)
{
	double *v = n ? malloc(n * sizeof(*v)) : NULL;
	unsigned k = 0;
	for (unsigned t = 0; v && t < n; t++)
		if (fig[t] > 0)
			v[k++] = fig[t];
	struct floor_x x = {0, 0, 0};
	if (k) {
		double med = median_sorted(v, k);
		x = (struct floor_x){med, v[0], v[k - 1]};
	}
	free(v);
	return x;
}

struct floor_x trials_ratio(const double *num, const double *den, unsigned n)
{
	double *x = n ? malloc(n * sizeof(*x)) : NULL;
	for (unsigned t = 0; x && t < n; t++)
		x[t] = num[t] > 0 && den[t] > 0 ? num[t] / den[t] : 0;
	struct floor_x r = x ? trials_spread(x, n) : (struct floor_x){0, 0, 0};
	free(x);
	return r;
}

int result_fold(struct result *r, const struct sample *s, unsigned n)
{
	point_key(&r->pt, r->key, sizeof(r->key));
	free(r->samples);
	free(r->info);
	r->nsamples = 0;
	r->samples = malloc(((size_t)n + 1) * FIG__COUNT * sizeof(double));
	r->info = malloc(((size_t)n + 1) * sizeof(*r->info));
	if (!r->samples || !r->info)
		return -ENOMEM;
	r->repeats = 0;
	r->error = 0;
	r->lost = r->duplicated = r->corrupted = 0;
	memset(r->batch_hist, 0, sizeof(r->batch_hist));
	double v[n ? n : 1];
	for (unsigned f = 0; f < FIG__COUNT; f++) {
		unsigned k = 0;
		for (unsigned i = 0; i < n; i++)
			if (!s[i].error) {
				r->samples[(size_t)k * FIG__COUNT + f] = s[i].fig[f];
				v[k++] = s[i].fig[f];
			}
		if (!k) {
			r->med[f] = r->min[f] = r->max[f] = 0;
			continue;
		}
		r->med[f] = median_sorted(v, k);
		r->min[f] = v[0];
		r->max[f] = v[k - 1];
	}
	unsigned k = 0;
	for (unsigned x = 0; x < 3; x++) {
		double *to = x < 2 ? &r->inject_side_ns[x] : &r->inject_ns;
		k = 0;
		for (unsigned i = 0; i < n; i++)
			if (!s[i].error)
				v[k++] = x < 2 ? s[i].inject_side_ns[x] : s[i].inject_ns;
		*to = k ? median_sorted(v, k) : 0;
	}
	for (unsigned i = 0, j = 0; i < n; i++)
		if (!s[i].error)
			v[j++] = s[i].inject_achieved_pct;
	r->inject_achieved_pct = k ? median_sorted(v, k) : 0;
	r->nsamples = k;
	for (unsigned i = 0; i < n; i++) {
		r->lost += s[i].lost; /* a failed repeat's losses count too */
		r->duplicated += s[i].duplicated;
		r->corrupted += s[i].corrupted;
		if (s[i].error) {
			r->error = s[i].error;
			continue;
		}
		if (!r->repeats)
			memcpy(r->worker_cpus, s[i].worker_cpus, sizeof(r->worker_cpus));
		r->info[r->repeats++] = s[i].info;
		for (unsigned b = 0; b < BATCH_BUCKETS; b++)
			r->batch_hist[b] += s[i].batch_hist[b];
	}
	return 0;
}

void results_free(struct result *r, unsigned n)
{
	for (unsigned i = 0; r && i < n; i++) {
		free(r[i].samples);
		free(r[i].info);
	}
	free(r);
}
