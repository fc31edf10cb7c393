/* SPDX-License-Identifier: MIT */
/*
 * vqs-ring-cost: the device side's work per request, for an instruction count. One thread drives
 * both sides of a ring of 256 entries: the driver adds a batch of chains (one or two descriptors
 * each), then device_batch() runs one ring session on them (begin, pop, fill, end: flush and the
 * call decision), as the scheduler's turn does. Only device_batch is meant to be counted:
 *
 *   valgrind --tool=callgrind --toggle-collect=device_batch vqs-ring-cost split 1 1000
 *
 * gives the instructions of 1000 batches of 64 one-descriptor chains (divide by 64000), per
 * function with callgrind_annotate --inclusive=yes. The driver's side of a batch is one
 * vqs_drv_add_batch, one vqs_drv_kick_prepare and one vqs_drv_get_used_batch: toggling on those
 * three instead counts the driver's instructions. The argument single makes the driver add
 * and reap one request a call instead (vqs_drv_add, vqs_drv_get_used: the calls of a driver
 * that has one request at a time), counted with those two toggled on with vqs_drv_kick_prepare.
 * The argument bN (b1 to b64) makes the batches N chains instead: b1 counts the session a
 * request at a time pays whole (an rr transaction's device side). The argument inorder
 * negotiates VIRTIO_F_IN_ORDER with vqs_vq_config.in_order_fold and fills every buffer whole,
 * so that a split batch is answered by one used entry. The argument regions2
 * maps guest memory as two regions (a guest with more than 4G of RAM or hotplugged memory, or a
 * DPDK driver with several memsegs) and alternates the chains of a batch between them. The
 * argument sched makes the device side the scheduler's instead (vqs_sched, dedicated policy,
 * batch_max from bN, the benchmark's null handler): each round the driver adds 64 chains,
 * kicks when the ring asks, and waits for them; counting
 *
 *   valgrind --tool=callgrind --toggle-collect=sched_run_taken vqs-ring-cost split 1 1000 sched b1
 *
 * gives the worker's turns, the ring session's calls in them included, for 64000 requests: what
 * the scheduler adds to the ring session, whose calls callgrind_annotate --inclusive=yes lists
 * apart (device_batch with b1 and byid makes the same calls, but on one chain added a batch, so
 * each of its begins reads the avail index). The turn that finds the round's chains after a
 * kick, and its empty poll and re-arm at the end, are in the count, once a round. Public API
 * only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <vqsched/vqsched.h>

#define NUM 256u
#define MOST 64u /* chains a batch at most (the default) */
#define GPA 0x100000ull
#define ARENA (4u << 20)
#define BUF 256u

struct rig {
	struct vqs_gmem *gmem;
	struct vqs_mem *mem;
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	uint64_t bufs;
	bool by_id;
	unsigned batch; /* chains a batch */
	/* by place: the first batch, set before each pop; by id: one per id, set once */
	struct vqs_elem elems[NUM];
	uint16_t ids[MOST];
	const struct vqs_elem *fill[MOST];
	uint32_t written[MOST];
	struct iovec iov[NUM][4];
};

/* The arena as regions: whole, or (two) split in the middle of the buffers, so that buffer slot
 * NUM / 2 is the second region's first byte. */
static int rig_map(struct rig *r, bool two)
{
	struct vqs_mem_region reg[2];
	vqs_gmem_region(r->gmem, &reg[0]);
	if (!two)
		return vqs_mem_set(r->mem, reg, 1);
	uint64_t first = r->bufs + (uint64_t)(NUM / 2) * BUF - reg[0].gpa;
	reg[1] = reg[0];
	reg[0].size = first;
	reg[1].gpa += first;
	reg[1].uaddr += first;
	reg[1].size -= first;
	reg[1].host = (char *)reg[1].host + first;
	return vqs_mem_set(r->mem, reg, 2);
}

static int rig_init(struct rig *r, bool packed, bool in_order, bool two_regions)
{
	uint64_t f = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
		     (packed ? VQS_BIT(VQS_F_RING_PACKED) : 0) |
		     (in_order ? VQS_BIT(VQS_F_IN_ORDER) : 0);
	if (vqs_gmem_create(&r->gmem, GPA, ARENA) || vqs_mem_create(&r->mem))
		return -1;
	struct vqs_drv_vq_config dc = {.size = sizeof(dc), .num = NUM, .features = f,
				       .gmem = r->gmem};
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = NUM, .features = f,
				   .addr_space = VQS_ADDR_GPA, .mem = r->mem,
				   .in_order_fold = in_order};
	if (vqs_drv_vq_create(&r->drv, &dc))
		return -1;
	/* the rings lie below the buffers, in the first region */
	r->bufs = vqs_gmem_alloc(r->gmem, NUM * BUF, 4096);
	if (!r->bufs || rig_map(r, two_regions))
		return -1;
	vqs_drv_vq_addrs(r->drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	if (vqs_vq_create(&r->dev) || vqs_vq_configure(r->dev, &vc))
		return -1;
	for (unsigned i = 0; i < MOST; i++)
		r->fill[i] = &r->elems[i];
	for (unsigned i = 0; i < NUM; i++)
		r->elems[i] = (struct vqs_elem){.iov = r->iov[i], .iov_cap = 4};
	return 0;
}

/* The device's half of one batch, one ring session: begin, pop, fill (nothing written), end.
 * By place, each element gets its iovec storage before the pop, the inputs of a pop; by id (the
 * scheduler's pop_batch: each chain in the request of its id), the elements keep theirs and the
 * fill takes the popped ids' elements. The pop writes every other field. */
__attribute__((noinline)) static unsigned device_batch(struct rig *r)
{
	if (!r->by_id)
		for (unsigned i = 0; i < r->batch; i++) {
			r->elems[i].iov = r->iov[i];
			r->elems[i].iov_cap = 4;
		}
	struct vqs_vq_session ss;
	bool call;
	int n = vqs_vq_session_begin(r->dev, &ss);
	if (n > 0)
		n = vqs_vq_session_pop(&ss,
				       &(struct vqs_pop_to){.base = r->elems, .by_id = r->by_id,
							    .ids = r->by_id ? r->ids : NULL},
				       r->batch);
	if (n > 0 && r->by_id)
		for (int i = 0; i < n; i++)
			r->fill[i] = &r->elems[r->ids[i]];
	if (n > 0)
		vqs_vq_session_fill(&ss, r->fill, r->written, (unsigned)n);
	vqs_vq_session_end(&ss, &call);
	return n > 0 ? (unsigned)n : 0;
}

static const uint32_t none[MOST]; /* nothing written */

/* The benchmark's null handler (workload.c): the whole batch completed, with one call. */
static unsigned null_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			     void *opaque)
{
	(void)q;
	(void)opaque;
	if (n == 1)
		vqs_req_complete(reqs[0], 0);
	else
		vqs_req_complete_batch(reqs, none, n);
	return n;
}

/* The scheduler serving the rig's device queue, kicked through *kick_fd. */
static int sched_init(struct rig *r, unsigned batch, struct vqs_sched **s, struct vqs_queue **q,
		      int *kick_fd)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = VQS_POLICY_DEDICATED;
	so.batch_max = batch;
	struct vqs_queue_opts qo;
	vqs_queue_opts_init(&qo);
	qo.vq = r->dev;
	qo.kick_fd = *kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	qo.call_fd = -1;
	qo.handler = null_handler;
	qo.iov_per_req = 4;
	qo.prefetch_lines = 0;
	qo.handler_nonblocking = true;
	if (*kick_fd < 0 || vqs_sched_create(s, &so))
		return -1;
	return vqs_sched_attach(*s, &qo, q);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The scheduler's half of a round of n chains: a kick if the ring asks for one, then the wait
 * for their used entries (their tokens and lengths into got, len), a minute at most (under
 * valgrind a round takes milliseconds). Returns how many came. */
static unsigned sched_round(struct rig *r, int kick_fd, unsigned n, void **got, uint32_t *len)
{
	uint64_t one = 1;
	if (vqs_drv_kick_prepare(r->drv) && write(kick_fd, &one, sizeof(one)) != sizeof(one))
		return 0;
	unsigned k = 0;
	for (uint64_t until = now_ns() + 60000000000ull; k < n && now_ns() < until;) {
		unsigned m = vqs_drv_get_used_batch(r->drv, got + k, len + k, n - k);
		if (!m)
			sched_yield();
		k += m;
	}
	return k;
}

int main(int argc, char **argv)
{
	bool in_order = false, single = false, by_id = false, regions2 = false, sched = false;
	bool bad = argc < 4 || argc > 10;
	unsigned batch = 0;
	for (int a = 4; !bad && a < argc; a++) {
		char *end;
		if (argv[a][0] == 'b' && argv[a][1] >= '1' && argv[a][1] <= '9') {
			unsigned long v = strtoul(argv[a] + 1, &end, 10);
			bad = *end || v > MOST || batch;
			batch = (unsigned)v;
			continue;
		}
		bool *opt = !strcmp(argv[a], "inorder") ? &in_order
			    : !strcmp(argv[a], "single") ? &single
			    : !strcmp(argv[a], "byid")	 ? &by_id
			    : !strcmp(argv[a], "regions2") ? &regions2
			    : !strcmp(argv[a], "sched")	 ? &sched
							 : NULL;
		bad = !opt || *opt;
		if (opt)
			*opt = true;
	}
	if (bad || (strcmp(argv[1], "split") && strcmp(argv[1], "packed")) ||
	    (strcmp(argv[2], "1") && strcmp(argv[2], "2"))) {
		fprintf(stderr, "usage: vqs-ring-cost split|packed 1|2 BATCHES [bN] [inorder] [single] "
				"[byid] [regions2] [sched]\n");
		return 2;
	}
	unsigned descs = (unsigned)atoi(argv[2]);
	long batches = atol(argv[3]);
	static struct rig r;
	r.by_id = by_id;
	r.batch = batch ? batch : MOST;
	const unsigned bn = r.batch;
	/* chains a round: the scheduler's turn takes batches of bn out of a round of 64 */
	const unsigned per = sched ? MOST : bn;
	struct vqs_sched *s = NULL;
	struct vqs_queue *q = NULL;
	int kick_fd = -1;
	if (rig_init(&r, !strcmp(argv[1], "packed"), in_order, regions2) ||
	    (sched && sched_init(&r, bn, &s, &q, &kick_fd))) {
		fprintf(stderr, "vqs-ring-cost: setup failed\n");
		return 1;
	}
	/* the writable buffer below, filled whole (or nothing written) */
	for (unsigned i = 0; i < bn; i++)
		r.written[i] = in_order ? (descs == 2 ? BUF - 64 : 64) : 0;
	static int token;
	struct vqs_drv_buf bufs[MOST * 2];
	void *tokens[MOST];
	for (unsigned i = 0; i < per; i++)
		tokens[i] = &token;
	unsigned long served = 0;
	for (long b = 0; b < batches; b++) {
		unsigned k = 0;
		for (unsigned i = 0; i < per; i++) {
			unsigned j = (unsigned)((b * per + i) % NUM);
			/* two regions: every other chain in the second */
			if (regions2)
				j = (j & 1) * (NUM / 2) + j / 2;
			uint64_t a = r.bufs + (uint64_t)j * BUF;
			/* a request and its response buffer, or one buffer for both ways */
			bufs[k++] = (struct vqs_drv_buf){a, 64};
			if (descs == 2)
				bufs[k++] = (struct vqs_drv_buf){a + 64, BUF - 64};
		}
		unsigned out = descs == 2 ? 1 : 0;
		if (single) {
			for (unsigned i = 0; i < per; i++)
				if (vqs_drv_add(r.drv, &bufs[i * descs], out, 1, &token, false))
					return 1;
		} else if (vqs_drv_add_batch(r.drv, bufs, out, 1, tokens, per, false) !=
			   (int)per) {
			return 1;
		}
		void *got[MOST];
		uint32_t len[MOST];
		unsigned n, got_n = 0;
		if (sched) {
			n = got_n = sched_round(&r, kick_fd, per, got, len);
		} else {
			vqs_drv_kick_prepare(r.drv);
			n = device_batch(&r);
			if (single) {
				while (got_n < n && vqs_drv_get_used(r.drv, &len[got_n]))
					got_n++;
			} else {
				got_n = vqs_drv_get_used_batch(r.drv, got, len, bn);
			}
		}
		if (n != per || got_n != n)
			return 1;
		served += n;
	}
	printf("%lu requests in batches of %u, %u descriptor(s) each\n", served, bn, descs);
	if (s) {
		vqs_sched_detach(q);
		vqs_sched_destroy(s);
		close(kick_fd);
	}
	vqs_vq_destroy(r.dev);
	vqs_drv_vq_destroy(r.drv);
	vqs_mem_destroy(r.mem);
	vqs_gmem_destroy(r.gmem);
	return served == (unsigned long)batches * per ? 0 : 1;
}
