/* SPDX-License-Identifier: MIT */
/*
 * Mann-Whitney / Hodges-Lehmann on log values. Working on logs makes the shift a ratio, which
 * is what "10% slower" means for both throughput and latency, and ranks make one stalled repeat
 * count as one sample beyond the others, not as a spread that hides everything.
 *
 * With d the m*n differences w(new_j) - w(base_i) sorted (w = log for smaller-is-better
 * figures, -log for throughput), the estimate is their median and the interval runs from the
 * C-th smallest to the C-th largest, C = floor(mn/2 - z * sd(U)) with z the standard normal
 * quantile at 1 - alpha and sd(U) the rank sum's standard deviation corrected for ties (normal
 * approximation to the U distribution; Hollander & Wolfe, ch. 4.3). C < 1 means the samples
 * cannot reach that level at all. Paired, the differences are those of each pair, the estimate
 * the median of their m = n(n+1)/2 pairwise means (Walsh averages) and C = floor(m/2 - z *
 * sqrt(n(n+1)(2n+1)/24)), the signed-rank statistic's (Hollander & Wolfe, ch. 3.2).
 */
#include "stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* The standard normal quantile, by bisection on erfc (exact enough for a confidence level). */
static double normal_quantile(double p)
{
	double lo = -10, hi = 10;
	for (int i = 0; i < 100; i++) {
		double mid = (lo + hi) / 2;
		if (0.5 * erfc(-mid / sqrt(2)) < p)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* w of the kept samples into out; returns how many. */
static unsigned transform(const double *v, unsigned n, int better, double *out)
{
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++) {
		if (better < 0 && !(v[i] > 0))
			continue;
		double x = v[i] > 1e-9 ? v[i] : 1e-9; /* a throughput of 0: slower than anything */
		out[k++] = better > 0 ? -log(x) : log(x);
	}
	return k;
}

/* The sum of t^3 - t over groups of t tied values among all samples (the tie correction). */
static double tie_term(const double *x, unsigned m, const double *y, unsigned n)
{
	unsigned all = m + n;
	double *v = malloc(all * sizeof(*v)), sum = 0;
	if (!v)
		return 0;
	for (unsigned i = 0; i < m; i++)
		v[i] = x[i];
	for (unsigned i = 0; i < n; i++)
		v[m + i] = y[i];
	qsort(v, all, sizeof(*v), cmp_double);
	for (unsigned i = 0, j; i < all; i = j) {
		for (j = i + 1; j < all && v[j] == v[i]; j++)
			;
		double t = j - i;
		sum += t * t * t - t;
	}
	free(v);
	return sum;
}

int stats_shift(const double *base, unsigned m, const double *cur, unsigned n, int better,
		double alpha, struct shift *out)
{
	*out = (struct shift){0};
	double *x = malloc((m + 1) * sizeof(*x)), *y = malloc((n + 1) * sizeof(*y)), *d = NULL;
	int rc = -ENOMEM;
	if (!x || !y)
		goto out;
	m = transform(base, m, better, x);
	n = transform(cur, n, better, y);
	out->m = m;
	out->n = n;
	out->lo = -INFINITY;
	out->hi = INFINITY;
	rc = 0;
	if (!m || !n)
		goto out;
	size_t mn = (size_t)m * n;
	rc = -ENOMEM;
	if (!(d = malloc(mn * sizeof(*d))))
		goto out;
	for (unsigned i = 0; i < m; i++)
		for (unsigned j = 0; j < n; j++)
			d[(size_t)i * n + j] = y[j] - x[i];
	qsort(d, mn, sizeof(*d), cmp_double);
	double med = mn % 2 ? d[mn / 2] : (d[mn / 2 - 1] + d[mn / 2]) / 2;
	out->est = exp(med) - 1;
	double nn = (double)m + n;
	double var = (double)mn / 12 * ((nn + 1) - tie_term(x, m, y, n) / (nn * (nn - 1)));
	double c = floor((double)mn / 2 - normal_quantile(1 - alpha) * sqrt(var > 0 ? var : 0));
	out->decidable = c >= 1;
	if (out->decidable) {
		size_t k = (size_t)c;
		out->lo = exp(d[k - 1]) - 1;
		out->hi = exp(d[mn - k]) - 1;
	}
	rc = 0;
out:
	free(x);
	free(y);
	free(d);
	return rc;
}

int stats_shift_paired(const double *base, const double *cur, unsigned n, int better, double alpha,
		       struct shift *out)
{
	*out = (struct shift){.lo = -INFINITY, .hi = INFINITY};
	double *d = malloc((n + 1) * sizeof(*d)), *w = NULL;
	int rc = -ENOMEM;
	if (!d)
		goto out;
	unsigned k = 0;
	for (unsigned i = 0; i < n; i++) {
		double x, y;
		if (transform(&base[i], 1, better, &x) && transform(&cur[i], 1, better, &y))
			d[k++] = y - x;
	}
	out->m = out->n = k;
	rc = 0;
	if (!k)
		goto out;
	size_t nw = (size_t)k * (k + 1) / 2, at = 0;
	rc = -ENOMEM;
	if (!(w = malloc(nw * sizeof(*w))))
		goto out;
	for (unsigned i = 0; i < k; i++)
		for (unsigned j = i; j < k; j++)
			w[at++] = (d[i] + d[j]) / 2;
	qsort(w, nw, sizeof(*w), cmp_double);
	out->est = exp(nw % 2 ? w[nw / 2] : (w[nw / 2 - 1] + w[nw / 2]) / 2) - 1;
	double sd = sqrt((double)k * (k + 1) * (2.0 * k + 1) / 24);
	double c = floor((double)nw / 2 - normal_quantile(1 - alpha) * sd);
	out->decidable = c >= 1;
	if (out->decidable) {
		out->lo = exp(w[(size_t)c - 1]) - 1;
		out->hi = exp(w[nw - (size_t)c]) - 1;
	}
	rc = 0;
out:
	free(d);
	free(w);
	return rc;
}
