/* SPDX-License-Identifier: MIT */
#include "opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "presets.h"

enum kind { K_BOOL, K_STR, K_DIM, K_SC, K_SC_ENUM, K_CPUS, K_UINT };

struct flag {
	const char *name, *arg, *help;
	enum kind kind;
	int which; /* dim / scalar index; for K_SC_ENUM the enum parser below */
};

enum { E_TOUCH, E_LAYOUT, E_WAIT, E_TRANSPORT, E_BOOL01 };

static const struct flag flags[] = {
	{"--preset", "NAME", "preset to run (default: default)", K_STR, 0},
	{"--quick", NULL, "short durations, one repeat, quick floors", K_BOOL, 0},
	{"--json", "FILE", "write the report as JSON", K_STR, 1},
	{"--csv", "FILE", "write the runs as CSV", K_STR, 2},
	{"--plot", "DIR", "write PNG charts (gnuplot) into DIR", K_STR, 3},
	{"--repeat", "N", "repeats per point; figures are the median, with min/max", K_UINT, 0},
	{"--no-floors", NULL, "skip measuring the floors (no ratios, goals n/a)", K_BOOL, 1},
	{"--variant", "V", "seed-2017: 4.12|4.13, the RX path whose figures the JSON carries", K_STR, 4},
	{"--worker", "W", "seed-2023: kthread|task, the worker mode whose figures the JSON carries",
	 K_STR, 5},
	{"--bare-metal", NULL, "seed presets: model a host with cheap wake-ups", K_BOOL, 3},
	{"--workloads", "LIST", "stream,rr,sweep,idle", K_DIM, DIM_WORKLOADS},
	{"--policies", "LIST", "dedicated,pool,poll,adaptive", K_DIM, DIM_POLICIES},
	{"--streams", "LIST", "queues per point, e.g. 1,10,50", K_DIM, DIM_STREAMS},
	{"--batch", "LIST", "scheduler batch_max values, e.g. 1,64", K_DIM, DIM_BATCHES},
	{"--placements", "LIST", "pin,inherit,float,auto", K_DIM, DIM_PLACEMENTS},
	{"--rates", "LIST", "offered ops/s over all streams (0 = as fast as possible)", K_DIM, DIM_RATES},
	{"--ring", "N", "queue size (default 256)", K_SC, SC_RING},
	{"--outstanding", "K", "rr: requests in flight per stream (default 1)", K_SC, SC_OUTSTANDING},
	{"--payload", "BYTES", "request buffer size (default 64)", K_SC, SC_PAYLOAD},
	{"--touch", "MODE",
	 "none: null handler; read|copy: touch the payload, echo a sequence number (default none)",
	 K_SC_ENUM, E_TOUCH},
	{"--drivers", "N", "driver (guest) threads (default 1)", K_SC, SC_DRIVERS},
	{"--workers", "N", "scheduler workers for pool/poll/adaptive (default 1)", K_SC, SC_WORKERS},
	{"--poll-timeout-us", "US", "poll policy: idle spin before sleeping, 0 = forever (default 0)",
	 K_SC, SC_POLL_TIMEOUT},
	{"--spin-pct", "PCT", "adaptive: the price of latency, CPU time per unit of latency spared, in % "
	 "(vqs_sched_opts.spin_pct, default 200)", K_SC, SC_SPIN_PCT},
	{"--handler-ns", "NS", "busy time per request in the handler (default 0)", K_SC, SC_HANDLER_NS},
	{"--exit-ns", "NS", "busy time per kick in the driver: simulated guest exit, also the "
	 "adaptive cost model's kick_ns (default 0)", K_SC, SC_EXIT_NS},
	{"--inject-slowdown-pct", "P", "slow every request by P% of its measured time (busy work "
	 "calibrated in the run, achieved slowdown reported), NOT part of the run key: a regression "
	 "of known size for `compare` to catch", K_SC, SC_INJECT_PCT},
	{"--interleave", "N", "alternate slices of N round trips of the queue (N x the requests in "
	 "flight) without and with the injection inside each window (P may be 0): --json gets the "
	 "slices with it, --json-base those without, paired by repeat for `compare`; seed-2023: "
	 "switch the worker between task and kthread mode every N packets or transactions in one "
	 "world per repeat", K_SC, SC_INTERLEAVE},
	{"--json-base", "FILE", "with --interleave: write the slices without the injection as "
	 "JSON", K_STR, 6},
	{"--duration-ms", "MS", "measured time per repeat (default 250, quick 60)", K_SC, SC_DURATION},
	{"--warmup-ms", "MS", "unmeasured time before it (default 60, quick 20)", K_SC, SC_WARMUP},
	{"--tx-batch", "N", "driver: most requests per kick (default: batch_max)", K_SC, SC_TX_BATCH},
	{"--layout", "L", "split|packed ring layout (default split)", K_SC_ENUM, E_LAYOUT},
	{"--event-idx", "0|1", "negotiate VIRTIO_F_EVENT_IDX (default 1)", K_SC_ENUM, E_BOOL01},
	{"--driver-wait", "W", "spin|block: drivers poll for completions or sleep on calls (default spin)",
	 K_SC_ENUM, E_WAIT},
	{"--transport", "T", "direct|vhost-user|vhost-user-log: rings in this process, or served by "
	 "the library's vhost-user backend to its frontend over a unix socket, with dirty page "
	 "logging on (-log) or not (default direct)", K_SC_ENUM,
	 E_TRANSPORT},
	{"--shared-cpu", "0|1", "owner and drivers on the first CPU (the affinity shape)", K_SC_ENUM,
	 E_BOOL01 + 1},
	{"--worker-cpus", "LIST", "CPUs for pinned workers (default: the first allowed CPU)", K_CPUS, 0},
	{"--driver-cpus", "LIST", "CPUs for drivers, round robin (default: the second)", K_CPUS, 1},
	{"--help", NULL, "this text", K_BOOL, 2},
};
#define NFLAGS (sizeof(flags) / sizeof(flags[0]))

void opts_usage(FILE *f)
{
	fprintf(f, "usage: vqs-bench [--preset NAME] [--quick] [--json FILE] [--csv FILE] [--plot DIR] "
		   "[flags]\n       vqs-bench compare BASE.json NEW.json [--threshold PCT] [--pair B=N] (see "
		   "compare --help)\n       vqs-bench ab --a 'CMD' --b 'CMD' [--rounds N] (see ab --help)"
		   "\n\npresets:\n");
	for (unsigned i = 0; i < bench_npresets; i++)
		fprintf(f, "  %-10s %s\n", bench_presets[i].name, bench_presets[i].help);
	fprintf(f, "\nflags (each overrides what the preset sets):\n");
	for (unsigned i = 0; i < NFLAGS; i++) {
		char left[48];
		snprintf(left, sizeof(left), "%s%s%s", flags[i].name, flags[i].arg ? " " : "",
			 flags[i].arg ? flags[i].arg : "");
		fprintf(f, "  %-26s %s\n", left, flags[i].help);
	}
	fprintf(f, "\nSee docs/bench.md for the JSON schema and how to read the floors.\n");
}

static int parse_ll(const char *s, long long *v)
{
	char *end;
	errno = 0;
	*v = strtoll(s, &end, 10);
	return errno || *end || end == s || *v < 0 ? -EINVAL : 0;
}

static int parse_cpus(const char *s, struct cpu_list *l)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", s);
	l->n = 0;
	for (char *sv = NULL, *t = strtok_r(buf, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		long long v;
		if (l->n == BENCH_MAX_CPUS || parse_ll(t, &v) || v >= CPU_SETSIZE)
			return -EINVAL;
		l->cpu[l->n++] = (int)v;
	}
	return l->n ? 0 : -EINVAL;
}

static int parse_enum(int which, const char *s, struct opts *o)
{
	switch (which) {
	case E_TOUCH: {
		enum touch t;
		if (touch_parse(s, &t))
			return -EINVAL;
		o->sc[SC_TOUCH] = t;
		return 0;
	}
	case E_LAYOUT:
		if (strcmp(s, "split") && strcmp(s, "packed"))
			return -EINVAL;
		o->sc[SC_PACKED] = !strcmp(s, "packed");
		return 0;
	case E_WAIT:
		if (strcmp(s, "spin") && strcmp(s, "block"))
			return -EINVAL;
		o->sc[SC_DRIVER_BLOCK] = !strcmp(s, "block");
		return 0;
	case E_TRANSPORT: {
		enum transport t;
		if (transport_parse(s, &t))
			return -EINVAL;
		o->sc[SC_TRANSPORT] = t;
		return 0;
	}
	default: /* 0|1 flags: E_BOOL01 event_idx, E_BOOL01 + 1 shared_cpu */
		if (strcmp(s, "0") && strcmp(s, "1"))
			return -EINVAL;
		o->sc[which == E_BOOL01 ? SC_EVENT_IDX : SC_SHARED_CPU] = s[0] == '1';
		return 0;
	}
}

int opts_parse(struct opts *o, int argc, char **argv)
{
	memset(o, 0, sizeof(*o));
	o->preset = "default";
	for (unsigned i = 0; i < SC__COUNT; i++)
		o->sc[i] = -1;
	size_t off = snprintf(o->argv_line, sizeof(o->argv_line), "vqs-bench");
	for (int i = 0; i < argc; i++)
		if (off < sizeof(o->argv_line))
			off += snprintf(o->argv_line + off, sizeof(o->argv_line) - off, " %s", argv[i]);

	for (int i = 0; i < argc; i++) {
		const struct flag *f = NULL;
		for (unsigned k = 0; k < NFLAGS && !f; k++)
			if (!strcmp(argv[i], flags[k].name))
				f = &flags[k];
		if (!f) {
			fprintf(stderr, "vqs-bench: unknown argument %s (see --help)\n", argv[i]);
			return -EINVAL;
		}
		const char *arg = NULL;
		if (f->arg) {
			if (i + 1 >= argc) {
				fprintf(stderr, "vqs-bench: %s needs %s\n", f->name, f->arg);
				return -EINVAL;
			}
			arg = argv[++i];
		}
		long long v;
		int rc = 0;
		switch (f->kind) {
		case K_BOOL:
			if (f->which == 0)
				o->quick = true;
			else if (f->which == 1)
				o->no_floors = true;
			else if (f->which == 3)
				o->bare_metal = true;
			else {
				opts_usage(stdout);
				return 1;
			}
			break;
		case K_STR: {
			const char **dst[] = {&o->preset, &o->json, &o->csv, &o->plot, &o->variant,
					      &o->worker, &o->json_base};
			*dst[f->which] = arg;
			break;
		}
		case K_UINT:
			rc = parse_ll(arg, &v);
			if (!rc && (v < 1 || v > 1000))
				rc = -EINVAL;
			o->repeat = (unsigned)v;
			break;
		case K_DIM:
			o->dim[f->which] = arg;
			break;
		case K_SC:
			rc = parse_ll(arg, &v);
			if (!rc && v > UINT32_MAX)
				rc = -EINVAL;
			o->sc[f->which] = v;
			break;
		case K_SC_ENUM:
			rc = parse_enum(f->which, arg, o);
			break;
		case K_CPUS:
			rc = parse_cpus(arg, f->which ? &o->driver_cpus : &o->worker_cpus);
			break;
		}
		if (rc) {
			fprintf(stderr, "vqs-bench: bad value for %s: %s\n", f->name, arg ? arg : "");
			return -EINVAL;
		}
	}
	return 0;
}
