/* SPDX-License-Identifier: MIT */
/*
 * seed-2023: "vhost: use vhost_tasks for worker threads" (6e890c5d, Linux 6.4) cost ~30% of
 * TCP_STREAM and TCP_RR host-to-guest when the VMM pins its threads: the worker became a child of
 * the owner and inherited its one-CPU mask, so it competes with the vCPU on that CPU.
 *
 * Model: an owner thread pinned to vcpu_cpu creates the device (task or kthread mode) or a
 * vqsched scheduler (dedicated policy, auto placement with busy_cpus = that CPU), and the vCPU,
 * also pinned there. The external host is a peer thread on peer_cpu sending into the guest's tun
 * ring: a TCP-like stream (TCP_STREAM), or one request at a time answered by the guest (TCP_RR).
 */
#include <errno.h>
#include <semaphore.h>
#include <stdlib.h>
#include <string.h>
#include "ksim/fork.h"
#include "ksim/guest.h"
#include "ksim/peer.h"
#include "ksim/report.h"
#include "ksim/sched_net.h"
#include "ksim/vhost_net.h"

enum { ROW_STREAM = VQS_KSIM_SEED2023_STREAM, ROW_RR = VQS_KSIM_SEED2023_RR };
enum {
	COL_TASK = VQS_KSIM_SEED2023_TASK,
	COL_KTHREAD = VQS_KSIM_SEED2023_KTHREAD,
	COL_AUTO = VQS_KSIM_SEED2023_AUTO
};

static const char *const row_names[VQS_KSIM_SEED2023_ROWS] = {"TCP_STREAM", "TCP_RR"};
static const char *const col_names[VQS_KSIM_SEED2023_COLS] = {"task mode", "kthread mode",
							      "vqsched auto"};

const char *vqs_ksim_seed2023_row_name(unsigned row)
{
	return row < VQS_KSIM_SEED2023_ROWS ? row_names[row] : "?";
}

const char *vqs_ksim_seed2023_col_name(unsigned col)
{
	return col < VQS_KSIM_SEED2023_COLS ? col_names[col] : "?";
}

void vqs_ksim_seed2023_opts_init(struct vqs_ksim_seed2023_opts *o, bool quick)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	vqs_ksim_costs_init(&o->costs, VQS_KSIM_HOST_THIS_VM);
	/* A busy guest and a busy worker (small packets: per-packet work dominates), with a
	 * window deep enough that wake-ups are not the bottleneck. */
	o->costs.recv_pkt_ns = 5000;
	o->costs.host_pkt_ns = 2000;
	/* KVM's default: an idle vCPU polls 200 us before it sleeps, unless another task wants
	 * its CPU. A request finds a kthread-mode worker's vCPU polling; a task-mode worker woken
	 * on that CPU ends the poll, and the vCPU sleeps and is woken for the response. */
	o->costs.halt_poll_ns = 200000;
	/* Short cells, many repeats: a repeat is judged only when the model got its CPUs, and
	 * short ones find the moments other programs leave it them. */
	o->cell_ms = 250;
	o->repeats = quick ? 1 : 12;
	o->vcpu_cpu = 0;
	o->peer_cpu = 1;
	o->stream_window = 512;
}

/* The VMM's pinned main thread: owns the backend and creates the vCPU, from setup to teardown. */
struct owner {
	const struct vqs_ksim_seed2023_opts *o;
	unsigned row, col;
	struct ksim_nic *nic;
	struct ksim_guest guest;
	sem_t ready, teardown;
	int rc;
	int worker_pinned;
	char worker_cpus[32]; /* as read back, "" unknown */
	bool started, running;
};

static int backend_start(struct owner *ow)
{
	if (ow->col == COL_AUTO) {
		struct vqs_sched_opts so;
		vqs_sched_opts_init(&so);
		so.policy = VQS_POLICY_DEDICATED;
		so.placement = VQS_PLACE_AUTO;
		CPU_ZERO(&so.busy_cpus);
		CPU_SET(ow->o->vcpu_cpu, &so.busy_cpus);
		return ksim_snet_start(ow->nic, &so);
	}
	struct ksim_vnet_cfg cfg = {
		.fork = ow->col == COL_TASK ? VQS_KSIM_FORK_TASK : VQS_KSIM_FORK_KTHREAD,
		.variant = VQS_KSIM_RX_FIXED,
		.batch = VQS_KSIM_NET_BATCH,
	};
	return ksim_vnet_start(ow->nic, &cfg);
}

static void *owner_main(void *p)
{
	struct owner *ow = p;
	ow->worker_pinned = -1;
	ow->rc = ksim_pin_self(ow->o->vcpu_cpu);
	if (!ow->rc && !(ow->rc = backend_start(ow)))
		ow->started = true;
	if (ow->started) {
		cpu_set_t cpus;
		int rc = ow->col == COL_AUTO ? ksim_snet_worker_cpus(ow->nic, &cpus)
					     : ksim_vnet_worker_cpus(ow->nic, &cpus);
		if (!rc) {
			ow->worker_pinned =
				CPU_COUNT(&cpus) == 1 && CPU_ISSET(ow->o->vcpu_cpu, &cpus);
			ksim_cpus_format(&cpus, ow->worker_cpus, sizeof(ow->worker_cpus));
		}
		unsigned role = ow->row == ROW_STREAM ? KSIM_GUEST_RECEIVER : KSIM_GUEST_RR_SERVER;
		ow->rc = ksim_guest_start(&ow->guest, ow->nic, role, ow->o->vcpu_cpu);
		ow->running = !ow->rc;
	}
	sem_post(&ow->ready);
	/* Teardown: the peer has stopped producing into the guest's tun ring. */
	sem_wait(&ow->teardown);
	if (ow->running)
		ksim_guest_join(&ow->guest);
	if (ow->started) {
		if (ow->col == COL_AUTO)
			ksim_snet_stop(ow->nic);
		else
			ksim_vnet_stop(ow->nic);
	}
	return NULL;
}

/* Judged repeats a throughput verdict needs: half of them, at most 3. */
static unsigned judged_min(unsigned repeats)
{
	unsigned half = (repeats + 1) / 2;
	return half < 3 ? (half ? half : 1) : 3;
}

/* What a cell reports besides its figures. */
struct cell_ctx {
	const struct vqs_ksim_seed2023_opts *o;
	struct vqs_ksim_seed2023_result *r; /* worker masks, per column */
	/* o->interleave: the kthread side of the task column's world of this repeat and row,
	 * which ksim_table_run asks for next (columns in order within a repeat and row) */
	struct vqs_ksim_cell *paired;
};

/* o->interleave: the worker's mask per side, and the tid it is set on. */
struct mask_sides {
	const struct cell_ctx *ctx;
	struct ksim_nic *nic;
	int tid;
	cpu_set_t mask[2];
	bool recorded;
};

static int set_mask(void *opaque, unsigned side)
{
	struct mask_sides *m = opaque;
	/* Widening the mask leaves the worker on the vCPU's CPU until the scheduler moves it, and
	 * a busy worker (TCP_STREAM) seldom sleeps, so no wake-up places it anew: its kthread
	 * slices ran where its task slices left it. A kthread-mode worker starts where the
	 * scheduler places a new thread, off the busy vCPU's CPU: move it there first. */
	if (!side) {
		cpu_set_t off = m->mask[0];
		CPU_CLR(m->ctx->o->vcpu_cpu, &off);
		if (CPU_COUNT(&off) && sched_setaffinity(m->tid, sizeof(off), &off))
			return -errno;
	}
	if (sched_setaffinity(m->tid, sizeof(m->mask[side]), &m->mask[side]))
		return -errno;
	if (!m->recorded) { /* kthread mode's mask (side 0, the first) as the worker has it */
		const struct vqs_ksim_seed2023_opts *o = m->ctx->o;
		cpu_set_t got;
		unsigned col = COL_KTHREAD;
		m->recorded = true;
		if (!ksim_vnet_worker_cpus(m->nic, &got)) {
			ksim_cpus_format(&got, m->ctx->r->worker_cpus[col],
					 sizeof(m->ctx->r->worker_cpus[col]));
			m->ctx->r->worker_cpu_pinned[col] =
				CPU_COUNT(&got) == 1 && CPU_ISSET(o->vcpu_cpu, &got);
		}
	}
	return 0;
}

/*
 * o->interleave: the measured window of a world whose worker runs in task mode, its mask
 * switched between kthreadd's (side 0, kthread mode: the mask is all the modes differ in once
 * the worker runs) and the vCPU's CPU alone (side 1, task mode's inherited mask) every
 * o->interleave deliveries (ksim_interleaved_window). The dilution at a switch is about one
 * round trip (RR) or a window (STREAM) per slice.
 */
static int interleaved_window(const struct cell_ctx *ctx, unsigned row, struct ksim_world *w,
			      struct ksim_nic *nic, struct ksim_peer *peer,
			      struct vqs_ksim_cell side[2])
{
	struct mask_sides m = {.ctx = ctx, .nic = nic, .tid = ksim_vnet_worker_tid(nic)};
	if (m.tid < 0)
		return m.tid;
	/* Side 1 keeps the mask the worker was forked with, which task mode inherited from the
	 * owner: a worker that did not inherit it shows no drop. */
	ksim_kthread_cpus(&m.mask[0]);
	int rc = ksim_vnet_worker_cpus(nic, &m.mask[1]);
	if (rc)
		return rc;
	struct ksim_interleave il = {.slice = ctx->o->interleave,
				     .cell_ms = ctx->o->cell_ms,
				     .rr = row == ROW_RR,
				     .transactions = &peer->transactions,
				     .set_side = set_mask,
				     .opaque = &m};
	return ksim_interleaved_window(w, &il, side, NULL);
}

static int run_cell(const void *opaque, unsigned row, unsigned col, struct vqs_ksim_cell *out)
{
	const struct cell_ctx *ctx = opaque;
	const struct vqs_ksim_seed2023_opts *o = ctx->o;
	if (o->interleave && col == COL_KTHREAD) { /* measured beside the task column's */
		*out = *ctx->paired;
		return out->err;
	}
	struct ksim_world *w = calloc(1, sizeof(*w));
	struct ksim_nic *nic = calloc(1, sizeof(*nic));
	struct ksim_peer *peer = calloc(1, sizeof(*peer));
	struct owner *ow = calloc(1, sizeof(*ow));
	struct ksim_flow flow;
	int rc = -ENOMEM;
	bool nic_up = false, peer_up = false, owner_up = false, peer_running = false;
	if (!w || !nic || !peer || !ow)
		goto out;
	w->costs = o->costs;
	if (row == ROW_RR)
		w->costs.pkt_bytes = VQS_KSIM_SEED2023_RR_BYTES;
	if ((rc = ksim_nic_init(nic, w)))
		goto out;
	nic_up = true;
	if ((rc = ksim_peer_init(peer, nic, row == ROW_STREAM ? KSIM_PEER_STREAM : KSIM_PEER_RR,
				 o->peer_cpu)))
		goto out;
	peer_up = true;
	ksim_flow_init(&flow, o->stream_window, o->costs.loss_recovery_us, o->costs.rto_us,
		       &peer->park);
	w->flows = &flow;
	w->nflows = row == ROW_STREAM ? 1 : 0;
	*ow = (struct owner){.o = o, .row = row, .col = col, .nic = nic};
	sem_init(&ow->ready, 0, 0);
	sem_init(&ow->teardown, 0, 0);
	pthread_t owner_thread;
	if ((rc = -pthread_create(&owner_thread, NULL, owner_main, ow)))
		goto out;
	owner_up = true;
	sem_wait(&ow->ready);
	if ((rc = ow->rc) || (rc = ksim_peer_start(peer)))
		goto out;
	peer_running = true;
	ksim_sleep_ms(o->cell_ms / 5 + 20);
	ctx->r->worker_cpu_pinned[col] = ow->worker_pinned;
	memcpy(ctx->r->worker_cpus[col], ow->worker_cpus, sizeof(ow->worker_cpus));
	if (o->interleave && col == COL_TASK) {
		struct vqs_ksim_cell side[2] = {{0}};
		rc = interleaved_window(ctx, row, w, nic, peer, side);
		*ctx->paired = side[0];
		*out = side[1];
	} else {
		struct ksim_snap a, b;
		ksim_snap_take(w, atomic_load(&peer->transactions), &a);
		ksim_sleep_ms(o->cell_ms);
		ksim_snap_take(w, atomic_load(&peer->transactions), &b);
		ksim_snap_cell(w, &a, &b, row == ROW_RR, out);
	}
out:
	if (w)
		atomic_store(&w->stop, true);
	if (peer_running)
		ksim_peer_join(peer);
	if (owner_up) {
		sem_post(&ow->teardown);
		pthread_join(owner_thread, NULL);
	}
	if (peer_running) { /* the peer, the flow's only writer, has stopped */
		out->retransmits = flow.retransmits;
		out->timeouts = flow.timeouts;
	}
	if (o->interleave && col == COL_TASK)
		ctx->paired->err = rc; /* the world's recoveries are not split between sides */
	if (owner_up) {
		sem_destroy(&ow->ready);
		sem_destroy(&ow->teardown);
	}
	if (peer_up)
		ksim_peer_fini(peer);
	if (nic_up)
		ksim_nic_fini(nic);
	free(ow);
	free(peer);
	free(nic);
	free(w);
	return rc;
}

static bool cpu_usable(int cpu)
{
	cpu_set_t mine;
	return cpu >= 0 && cpu < CPU_SETSIZE && !sched_getaffinity(0, sizeof(mine), &mine) &&
	       CPU_ISSET(cpu, &mine);
}

void vqs_ksim_seed2023_judge(struct vqs_ksim_seed2023_result *r)
{
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++) {
		const struct vqs_ksim_cell *c = r->cell[row];
		unsigned need = judged_min(c[COL_KTHREAD].repeats);
		if (c[COL_TASK].err || c[COL_KTHREAD].err)
			continue;
		r->task_ratio[row] = ksim_judged_ratio(&c[COL_TASK], &c[COL_KTHREAD],
						       VQS_KSIM_SEED2023_TASK_CPUS,
						       VQS_KSIM_SEED2023_KTHREAD_CPUS_OF(row),
						       &r->drop_judged[row]);
		r->task_drop[row] = r->drop_judged[row] >= need &&
				    r->task_ratio[row] < 1 - VQS_KSIM_VERDICT_MARGIN;
		if (c[COL_AUTO].err)
			continue;
		r->auto_ratio[row] = ksim_judged_ratio(&c[COL_AUTO], &c[COL_KTHREAD],
						       VQS_KSIM_SEED2023_AUTO_CPUS,
						       VQS_KSIM_SEED2023_KTHREAD_CPUS_OF(row),
						       &r->auto_judged[row]);
		r->auto_ok[row] = r->auto_judged[row] >= need &&
				  r->auto_ratio[row] >= 1 - VQS_KSIM_VERDICT_MARGIN;
	}
}

int vqs_ksim_seed2023_run(const struct vqs_ksim_seed2023_opts *o,
			  struct vqs_ksim_seed2023_result *r)
{
	if (!o || !r || o->size != sizeof(*o) || r->size != sizeof(*r) || !o->cell_ms ||
	    o->costs.size != sizeof(o->costs) || !o->stream_window ||
	    o->repeats > VQS_KSIM_MAX_REPEATS || !cpu_usable(o->vcpu_cpu) ||
	    (o->peer_cpu != -1 && !cpu_usable(o->peer_cpu)))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->size = sizeof(*r);
	for (unsigned col = 0; col < VQS_KSIM_SEED2023_COLS; col++)
		r->worker_cpu_pinned[col] = -1;
	struct vqs_ksim_cell paired = {0};
	struct cell_ctx ctx = {.o = o, .r = r, .paired = &paired};
	ksim_table_run(run_cell, &ctx, VQS_KSIM_SEED2023_ROWS, VQS_KSIM_SEED2023_COLS, o->repeats,
		       &r->cell[0][0]);
	r->task_inherits_pin = r->worker_cpu_pinned[COL_TASK] == 1 &&
			       r->worker_cpu_pinned[COL_KTHREAD] == 0 &&
			       r->worker_cpu_pinned[COL_AUTO] == 0;
	/* The vCPU's CPU and one more for the kthread-mode worker: the external host sleeps while
	 * it waits (ksim_peer), so it leaves that CPU to the worker whatever the costs. */
	r->drop_expected = ksim_cpus_usable() >= 2;
	vqs_ksim_seed2023_judge(r);
	return 0;
}

static void print_auto(FILE *f, const struct vqs_ksim_seed2023_result *r, unsigned row,
		       unsigned n, unsigned need)
{
	if (r->auto_judged[row] < need)
		fprintf(f, "not judged here (the model got its CPUs in %u of %u repeats, %u needed)\n",
			r->auto_judged[row], n, need);
	else
		fprintf(f, "%.2fx of kthread: %s\n", r->auto_ratio[row],
			r->auto_ok[row] ? "no drop" : "DROP");
}

static const char *pinned_name(int pinned)
{
	return pinned < 0 ? "?" : pinned ? "on vCPU" : "off vCPU";
}

void vqs_ksim_seed2023_print(FILE *f, const struct vqs_ksim_seed2023_opts *o,
			     const struct vqs_ksim_seed2023_result *r)
{
	fprintf(f, "seed-2023: host-to-guest, owner and vCPU pinned to CPU %d, external host on %s%d, "
		   "%u ms per cell, median of %u\n",
		o->vcpu_cpu, o->peer_cpu < 0 ? "any CPU" : "CPU ", o->peer_cpu < 0 ? 0 : o->peer_cpu,
		o->cell_ms, o->repeats ? o->repeats : 1);
	vqs_ksim_costs_print(f, &o->costs);
	fprintf(f, "rates (CPUs the model used)\n%-22s", "workload");
	for (unsigned col = 0; col < VQS_KSIM_SEED2023_COLS; col++)
		fprintf(f, " | %14s", col_names[col]);
	fprintf(f, "\n%-22s", "worker mask (CPUs)");
	for (unsigned col = 0; col < VQS_KSIM_SEED2023_COLS; col++) {
		char m[48];
		snprintf(m, sizeof(m), "%s (%s)", pinned_name(r->worker_cpu_pinned[col]),
			 r->worker_cpus[col][0] ? r->worker_cpus[col] : "?");
		fprintf(f, " | %14s", m);
	}
	fprintf(f, "\n");
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++) {
		fprintf(f, "%-11s %-10s", row_names[row], row == ROW_STREAM ? "Mbit/s" : "trans/s");
		for (unsigned col = 0; col < VQS_KSIM_SEED2023_COLS; col++) {
			const struct vqs_ksim_cell *c = &r->cell[row][col];
			if (c->err)
				fprintf(f, " | %14s", "error");
			else
				fprintf(f, " | %8.0f (%3.1f)", c->rate, c->cpus_used);
		}
		fprintf(f, "\n");
	}
	fprintf(f, "verdict: the task-mode worker inherits the vCPU's pin, kthread and auto do not: %s\n",
		r->task_inherits_pin ? "REPRODUCED" : "not reproduced");
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++) {
		const struct vqs_ksim_cell *c = r->cell[row];
		unsigned n = c[COL_KTHREAD].repeats, need = judged_min(n);
		fprintf(f, "verdict: %s task-mode drop: ", row_names[row]);
		if (!r->drop_expected)
			fprintf(f, "not expected here: one CPU leaves the kthread worker no CPU of "
				   "its own");
		else if (r->drop_judged[row] < need)
			fprintf(f, "not judged here: the model got its CPUs (kthread cell %.1f, "
				   "task cell %.1f) in %u of %u repeats, %u needed; other programs took "
				   "them, and the drop is the CPU task mode loses",
				VQS_KSIM_SEED2023_KTHREAD_CPUS_OF(row), VQS_KSIM_SEED2023_TASK_CPUS,
				r->drop_judged[row], n, need);
		else
			fprintf(f, "%s (task %.2fx of kthread, %u of %u repeats judged)",
				r->task_drop[row] ? "REPRODUCED" : "not reproduced", r->task_ratio[row],
				r->drop_judged[row], n);
		fprintf(f, "; vqsched auto: ");
		print_auto(f, r, row, n, need);
	}
	/* Every repeat's ratio and the CPUs behind it: what was judged and what not, and why. */
	for (unsigned row = 0; row < VQS_KSIM_SEED2023_ROWS; row++) {
		const struct vqs_ksim_cell *c = r->cell[row];
		unsigned n = c[COL_TASK].repeats < c[COL_KTHREAD].repeats ? c[COL_TASK].repeats
									   : c[COL_KTHREAD].repeats;
		fprintf(f, "%s per repeat, task/kthread (CPUs task, kthread; * judged):",
			row_names[row]);
		for (unsigned i = 0; i < n; i++) {
			double t = c[COL_TASK].run_cpus[i], k = c[COL_KTHREAD].run_cpus[i];
			fprintf(f, " %.2f (%.1f, %.1f)%s",
				ksim_ratio(c[COL_TASK].run_rate[i], c[COL_KTHREAD].run_rate[i]), t, k,
				t >= VQS_KSIM_SEED2023_TASK_CPUS &&
						k >= VQS_KSIM_SEED2023_KTHREAD_CPUS_OF(row)
					? "*"
					: "");
		}
		fprintf(f, "\n");
	}
}

