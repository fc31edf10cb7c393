/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
	"usage: vqs-switch --socket PATH [--socket PATH]... [options]\n"
	"  --socket PATH        one vhost-user net port per socket (up to 64)\n"
	"  --server | --client  listen on the sockets (default) or connect to them\n"
	"  --policy P           dedicated | pool | poll | adaptive (default adaptive)\n"
	"  --workers N          worker threads for pool/poll/adaptive (default 1)\n"
	"  --placement P        float | pin | auto (default float)\n"
	"  --cpus LIST          CPUs for pin/auto, e.g. 0-1,3\n"
	"  --busy-cpus LIST     CPUs auto placement keeps off (vCPUs)\n"
	"  --poll-us US         poll policy: idle spin before sleeping (default 50)\n"
	"  --spin-pct P         adaptive: CPU time worth a unit of latency, in percent\n"
	"                       (default 200, the library's; smaller: more naps and sleeps)\n"
	"  --batch N            most frames or buffers per handler call (default 64, up to 256)\n"
	"  --budget N           most frames or buffers per queue turn before the next queue's\n"
	"                       (default 256; smaller: less latency per hop, more turns)\n"
	"  --packed             offer packed rings (used when the frontend negotiates them)\n"
	"  --no-mrg-rxbuf       do not offer mergeable receive buffers\n"
	"  --mac-age S          forget addresses silent for S seconds (default 300)\n"
	"  --stall-ms MS        a port without receive buffers this long drops (default 100)\n"
	"Counters: printed on SIGUSR1 (with the scheduler's, as JSON) and at exit;\n"
	"SIGINT/SIGTERM stop the switch.\n";

int sw_cpulist_parse(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s) {
		char *end;
		long a = strtol(s, &end, 10), b = a;
		if (end == s || a < 0 || a >= CPU_SETSIZE)
			return -EINVAL;
		if (*end == '-') {
			s = end + 1;
			b = strtol(s, &end, 10);
			if (end == s || b < a || b >= CPU_SETSIZE)
				return -EINVAL;
		}
		for (long c = a; c <= b; c++)
			CPU_SET((int)c, set);
		if (*end == ',')
			end++;
		else if (*end)
			return -EINVAL;
		s = end;
	}
	return CPU_COUNT(set) ? 0 : -EINVAL;
}

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, "vqs-switch: bad %s '%s'\n%s", what, arg, usage);
	return -EINVAL;
}

static int number(const char *arg, unsigned long max, unsigned long *out)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

int sw_cli_parse(struct sw_cli *c, int argc, char **argv)
{
	enum { O_SOCKET = 256, O_SERVER, O_CLIENT, O_POLICY, O_WORKERS, O_PLACEMENT, O_CPUS, O_BUSY,
	       O_POLL, O_SPIN, O_BATCH, O_BUDGET, O_PACKED, O_NOMRG, O_AGE, O_STALL, O_HELP };
	static const struct option longopts[] = {
		{ "socket", required_argument, 0, O_SOCKET }, { "server", no_argument, 0, O_SERVER },
		{ "client", no_argument, 0, O_CLIENT },       { "policy", required_argument, 0, O_POLICY },
		{ "workers", required_argument, 0, O_WORKERS },
		{ "placement", required_argument, 0, O_PLACEMENT },
		{ "cpus", required_argument, 0, O_CPUS },     { "busy-cpus", required_argument, 0, O_BUSY },
		{ "poll-us", required_argument, 0, O_POLL },  { "batch", required_argument, 0, O_BATCH },
		{ "spin-pct", required_argument, 0, O_SPIN },
		{ "budget", required_argument, 0, O_BUDGET }, { "packed", no_argument, 0, O_PACKED },
		{ "no-mrg-rxbuf", no_argument, 0, O_NOMRG },  { "mac-age", required_argument, 0, O_AGE },
		{ "stall-ms", required_argument, 0, O_STALL }, { "help", no_argument, 0, O_HELP },
		{ 0, 0, 0, 0 },
	};
	memset(c, 0, sizeof(*c));
	sw_opts_init(&c->sw);
	vqs_sched_opts_init(&c->sched);
	c->sched.policy = VQS_POLICY_ADAPTIVE;
	c->sw.paths = c->paths;
	unsigned long v;
	int opt;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case O_SOCKET:
			if (c->sw.nports == SW_MAX_PORTS)
				return bad("socket count at", optarg);
			if (strlen(optarg) >= 108)
				return bad("socket path (too long)", optarg);
			c->paths[c->sw.nports++] = optarg;
			break;
		case O_SERVER:
			c->sw.client = false;
			break;
		case O_CLIENT:
			c->sw.client = true;
			break;
		case O_POLICY:
			if (vqs_policy_parse(optarg, &c->sched.policy))
				return bad("policy", optarg);
			break;
		case O_WORKERS:
			if (number(optarg, 64, &v) || v == 0)
				return bad("worker count", optarg);
			c->sched.nworkers = (unsigned)v;
			break;
		case O_PLACEMENT:
			if (vqs_placement_parse(optarg, &c->sched.placement))
				return bad("placement", optarg);
			break;
		case O_CPUS:
			if (sw_cpulist_parse(optarg, &c->sched.cpus))
				return bad("cpu list", optarg);
			break;
		case O_BUSY:
			if (sw_cpulist_parse(optarg, &c->sched.busy_cpus))
				return bad("cpu list", optarg);
			break;
		case O_POLL:
			if (number(optarg, 10000000, &v))
				return bad("poll time", optarg);
			c->sched.poll_timeout_us = (uint32_t)v;
			break;
		case O_SPIN:
			if (number(optarg, 10000, &v)) /* the library's bound */
				return bad("spin percentage", optarg);
			c->sched.spin_pct = (uint32_t)v;
			break;
		case O_BATCH:
			if (number(optarg, 256, &v) || v == 0)
				return bad("batch size", optarg);
			c->sched.batch_max = (uint32_t)v;
			break;
		case O_BUDGET:
			if (number(optarg, 65536, &v) || v == 0)
				return bad("budget", optarg);
			c->sched.budget_pkts = (uint32_t)v;
			break;
		case O_PACKED:
			c->sw.packed = true;
			break;
		case O_NOMRG:
			c->sw.mrg_rxbuf = false;
			break;
		case O_AGE:
			if (number(optarg, 86400, &v) || v == 0)
				return bad("aging time", optarg);
			c->sw.mac_age_ns = v * 1000000000ull;
			break;
		case O_STALL:
			if (number(optarg, 60000, &v) || v == 0)
				return bad("stall time", optarg);
			c->sw.stall_ns = v * 1000000ull;
			break;
		case O_HELP:
			fputs(usage, stdout);
			return 1;
		default:
			fputs(usage, stderr);
			return -EINVAL;
		}
	}
	if (optind < argc)
		return bad("argument", argv[optind]);
	if (!c->sw.nports) {
		fprintf(stderr, "vqs-switch: at least one --socket is needed\n%s", usage);
		return -EINVAL;
	}
	c->sw.stage_slots = sw_stage_slots(c->sched.budget_pkts);
	return 0;
}
