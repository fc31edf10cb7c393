/* SPDX-License-Identifier: MIT */
/*
 * The performance goals, each decided from the figures of this run (ratios to floors
 * measured in this run). A goal whose runs are not in the preset is reported "n/a", never guessed.
 */
#include <stdio.h>
#include <string.h>

#include "bench.h"

static bool plain(const struct result *r)
{
	const struct point *p = &r->pt;
	return r->repeats && !p->shared_cpu && !p->driver_block && p->handler_ns == 0 &&
	       p->exit_ns == 0 && p->touch == TOUCH_NONE && p->poll_timeout_us == 0;
}

static const struct result *find(const struct report *rep, enum workload w, enum vqs_policy pol,
				 unsigned streams, unsigned batch, uint64_t rate, bool packed)
{
	for (unsigned i = 0; i < rep->nresults; i++) {
		const struct result *r = &rep->results[i];
		if (plain(r) && r->pt.packed == packed && r->pt.workload == w && r->pt.policy == pol &&
		    r->pt.streams == streams &&
		    (batch == 0 || r->pt.batch_max == batch) && r->pt.rate == rate &&
		    (w != WL_RR || r->pt.outstanding == 1))
			return r;
	}
	return NULL;
}

static struct goal *add(struct report *rep, const char *name, const char *rule)
{
	struct goal *g = &rep->goals[rep->ngoals++];
	g->name = name;
	g->rule = rule;
	g->status = -1;
	snprintf(g->detail, sizeof(g->detail), "not measured by this preset");
	return g;
}

static void goal_stream_floor(struct report *rep)
{
	struct goal *g = add(rep, "poll-stream-vs-ring",
			     "busy-poll stream, null handler >= 80% of the minimal ring at the same batch");
	size_t off = 0;
	for (unsigned i = 0; i < rep->nresults; i++) {
		const struct result *r = &rep->results[i];
		if (!plain(r) || r->pt.workload != WL_STREAM || r->pt.policy != VQS_POLICY_POLL ||
		    r->pt.streams != 1 || r->pt.rate || !r->floor_name)
			continue;
		bool ok = r->floor_ratio >= 0.80;
		g->status = g->status == -1 ? ok : (g->status && ok);
		/* and, for split rings, how far the ring format alone gets without the scheduler */
		double alone = r->pt.packed ? 0
			: rep->floors.vring_stream_ops_per_s[floors_batch_index(&rep->floors,
										r->pt.batch_max)];
		char ref[48] = "";
		if (alone > 0)
			snprintf(ref, sizeof(ref), " (split rings alone: %.0f%%)",
				 100 * alone / r->floor_value);
		off += (size_t)snprintf(g->detail + off, off < sizeof(g->detail) ? sizeof(g->detail) - off : 0,
					"%sbatch %u: %.0f ops/s = %.0f%% of %.0f%s", off ? "; " : "",
					r->pt.batch_max, r->med[FIG_OPS], r->floor_ratio * 100,
					r->floor_value, ref);
		if (off >= sizeof(g->detail))
			break;
	}
}

/* Busy-poll rr against the minimal ring's request/response, on one ring layout. */
static const struct result *goal_poll_rr(struct report *rep, bool packed)
{
	struct goal *g = add(rep, packed ? "poll-rr-vs-ring-packed" : "poll-rr-vs-ring",
			     packed ? "as poll-rr-vs-ring, on packed rings"
				    : "busy-poll rr p50 <= 1.25x the minimal ring request/response p50");
	const struct result *poll = find(rep, WL_RR, VQS_POLICY_POLL, 1, 64, 0, packed);
	if (!poll)
		poll = find(rep, WL_RR, VQS_POLICY_POLL, 1, 0, 0, packed);
	if (poll && rep->floors.ring_rr_p50_ns > 0) {
		double x = poll->med[FIG_P50] / rep->floors.ring_rr_p50_ns;
		g->status = x <= 1.25;
		snprintf(g->detail, sizeof(g->detail), "poll p50 %.0f ns / ring %.0f ns = %.2fx",
			 poll->med[FIG_P50], rep->floors.ring_rr_p50_ns, x);
	}
	return poll;
}

static void goal_rr(struct report *rep)
{
	const struct result *poll = goal_poll_rr(rep, false);
	goal_poll_rr(rep, true);
	struct goal *a = add(rep, "adaptive-rr-vs-poll",
			     "adaptive rr p50 <= 1.5x busy-poll's, and an idle queue < 1% of a CPU");
	const struct result *ad =
		poll ? find(rep, WL_RR, VQS_POLICY_ADAPTIVE, 1, poll->pt.batch_max, 0, false) : NULL;
	const struct result *idle = NULL;
	for (unsigned i = 0; i < rep->nresults && !idle; i++) {
		const struct result *r = &rep->results[i];
		if (r->repeats && r->pt.workload == WL_IDLE && r->pt.policy == VQS_POLICY_ADAPTIVE &&
		    !r->pt.shared_cpu)
			idle = r;
	}
	if (ad && idle) {
		double x = ad->med[FIG_P50] / poll->med[FIG_P50], cpu = idle->med[FIG_WUTIL];
		a->status = x <= 1.5 && cpu < 0.01 * idle->pt.streams;
		snprintf(a->detail, sizeof(a->detail),
			 "adaptive p50 %.0f ns / poll %.0f ns = %.2fx; idle: %.2f%% of a CPU for %u queue(s)",
			 ad->med[FIG_P50], poll->med[FIG_P50], x, cpu * 100, idle->pt.streams);
	}
}

static void goal_sweep(struct report *rep)
{
	struct goal *g = add(rep, "adaptive-sweep",
			     "adaptive within 5% of the best fixed policy (ops/s and p99) at every sweep "
			     "load; light-load CPU/op <= dedicated's and pool's");
	static const enum vqs_policy fixed[] = {VQS_POLICY_DEDICATED, VQS_POLICY_POOL, VQS_POLICY_POLL};
	unsigned levels = 0, bad_ops = 0, bad_p99 = 0;
	double worst_ops = 0, worst_p99 = 0;
	const struct result *light = NULL;
	for (unsigned i = 0; i < rep->nresults; i++) {
		const struct result *ad = &rep->results[i];
		if (!plain(ad) || ad->pt.workload != WL_SWEEP || ad->pt.policy != VQS_POLICY_ADAPTIVE)
			continue;
		double best_ops = 0, best_p99 = 0;
		for (unsigned k = 0; k < 3; k++) {
			const struct result *f = find(rep, WL_SWEEP, fixed[k], ad->pt.streams,
						      ad->pt.batch_max, ad->pt.rate, ad->pt.packed);
			if (!f)
				continue;
			if (f->med[FIG_OPS] > best_ops)
				best_ops = f->med[FIG_OPS];
			if (f->med[FIG_P99] > 0 && (best_p99 == 0 || f->med[FIG_P99] < best_p99))
				best_p99 = f->med[FIG_P99];
		}
		if (best_ops <= 0 || best_p99 <= 0)
			continue;
		levels++;
		double ops_short = 1 - ad->med[FIG_OPS] / best_ops, p99_over = ad->med[FIG_P99] / best_p99 - 1;
		bad_ops += ops_short > 0.05;
		bad_p99 += p99_over > 0.05;
		if (ops_short > worst_ops)
			worst_ops = ops_short;
		if (p99_over > worst_p99)
			worst_p99 = p99_over;
		if (ad->pt.rate && (!light || ad->pt.rate < light->pt.rate))
			light = ad;
	}
	if (!levels || !light)
		return;
	const struct result *ded = find(rep, WL_SWEEP, VQS_POLICY_DEDICATED, light->pt.streams,
					light->pt.batch_max, light->pt.rate, light->pt.packed);
	const struct result *pool = find(rep, WL_SWEEP, VQS_POLICY_POOL, light->pt.streams,
					 light->pt.batch_max, light->pt.rate, light->pt.packed);
	double cpu_ref = 0;
	if (ded)
		cpu_ref = ded->med[FIG_WCPU];
	if (pool && (cpu_ref == 0 || pool->med[FIG_WCPU] < cpu_ref))
		cpu_ref = pool->med[FIG_WCPU];
	bool cpu_ok = cpu_ref > 0 && light->med[FIG_WCPU] <= cpu_ref;
	g->status = !bad_ops && !bad_p99 && cpu_ok;
	snprintf(g->detail, sizeof(g->detail),
		 "%u loads: ops/s short by >5%% at %u (worst %.0f%%), p99 over by >5%% at %u (worst "
		 "%.0f%%); at %llu ops/s CPU/op %.0f ns vs %.0f ns",
		 levels, bad_ops, worst_ops * 100, bad_p99, worst_p99 * 100,
		 (unsigned long long)light->pt.rate, light->med[FIG_WCPU], cpu_ref);
}

static void goal_elapsed(struct report *rep)
{
	struct goal *g = add(rep, "run-time", "the default preset finishes in under 120 s");
	if (strcmp(rep->preset, "default") || rep->quick)
		return;
	g->status = rep->elapsed_s < 120;
	snprintf(g->detail, sizeof(g->detail), "vqs-bench ran %.1f s (build time not included)",
		 rep->elapsed_s);
}

void goals_evaluate(struct report *rep)
{
	rep->ngoals = 0;
	goal_stream_floor(rep);
	goal_rr(rep);
	goal_sweep(rep);
	goal_elapsed(rep);
}
