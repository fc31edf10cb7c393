/* SPDX-License-Identifier: MIT */
/*
 * ksim: a user-space model of Linux drivers/vhost (vhost.c, net.c, vhost_task), built from real
 * threads and eventfds, to reproduce kernel vhost behaviour and try vqsched policies against it.
 *
 * Three levels, each usable alone:
 *  1. the modelled vhost device: workers (kthread or task mode, as VHOST_SET_FORK_FROM_OWNER),
 *     work items with vhost_work_queue semantics, polls that turn a kick eventfd into work, and
 *     the VHOST_NEW_WORKER / FREE_WORKER / ATTACH_VRING_WORKER / GET_VRING_WORKER operations;
 *  2. the network model behind the reproductions (vhost-net TX/RX handlers, tun-like rings,
 *     guests with vCPU threads on driver-side rings, a TCP-like sender) - internal, driven by 3;
 *  3. the two reproductions (seed-2017, seed-2023): option struct in, structured result out, and a
 *     printer for the side-by-side table and the verdict lines. vqs-bench and examples/ksim-repro
 *     call these.
 *
 * Every figure in a result is measured by the run; verdicts are computed from those figures.
 *
 * Running a reproduction (what vqs-bench's presets seed-2017 / seed-2023 do):
 *
 *	struct vqs_ksim_seed2017_opts o;
 *	vqs_ksim_seed2017_opts_init(&o, true);          // quick: about ten seconds in all
 *	vqs_ksim_costs_parse(&o.costs, "recv=6000");    // optional: change the model's costs
 *	struct vqs_ksim_seed2017_result r = {.size = sizeof(r)};
 *	if (!vqs_ksim_seed2017_run(&o, &r))
 *		vqs_ksim_seed2017_print(stdout, &o, &r); // or walk r.cell[row][col] for JSON
 *
 * Each cell carries its rate, counters and err; the verdict booleans sit in the result. Runs
 * spawn real threads and take as long as cell_ms * cells * repeats plus setup: keep other
 * CPU-heavy work off the machine meanwhile, figures are wall-clock throughput.
 */
#ifndef VQSCHED_KSIM_H
#define VQSCHED_KSIM_H

#define _GNU_SOURCE 1
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <vqsched/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ======================= 1. the modelled vhost device ======================= */

/*
 * How workers are created (Linux 6.17 VHOST_SET_FORK_FROM_OWNER):
 *  KTHREAD: forked by a helper thread that has the process-wide CPU mask and SCHED_OTHER, nice 0
 *           (the old kthreadd path): the owner's CPU mask, scheduling attributes and
 *           RLIMIT_NPROC do not apply.
 *  TASK:    forked by the calling thread itself (vhost_task): inherits its CPU mask and
 *           scheduling attributes, and is refused with -EAGAIN when the real user already runs
 *           RLIMIT_NPROC tasks. Unlike the kernel, the model applies the limit to privileged users
 *           too, so that a test running as root can observe it.
 */
enum vqs_ksim_fork { VQS_KSIM_FORK_KTHREAD = 0, VQS_KSIM_FORK_TASK = 1 };
/* "kthread" or "task". Threads: any. */
VQS_API const char *vqs_ksim_fork_name(enum vqs_ksim_fork f);

/*
 * How modelled threads (vhost workers, vCPUs, host peers) wait for an event:
 *  BLOCK: sleep on the eventfd for real: the wake-up costs what this machine charges (on this VM
 *         about 50 us cross-CPU round trip, 3.6 us same CPU), plus wake_ns.
 *  SPIN:  poll the eventfd, yielding the CPU between polls, then burn wake_ns: a wake-up costs
 *         about wake_ns, as on a bare-metal host with cheap wake-ups.
 */
enum vqs_ksim_wait { VQS_KSIM_WAIT_BLOCK = 0, VQS_KSIM_WAIT_SPIN = 1 };

#define VQS_KSIM_MAX_VQS 8
#define VQS_KSIM_MAX_WORKERS 8

struct vqs_ksim_work;
typedef void (*vqs_ksim_work_fn)(struct vqs_ksim_work *w);

/*
 * A work item (struct vhost_work): caller storage, set up once with vqs_ksim_work_init. Queueing
 * an item that is already queued does nothing (the QUEUED bit): it runs once. The bit is cleared
 * just before fn runs, so a queue during fn runs it again. Fields are private to the model.
 */
struct vqs_ksim_work {
	struct vqs_ksim_work *_Atomic next;
	atomic_uint flags;
	vqs_ksim_work_fn fn;
	void *opaque;
};
/* Threads: any, before the item is first queued. */
VQS_API void vqs_ksim_work_init(struct vqs_ksim_work *w, vqs_ksim_work_fn fn, void *opaque);

struct vqs_ksim_dev_opts {
	uint32_t size;           /* sizeof(struct vqs_ksim_dev_opts) */
	enum vqs_ksim_fork fork; /* default KTHREAD */
	unsigned nvqs;           /* 1..VQS_KSIM_MAX_VQS (default 2: RX and TX) */
	enum vqs_ksim_wait wait; /* how idle workers wait (default BLOCK) */
	uint32_t wake_ns;        /* modelled cost of each worker wake-up (default 0) */
};
/* Fill defaults (size set). Threads: any. */
VQS_API void vqs_ksim_dev_opts_init(struct vqs_ksim_dev_opts *o);

struct vqs_ksim_dev;
/*
 * Create a device and its default worker 0, attached to every vq (VHOST_SET_OWNER): the calling
 * thread becomes the owner. -EAGAIN when a task-mode worker is over RLIMIT_NPROC.
 * Threads: any (the owner-to-be).
 */
VQS_API int vqs_ksim_dev_create(struct vqs_ksim_dev **out, const struct vqs_ksim_dev_opts *o);
/* Stop every poll, drain and join every worker, free the device. Threads: control, not a worker. */
VQS_API void vqs_ksim_dev_destroy(struct vqs_ksim_dev *d);

/* VHOST_NEW_WORKER: a new idle worker, forked per the device's mode; its id in *id.
 * -EAGAIN (task mode, over RLIMIT_NPROC), -ENOSPC (VQS_KSIM_MAX_WORKERS). Threads: control. */
VQS_API int vqs_ksim_worker_new(struct vqs_ksim_dev *d, unsigned *id);
/* VHOST_FREE_WORKER: -EBUSY while a vq is attached to it, -ENOENT for an unknown id.
 * Threads: control. */
VQS_API int vqs_ksim_worker_free(struct vqs_ksim_dev *d, unsigned id);
/* VHOST_ATTACH_VRING_WORKER: later work of vq runs on worker id (its poll moves with it); work
 * already queued on the old worker is flushed first. Threads: control. */
VQS_API int vqs_ksim_vring_attach_worker(struct vqs_ksim_dev *d, unsigned vq, unsigned id);
/* VHOST_GET_VRING_WORKER. Threads: control. */
VQS_API int vqs_ksim_vring_get_worker(struct vqs_ksim_dev *d, unsigned vq, unsigned *id);
/* Linux tid and CPU mask of a worker, read back from the thread. Threads: control. */
VQS_API int vqs_ksim_worker_tid(struct vqs_ksim_dev *d, unsigned id);
VQS_API int vqs_ksim_worker_cpus(struct vqs_ksim_dev *d, unsigned id, cpu_set_t *cpus);

/*
 * vhost_vq_work_queue: queue w on the worker vq is attached to and wake it. Returns true when w
 * was newly queued, false when it was already queued (it will run once). Threads: any, including
 * work functions (a handler requeueing itself on budget).
 */
VQS_API bool vqs_ksim_vq_work_queue(struct vqs_ksim_dev *d, unsigned vq, struct vqs_ksim_work *w);
/* vhost_dev_flush: return once every work queued on any worker before the call has run.
 * Threads: control, not a worker. */
VQS_API int vqs_ksim_dev_flush(struct vqs_ksim_dev *d);

/*
 * vhost_poll_start/stop: while started, each time `fd` (an eventfd, e.g. the guest's kick)
 * becomes readable it is read and w is queued on the vq's worker. One poll per vq.
 * Threads: control.
 */
VQS_API int vqs_ksim_poll_start(struct vqs_ksim_dev *d, unsigned vq, int fd,
				struct vqs_ksim_work *w);
VQS_API void vqs_ksim_poll_stop(struct vqs_ksim_dev *d, unsigned vq);

/* ======================= 2. model costs ======================= */

/*
 * The costs the model charges explicitly (busy CPU time, so they compete for CPUs like real work).
 * Everything else (eventfd writes, wake-ups in BLOCK mode, copies, ring operations) costs what it
 * really costs on the machine running the model.
 */
struct vqs_ksim_costs {
	uint32_t size;           /* sizeof(struct vqs_ksim_costs) */
	uint32_t send_pkt_ns;    /* sending guest's (or host peer's) work per packet */
	uint32_t recv_pkt_ns;    /* receiving guest's work per packet: set above send_pkt_ns for a
				  * receiver that falls behind */
	uint32_t exit_ns;        /* vCPU cost of one kick (the VM exit), before the eventfd write */
	uint32_t wake_ns;        /* modelled cost of each wake-up of a waiting thread */
	uint32_t ring_lock_ns;   /* one consumer-lock round of the tun ring (cache-line transfer);
				  * batching pays it once per batch */
	uint32_t host_pkt_ns;    /* vhost's per-packet work besides the copy */
	uint32_t pkt_bytes;      /* payload bytes per packet (default 1500) */
	enum vqs_ksim_wait wait; /* how every modelled thread waits */
	uint32_t busyloop_us;    /* vhost-net busyloop timeout (module parameter; default 0) */
	uint32_t loss_recovery_us; /* TCP-like sender: time from a drop to its retransmit, during
				    * which the stream sends nothing new (default 500) */
	uint32_t rto_us;         /* TCP-like sender: stall when a retransmission is lost again (a
				  * retransmission timeout; default 200000, Linux's TCP_RTO_MIN) */
	uint32_t halt_poll_ns;   /* KVM halt polling: an idle vCPU spins this long for work before
				  * it sleeps, unless another task wants its CPU first, which ends
				  * the poll as in KVM (default 0; KVM's x86 default is 200000) */
	uint32_t leak_gap_us;    /* 4.13 RX: an exhausted RX ring leaks the packet in hand at most
				  * once per this interval (default 500000; 0 = every time) */
};
/* Costs for this VM (BLOCK waits, real wake-ups) or a bare-metal-like host (SPIN waits, wake-ups
 * of wake_ns = 3 us). Threads: any. */
enum vqs_ksim_host { VQS_KSIM_HOST_THIS_VM = 0, VQS_KSIM_HOST_BARE_METAL = 1 };
VQS_API void vqs_ksim_costs_init(struct vqs_ksim_costs *c, enum vqs_ksim_host host);
/* Set only what the host decides (wait, wake_ns), keeping a scenario's other costs.
 * Threads: any. */
VQS_API void vqs_ksim_costs_set_host(struct vqs_ksim_costs *c, enum vqs_ksim_host host);
/*
 * Override costs from "key=value[,key=value...]": send, recv, exit, wake, lock, vhost (ns);
 * bytes; busyloop, recovery, rto, leak (us); haltpoll (ns); wait=block|spin. -EINVAL on an
 * unknown key or a bad value (c is then partly updated). Threads: any.
 */
VQS_API int vqs_ksim_costs_parse(struct vqs_ksim_costs *c, const char *spec);
/* One line naming every cost, for reports, and a second when the calling thread runs niced:
 * the model's kthread-mode workers reset their nice to 0 as kthreadd's children do (where the
 * process may), so they outrank the niced vCPU and peer threads and every figure moves (measured
 * in docs/bench.md). Threads: any. */
VQS_API void vqs_ksim_costs_print(FILE *f, const struct vqs_ksim_costs *c);

/* vhost-net budgets (drivers/vhost/net.c). */
#define VQS_KSIM_NET_WEIGHT 0x80000u
#define VQS_KSIM_NET_PKT_WEIGHT 256u
#define VQS_KSIM_NET_BATCH 64u

/* ======================= 3. reproductions ======================= */

/* Most repeats a reproduction runs (opts.repeats above it is -EINVAL). */
#define VQS_KSIM_MAX_REPEATS 32

/* One measured cell of a reproduction table. */
struct vqs_ksim_cell {
	int err;                 /* 0, or -errno when the cell could not run (other fields 0) */
	double rate;             /* seed-2017 and STREAM: goodput Mbit/s; RR: transactions/s */
	uint64_t delivered;      /* packets (or transactions) that reached the application */
	uint64_t drops_batch;    /* 4.13: taken from the tun ring, then lost (leaked) at an
				  * exhausted RX ring */
	uint64_t drops_ring;     /* tun ring full at produce (tun_net_xmit drop) */
	uint64_t retransmits;    /* TCP-like resends after drops (whole run, warm-up included) */
	uint64_t timeouts;       /* of the recoveries, retransmission timeouts (whole run) */
	uint64_t kicks;          /* guest kicks (VM exits) */
	uint64_t elapsed_ns;     /* measured interval */
	double cpus_used;        /* CPU time of the whole process over the interval / elapsed: how
				  * much of the machine the model got (low = starved by other load) */
	unsigned repeats;        /* runs behind this cell (rate is their median) */
	/* The rate of each of those runs, in run order: repeat i of every cell of a table ran in
	 * the same pass over the table, so run_rate[i] of two cells were measured seconds apart. */
	double run_rate[VQS_KSIM_MAX_REPEATS];
	double run_cpus[VQS_KSIM_MAX_REPEATS]; /* cpus_used of the same runs */
};

/* ---- seed-2017: vhost_net batch dequeue (c67df11f), guest to guest over a bridge ---- */

enum vqs_ksim_rx_variant {
	VQS_KSIM_RX_413 = 0,   /* take the batch out of the tun ring first; drop what finds no
				* RX buffer */
	VQS_KSIM_RX_FIXED = 1, /* take only as many packets as there are RX buffers */
};

#define VQS_KSIM_SEED2017_ROWS 3 /* 1, 10, 50 streams */
#define VQS_KSIM_SEED2017_COLS 5
/* Columns: kernel model 4.13 variant with batch 1 and 64, fixed variant with batch 1 (what 4.12
 * ran: one packet per round) and 64, vqsched adaptive policy. */
enum {
	VQS_KSIM_SEED2017_413_B1, VQS_KSIM_SEED2017_413_B64, VQS_KSIM_SEED2017_FIXED_B1,
	VQS_KSIM_SEED2017_FIXED_B64, VQS_KSIM_SEED2017_ADAPTIVE
};
/* "4.13 b1", "4.13 b64", ... Threads: any. */
VQS_API const char *vqs_ksim_seed2017_col_name(unsigned col);

struct vqs_ksim_seed2017_opts {
	uint32_t size;              /* sizeof(struct vqs_ksim_seed2017_opts) */
	struct vqs_ksim_costs costs;
	uint32_t cell_ms;           /* measured time per cell (default 1000; quick 400, two
				     * retransmission timeouts) */
	unsigned repeats;           /* runs per cell, median reported (default 1) */
	/* Streams of each row, default 1, 10, 50. 0: the row is not run (its cells' err is
	 * -ENODATA and the verdicts that need it are false), so that a caller that needs one row,
	 * a guard comparing the light-load pair, does not wait for the others; one row at least.
	 * The verdicts take the first row run as light load and the last as heavy load. */
	unsigned streams[VQS_KSIM_SEED2017_ROWS];
	uint32_t total_window;      /* TCP-like receive window summed over streams, packets
				     * (default 768: beyond the 256 RX buffers, within the tun ring) */
	/* N > 0 (default 2000): the judged rows' 4.13 b64 and fixed b1 columns share one world
	 * per repeat (the light row always, the heavy row when two rows or more run), whose two
	 * RX handlers are switched between the two every N packets delivered after the slice's
	 * last loss (so a stall after a leak stays in the leaking side's slice; N must exceed
	 * total_window, the packets in flight; the light row's slices without a loss end after
	 * 20 ms too, so that a spell without CPUs is shared), A B B A, for
	 * VQS_KSIM_SEED2017_PAIR_WINDOWS x cell_ms and until each side had two slices; each side's
	 * rate is, in the light row, its goodput over the world (its deliveries over its slices'
	 * time, what the light verdict judges), in the heavy row its median slice's, and the
	 * world's retransmits and leaks count for 4.13 b64 (only its handler leaks).
	 * Both then meet whatever other programs do at that moment alike. 0: a world per cell. */
	uint32_t interleave;
	/* Guest B's work per packet in the heavy row (the last of two rows or more), in place of
	 * costs.recv_pkt_ns (default 1000, the sender's: the real commit's 50 streams gained
	 * where the vhost RX thread, not the receiving guest, bounded them; the light row keeps
	 * the receiver that falls behind, whose exhausted RX ring leaks). 0: costs.recv_pkt_ns. */
	uint32_t heavy_recv_pkt_ns;
};
/* Defaults; quick = a run of about ten seconds in all. The costs are this VM's with the
 * scenario's changes: recv_pkt_ns 4000 (the receiver falls behind), ring_lock_ns 1000 (a
 * contended tun ring); the heavy row's receiver 1000 (heavy_recv_pkt_ns). Threads: any. */
VQS_API void vqs_ksim_seed2017_opts_init(struct vqs_ksim_seed2017_opts *o, bool quick);

/*
 * One judged row's 4.13 b64 against fixed b1, interleaved (opts.interleave): `runs` repeats,
 * each a world of both handlers switched A B B A, then self-comparison worlds (a variant
 * against itself, switched alike) that measure what slicing and other programs' load make of
 * one variant in this run.
 * - ratio[i]: 4.13 b64 over fixed b1 in repeat i's pair world as its verdict judges it. Light
 *   row: by goodput over the whole world, each side's deliveries over its slices' wall time,
 *   because the loss is the stall after a leak (a timeout), rare among the rounds: a median
 *   of rounds leaves it out, and per CPU-second a stall costs nothing. Heavy row: per
 *   CPU-second the model used, the median over the world's A B B A rounds of the round's
 *   ratio (a round's slices sit about its middle, so CPUs that other programs give and take
 *   across it move both sides alike), because the batch's gain is the CPU it saves: it shows
 *   as goodput only while the model's CPUs bound it, not once guest B's receiver (one thread)
 *   does.
 * - rate_ratio[i]: by goodput, the median over the rounds (both rows; beside ratio).
 * - self_ratio[0 fixed b1 | 1 4.13 b64][i]: each self-comparison's ratio of its sides, judged
 *   as ratio (0 when a side delivered nothing or the world failed). The light row compares
 *   only fixed b1 with itself ([1] stays 0): 4.13 b64 against itself reads where its stalls
 *   fell, the effect under test, not the noise.
 * - spread: the largest |self_ratio - 1|. The light verdict needs its loss beyond
 *   max(VQS_KSIM_VERDICT_MARGIN, spread), the heavy one its gain beyond spread; both need
 *   runs of at least the repeats a verdict needs.
 */
struct vqs_ksim_seed2017_pair {
	double ratio[VQS_KSIM_MAX_REPEATS], rate_ratio[VQS_KSIM_MAX_REPEATS];
	double self_ratio[2][VQS_KSIM_MAX_REPEATS];
	unsigned runs;
	double spread;
};

/*
 * vqsched adaptive against fixed b64 in one world per repeat (opts.interleave, two rows or
 * more), for the adaptive verdict. Both nics' queues are handed between the library's scheduler
 * and the kernel model's worker, each parked while the other serves and alive through the world
 * (so what the scheduler learned stays), switched every opts.interleave packets delivered (the
 * light row's slices end after 20 ms too), A B B A, for VQS_KSIM_SEED2017_PAIR_WINDOWS x
 * cell_ms. Worlds of their own, seconds apart, read adaptive / fixed b64 at one stream anywhere
 * from 0.69x to 1.35x on the development VM (quartiles 0.89-1.08x, 30 repeats): each world
 * measures where its threads landed on the CPUs as much as the code.
 * - ratio[i]: adaptive over fixed b64 in repeat i's world, the median over its A B B A rounds
 *   of each round's ratio of goodput (deliveries over the slices' wall time).
 * - cpus[s][i]: the CPUs the model used over side s's slices (0 adaptive, 1 fixed b64).
 */
struct vqs_ksim_seed2017_adaptive_pair {
	double ratio[VQS_KSIM_MAX_REPEATS];
	double cpus[2][VQS_KSIM_MAX_REPEATS];
	unsigned runs;
};

struct vqs_ksim_seed2017_result {
	uint32_t size;              /* sizeof(struct vqs_ksim_seed2017_result), set by the caller */
	unsigned streams[VQS_KSIM_SEED2017_ROWS];
	struct vqs_ksim_cell cell[VQS_KSIM_SEED2017_ROWS][VQS_KSIM_SEED2017_COLS];
	/* Verdicts, computed from the cells: */
	bool drops_413_only;    /* the 4.13 variant lost packets; fixed and vqsched lost none */
	/* The throughput verdicts compare cells by the median over repeats of their per-repeat
	 * ratio, against VQS_KSIM_VERDICT_MARGIN (interleaved: also the pair's spread, below). */
	bool light_load_loss;   /* 1 stream: 4.13 b64 below fixed b1 (the 4.12 path), with loss */
	bool heavy_load_gain;   /* most streams: 4.13 b64 above fixed b1, over the judged
				 * repeats (below) */
	bool adaptive_no_loss;  /* vqsched adaptive: no drops, and not below the best kernel column
				 * by more than the margin at 1 and at the most streams, over the
				 * judged repeats */
	/* Repeats judged for heavy_load_gain (of 4.13 b64 against fixed b1) and for the adaptive
	 * column at the light and at the heavy row (against the row's best kernel column, the
	 * one with the highest median rate over the repeats that got its CPUs; repeat by repeat):
	 * those in which both cells got VQS_KSIM_SEED2017_CPUS (cpus_used). With fewer, a cell's
	 * rate follows the share of the CPUs other programs left it, cell by cell, not its code.
	 * A verdict needs half the repeats or 3, whichever is fewer; else it is false and prints
	 * "not judged here". heavy_ratio and adaptive_ratio are the medians over the judged
	 * repeats (0 when none). */
	unsigned heavy_judged, adaptive_judged[2];
	double heavy_ratio, adaptive_ratio[2];
	/* Whether heavy_load_gain and adaptive_no_loss can show on this machine with these costs:
	 * false with spinning waits on fewer CPUs than the model's busy threads (4), which then
	 * take turns on the CPUs and the time a batch saves goes to spinning. The interleaved
	 * heavy_load_gain, judged per CPU-second in one world, showed with spinning waits too
	 * (docs/bench.md) and is printed without that caveat. */
	bool throughput_expected;
	/* opts.interleave: the judged rows' 4.13 b64 and fixed b1 cells were measured
	 * interleaved in one world per repeat (the light row always, the heavy row when two rows
	 * or more ran), and their verdicts judge pair[] below. */
	bool interleaved;
	/* Median of the light row's judged ratios: pair[0].ratio when interleaved, else the cells'
	 * ksim paired ratio; light_load_loss needs it below 1 - max(VQS_KSIM_VERDICT_MARGIN,
	 * pair[0].spread). */
	double light_ratio;
	struct vqs_ksim_seed2017_pair pair[2]; /* [0] the light row, [1] the heavy row */
	/* Interleaved with two rows or more: the judged rows' 4.13 b64 ([end][0]) and fixed b1
	 * ([end][1]) again, each repeat in a world of their own as every other cell is, [end] 0
	 * the light row, 1 the heavy row. adaptive_no_loss judges the adaptive cell against
	 * these, not against the interleaved sides in cell[][]: a side's slices start from what
	 * the other variant left queued, and at 50 streams 4.13 b64's read 1.1-1.3x its rate
	 * in a world of its own (docs/bench.md). repeats 0: not measured; cell[][] stands. */
	struct vqs_ksim_cell alone[2][2];
	/* Interleaved with two rows or more: adaptive against fixed b64 in one world per repeat,
	 * [0] the light row, [1] the heavy row. Where fixed b64 is the row's best kernel column
	 * (adaptive_interleaved[end]), adaptive_no_loss judges these ratios, over the repeats in
	 * which both sides got VQS_KSIM_SEED2017_CPUS, instead of the cells' of separate worlds. */
	struct vqs_ksim_seed2017_adaptive_pair adaptive_pair[2];
	bool adaptive_interleaved[2];
};
/* How many cell_ms each interleaved world of a judged row measures: the self-comparisons'
 * spread falls with the rounds a world holds, and the light row's loss comes in leaks at most
 * leak_gap_us apart (measured in docs/bench.md). */
#define VQS_KSIM_SEED2017_PAIR_WINDOWS 4
/* CPUs (cpus_used) both cells of a seed-2017 throughput comparison must have got for a repeat
 * to be judged: most of the two the model's four threads share. */
#define VQS_KSIM_SEED2017_CPUS 1.5
/*
 * Run the whole table (each cell builds its own guests, devices and threads, and tears them down).
 * Returns 0 (cells that failed carry err), or -EINVAL for bad options. Threads: any; spawns
 * threads and pins none.
 */
VQS_API int vqs_ksim_seed2017_run(const struct vqs_ksim_seed2017_opts *o,
				  struct vqs_ksim_seed2017_result *r);
/* The verdicts and judged counts of r from its streams and cells (what vqs_ksim_seed2017_run
 * does after the runs; throughput_expected is left alone): for cells a caller kept or built.
 * Threads: any. */
VQS_API void vqs_ksim_seed2017_judge(struct vqs_ksim_seed2017_result *r);
/* Print the table side by side and one verdict line per effect. Threads: any. */
VQS_API void vqs_ksim_seed2017_print(FILE *f, const struct vqs_ksim_seed2017_opts *o,
				     const struct vqs_ksim_seed2017_result *r);

/* ---- seed-2023: vhost_task workers (6e890c5d) inherit the pinned owner's CPU ---- */

#define VQS_KSIM_SEED2023_ROWS 2 /* TCP_STREAM-like, TCP_RR-like */
#define VQS_KSIM_SEED2023_RR_BYTES 64u /* TCP_RR message payload (netperf's default is 1) */
#define VQS_KSIM_SEED2023_COLS 3 /* task mode, kthread mode, vqsched auto placement */
enum { VQS_KSIM_SEED2023_STREAM, VQS_KSIM_SEED2023_RR };
enum { VQS_KSIM_SEED2023_TASK, VQS_KSIM_SEED2023_KTHREAD, VQS_KSIM_SEED2023_AUTO };
/* "TCP_STREAM", "TCP_RR" / "task mode", "kthread mode", "vqsched auto". Threads: any. */
VQS_API const char *vqs_ksim_seed2023_row_name(unsigned row);
VQS_API const char *vqs_ksim_seed2023_col_name(unsigned col);

struct vqs_ksim_seed2023_opts {
	uint32_t size;              /* sizeof(struct vqs_ksim_seed2023_opts) */
	struct vqs_ksim_costs costs;
	uint32_t cell_ms;           /* default 250, quick too */
	unsigned repeats;           /* default 12; quick 1 */
	int vcpu_cpu;               /* CPU the owner and the vCPU are pinned to (default 0) */
	int peer_cpu;               /* CPU of the modelled external host (default 1; -1 = float) */
	uint32_t stream_window;     /* TCP_STREAM window, packets (default 512) */
	/* 0 (default): each column runs in a world of its own. N > 0: the task and kthread
	 * columns share one world per repeat and workload, whose worker (forked in task mode)
	 * has its mask switched between the vCPU's CPU and kthreadd's every N packets or
	 * transactions, A B B A, for cell_ms and until each side had two slices; each side's
	 * rate is that of its median slice. Both then meet whatever other programs do at that
	 * moment alike, which separate worlds, cells apart, do not. */
	uint32_t interleave;
};
/* Defaults; the costs are this VM's with recv_pkt_ns 5000 and host_pkt_ns 2000 (busy guest,
 * busy worker) and KVM's default halt polling (200 us). TCP_RR runs with 64-byte payloads.
 * Threads: any. */
VQS_API void vqs_ksim_seed2023_opts_init(struct vqs_ksim_seed2023_opts *o, bool quick);

struct vqs_ksim_seed2023_result {
	uint32_t size;              /* sizeof(struct vqs_ksim_seed2023_result), set by the caller */
	struct vqs_ksim_cell cell[VQS_KSIM_SEED2023_ROWS][VQS_KSIM_SEED2023_COLS];
	int worker_cpu_pinned[VQS_KSIM_SEED2023_COLS]; /* 1 when the worker's mask was exactly the
							* vCPU's CPU, 0 otherwise, -1 unknown */
	/* The worker's mask as read back, in CPU list form ("0", "0-1"); "" unknown. */
	char worker_cpus[VQS_KSIM_SEED2023_COLS][32];
	/* The mechanism: the task-mode worker ran with exactly the vCPU's CPU, the others did not. */
	bool task_inherits_pin;
	/* Verdicts, per row: task mode below kthread mode by more than the margin; vqsched auto
	 * within the margin of kthread mode or above. Each is the median of the per-repeat ratios
	 * over the repeats it judged (below), and false when they were fewer than half the
	 * repeats or 3, whichever is fewer. */
	bool task_drop[VQS_KSIM_SEED2023_ROWS];
	bool auto_ok[VQS_KSIM_SEED2023_ROWS];
	/* Repeats judged: those in which the model got the CPUs the comparison is about. The drop
	 * is task mode's loss of the CPU its worker would have had beside the vCPU's: a repeat
	 * counts for task_drop when the kthread cell got VQS_KSIM_SEED2023_KTHREAD_CPUS_OF(row)
	 * and the task cell VQS_KSIM_SEED2023_TASK_CPUS (cpus_used), for auto_ok when the kthread
	 * cell got that and the auto cell VQS_KSIM_SEED2023_AUTO_CPUS. Under
	 * other programs' load the model gets less, and with one CPU for two busy threads their
	 * per-thread share of it decides, not the mode. */
	unsigned drop_judged[VQS_KSIM_SEED2023_ROWS];
	unsigned auto_judged[VQS_KSIM_SEED2023_ROWS];
	/* The ratios behind the verdicts: median over the judged repeats of task / kthread and
	 * auto / kthread (0 when none was judged). */
	double task_ratio[VQS_KSIM_SEED2023_ROWS];
	double auto_ratio[VQS_KSIM_SEED2023_ROWS];
	/* Whether task_drop can show on this machine: false on one CPU (the floating kthread
	 * worker then shares the vCPU's CPU just as the task-mode one does). The external host
	 * sleeps while it waits, whatever the costs, so two CPUs are enough. */
	bool drop_expected;
};
/* CPUs (cpus_used) a kthread-mode or vqsched cell, and a task-mode cell, must have got for a
 * repeat to be judged. The kthread cell's is about 90% of what it uses when nothing else runs:
 * TCP_STREAM's (VQS_KSIM_SEED2023_KTHREAD_CPUS) keeps its vCPU and worker busy, 1.9-2.0, and
 * one that got less was slowed by the same share task mode loses, so its ratio reads no drop;
 * TCP_RR's (VQS_KSIM_SEED2023_KTHREAD_RR_CPUS) uses 1.7-1.8 with this VM's costs, its external
 * host asleep between transactions (docs/bench.md). */
#define VQS_KSIM_SEED2023_KTHREAD_CPUS 1.8
#define VQS_KSIM_SEED2023_KTHREAD_RR_CPUS 1.6
#define VQS_KSIM_SEED2023_KTHREAD_CPUS_OF(row) \
	((row) == VQS_KSIM_SEED2023_RR ? VQS_KSIM_SEED2023_KTHREAD_RR_CPUS \
				       : VQS_KSIM_SEED2023_KTHREAD_CPUS)
#define VQS_KSIM_SEED2023_TASK_CPUS 1.0
/* The vqsched auto cell's: its TCP_RR used 1.72-1.78 CPUs in every run of a count (its worker
 * sleeps between transactions where the kernel model's halt-polls), so the kthread cell's 1.8
 * judged none of its repeats (docs/bench.md). */
#define VQS_KSIM_SEED2023_AUTO_CPUS 1.6
/* -EINVAL for bad options or CPUs this process may not use. Threads: any; pins only the threads
 * it creates. */
VQS_API int vqs_ksim_seed2023_run(const struct vqs_ksim_seed2023_opts *o,
				  struct vqs_ksim_seed2023_result *r);
/* The drop and auto verdicts, their ratios and judged counts, from r's cells (what
 * vqs_ksim_seed2023_run does after the runs; the worker masks, task_inherits_pin and
 * drop_expected are left alone): for cells a caller kept or built. Threads: any. */
VQS_API void vqs_ksim_seed2023_judge(struct vqs_ksim_seed2023_result *r);
/* Print the table side by side and one verdict line per workload. Threads: any. */
VQS_API void vqs_ksim_seed2023_print(FILE *f, const struct vqs_ksim_seed2023_opts *o,
				     const struct vqs_ksim_seed2023_result *r);

/* Margin the verdicts use: an effect counts when the ratio is beyond 1 +- this (0.10). */
#define VQS_KSIM_VERDICT_MARGIN 0.10

#ifdef __cplusplus
}
#endif
#endif
