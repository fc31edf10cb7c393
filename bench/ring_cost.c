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
 * DPDK driver with several memsegs) and alternates the chains of a batch between them. Public API
 * only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv)
{
	bool in_order = false, single = false, by_id = false, regions2 = false;
	bool bad = argc < 4 || argc > 9;
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
							 : NULL;
		bad = !opt || *opt;
		if (opt)
			*opt = true;
	}
	if (bad || (strcmp(argv[1], "split") && strcmp(argv[1], "packed")) ||
	    (strcmp(argv[2], "1") && strcmp(argv[2], "2"))) {
		fprintf(stderr, "usage: vqs-ring-cost split|packed 1|2 BATCHES [bN] [inorder] [single] "
				"[byid] [regions2]\n");
		return 2;
	}
	unsigned descs = (unsigned)atoi(argv[2]);
	long batches = atol(argv[3]);
	static struct rig r;
	r.by_id = by_id;
	r.batch = batch ? batch : MOST;
	const unsigned bn = r.batch;
	if (rig_init(&r, !strcmp(argv[1], "packed"), in_order, regions2)) {
		fprintf(stderr, "vqs-ring-cost: setup failed\n");
		return 1;
	}
	/* the writable buffer below, filled whole (or nothing written) */
	for (unsigned i = 0; i < bn; i++)
		r.written[i] = in_order ? (descs == 2 ? BUF - 64 : 64) : 0;
	static int token;
	struct vqs_drv_buf bufs[MOST * 2];
	void *tokens[MOST];
	for (unsigned i = 0; i < bn; i++)
		tokens[i] = &token;
	unsigned long served = 0;
	for (long b = 0; b < batches; b++) {
		unsigned k = 0;
		for (unsigned i = 0; i < bn; i++) {
			unsigned j = (unsigned)((b * bn + i) % NUM);
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
			for (unsigned i = 0; i < bn; i++)
				if (vqs_drv_add(r.drv, &bufs[i * descs], out, 1, &token, false))
					return 1;
		} else if (vqs_drv_add_batch(r.drv, bufs, out, 1, tokens, bn, false) !=
			   (int)bn) {
			return 1;
		}
		vqs_drv_kick_prepare(r.drv);
		unsigned n = device_batch(&r), got_n = 0;
		void *got[MOST];
		uint32_t len[MOST];
		if (single) {
			while (got_n < n && vqs_drv_get_used(r.drv, &len[got_n]))
				got_n++;
		} else {
			got_n = vqs_drv_get_used_batch(r.drv, got, len, bn);
		}
		if (got_n != n)
			return 1;
		served += n;
	}
	printf("%lu requests in batches of %u, %u descriptor(s) each\n", served, bn, descs);
	vqs_vq_destroy(r.dev);
	vqs_drv_vq_destroy(r.drv);
	vqs_mem_destroy(r.mem);
	vqs_gmem_destroy(r.gmem);
	return served == (unsigned long)batches * bn ? 0 : 1;
}
