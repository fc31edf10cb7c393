/* SPDX-License-Identifier: MIT */
/*
 * vqs-bench-mem: the memory map's costs on the data path, in ns per operation (median of the
 * repeats, run interleaved so a neighbour's load hits every case alike).
 *  - lookup: vqs_mem_translate of a 1500-byte buffer in tables of 8, 64 and 509 regions, with
 *    buffers that stay in one region (the per-queue hint hits) and buffers in a random region
 *    each (binary search every time);
 *  - log: a 64-chain batch popped, filled (1500 bytes written each) and flushed on one queue,
 *    in the read-side sections a scheduler worker uses (the pop inside one, fill outside),
 *    with the dirty log off and on, so the cost logging adds per chain reads directly.
 * For instruction counts that repeat exactly, run one case under valgrind --tool=callgrind with
 * --quick --only CASE (CASE: 8-same, 8-random, 64-same, ..., 509-random, log-off, log-on).
 * Usage: vqs-bench-mem [--quick] [--repeat N] [--only CASE]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <vqsched/vqsched.h>

#define REGION (2ull << 20)
#define BUF 1500u

static unsigned repeat = 5;
static const char *only; /* one case, or NULL for all */

static bool wanted(const char *name) { return !only || !strcmp(only, name); }
static uint64_t lookups = 2000000, batches = 20000;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* A map of n regions of 2 MiB, with gaps between them, over reserved (never touched) memory. */
static struct vqs_mem *map_of(unsigned n, void *host)
{
	struct vqs_mem *m;
	struct vqs_mem_region *r = calloc(n, sizeof(*r));
	if (!r || vqs_mem_create(&m))
		exit(1);
	for (unsigned i = 0; i < n; i++)
		r[i] = (struct vqs_mem_region){ .gpa = 0x100000000ull + i * 2 * REGION, .size = REGION,
						.uaddr = 0x7f0000000000ull + i * 2 * REGION,
						.host = (char *)host + i * REGION };
	if (vqs_mem_set(m, r, n))
		exit(1);
	free(r);
	return m;
}

/* ns per translation; random: each buffer in a random region. */
static double lookup_ns(struct vqs_mem *m, unsigned n, bool random)
{
	uint64_t seed = 88172645463325252ull, sink = 0;
	unsigned hint = 0;
	struct iovec iov;
	vqs_mem_read_lock();
	const struct vqs_mem_table *t = vqs_mem_current(m);
	uint64_t t0 = vqs_now_ns();
	for (uint64_t i = 0; i < lookups; i++) {
		uint64_t x = rng(&seed);
		unsigned reg = random ? (unsigned)(x % n) : 0;
		uint64_t gpa = 0x100000000ull + reg * 2 * REGION + (x >> 32) % (REGION - BUF);
		if (vqs_mem_translate(t, gpa, BUF, &iov, 1, &hint) == 1)
			sink += (uintptr_t)iov.iov_base;
	}
	uint64_t ns = vqs_now_ns() - t0;
	vqs_mem_read_unlock();
	if (sink == 1)
		puts("");
	return (double)ns / (double)lookups;
}

static void bench_lookup(void)
{
	static const unsigned sizes[] = { 8, 64, 509 };
	void *host = mmap(NULL, 509 * REGION, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (host == MAP_FAILED)
		exit(1);
	struct vqs_mem *maps[3];
	double v[3][2][64];
	for (unsigned s = 0; s < 3; s++)
		maps[s] = map_of(sizes[s], host);
	char name[3][2][16];
	for (unsigned s = 0; s < 3; s++)
		for (unsigned k = 0; k < 2; k++)
			snprintf(name[s][k], sizeof(name[s][k]), "%u-%s", sizes[s],
				 k ? "random" : "same");
	for (unsigned r = 0; r < repeat; r++)
		for (unsigned s = 0; s < 3; s++)
			for (unsigned k = 0; k < 2; k++)
				v[s][k][r] = wanted(name[s][k]) ? lookup_ns(maps[s], sizes[s], k) : 0;
	printf("lookup (ns per 1500-byte translation, median of %u x %llu):\n", repeat,
	       (unsigned long long)lookups);
	printf("  %-8s %12s %12s\n", "regions", "same-region", "random");
	for (unsigned s = 0; s < 3; s++) {
		printf("  %-8u %12.2f %12.2f\n", sizes[s], median(v[s][0], repeat),
		       median(v[s][1], repeat));
		vqs_mem_destroy(maps[s]);
	}
	munmap(host, 509 * REGION);
}

/* ns per chain of pop (batches of 64), fill (1500 bytes written), flush. */
static double chain_ns(struct vqs_gmem *g, struct vqs_mem *m, struct vqs_drv_vq *drv,
		       struct vqs_vq *dev, const uint64_t *bufs)
{
	static struct iovec iov[64];
	static struct vqs_elem el[64];
	static uint32_t written[64];
	static const struct vqs_elem *pel[64];
	static int token;
	uint64_t total = 0;
	for (uint64_t b = 0; b < batches; b++) {
		for (unsigned i = 0; i < 64; i++) {
			struct vqs_drv_buf d = { bufs[i], BUF };
			if (vqs_drv_add(drv, &d, 0, 1, &token, false))
				exit(1);
		}
		vqs_drv_kick_prepare(drv);
		uint64_t t0 = vqs_now_ns();
		for (unsigned i = 0; i < 64; i++) {
			el[i] = (struct vqs_elem){ .iov = &iov[i], .iov_cap = 1 };
			pel[i] = &el[i];
			written[i] = BUF;
		}
		/* one ring session for the batch, as a scheduler worker's turn: the pop inside its
		 * section, the handler outside it (paused), fill and end entering it again */
		struct vqs_vq_session ss;
		bool call;
		struct vqs_pop_to at = {.base = el, .stride = sizeof(el[0])};
		if (vqs_vq_session_begin(dev, &ss) != 64 || vqs_vq_session_pop(&ss, &at, 64) != 64)
			exit(1);
		vqs_vq_session_pause(&ss);
		if (vqs_vq_session_fill(&ss, pel, written, 64) != 64)
			exit(1);
		vqs_vq_session_end(&ss, &call);
		total += vqs_now_ns() - t0;
		uint32_t len;
		while (vqs_drv_get_used(drv, &len))
			;
	}
	return (double)total / (double)(batches * 64);
}

static void bench_log(void)
{
	struct vqs_gmem *g;
	struct vqs_mem *m;
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	struct vqs_mem_region r;
	if (vqs_gmem_create(&g, 0x100000, 8u << 20) || vqs_mem_create(&m))
		exit(1);
	vqs_gmem_region(g, &r);
	struct vqs_drv_vq_config dc = { .size = sizeof(dc), .num = 256,
					.features = VQS_BIT(VQS_F_VERSION_1), .gmem = g };
	if (vqs_mem_set(m, &r, 1) || vqs_drv_vq_create(&drv, &dc) || vqs_vq_create(&dev))
		exit(1);
	struct vqs_vq_config vc = { .size = sizeof(vc), .num = 256, .features = dc.features,
				    .addr_space = VQS_ADDR_GPA, .mem = m, .log_ring = true };
	vqs_drv_vq_addrs(drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	vc.log_addr = vc.device_addr;
	if (vqs_vq_configure(dev, &vc))
		exit(1);
	uint64_t bufs[64];
	for (unsigned i = 0; i < 64; i++)
		bufs[i] = vqs_gmem_alloc(g, 2048, 64);
	static uint8_t bitmap[(0x100000 + (8u << 20)) / 4096 / 8];
	struct vqs_mem_log l = { .bitmap = bitmap, .len = sizeof(bitmap) };
	if (vqs_mem_set_log(m, &l))
		exit(1);
	double v[2][64];
	for (unsigned rep = 0; rep < repeat; rep++)
		for (unsigned on = 0; on < 2; on++) {
			vqs_mem_log_enable(m, on);
			v[on][rep] = wanted(on ? "log-on" : "log-off")
					     ? chain_ns(g, m, drv, dev, bufs)
					     : 0;
		}
	double off = median(v[0], repeat), on = median(v[1], repeat);
	printf("dirty log (ns per chain: pop in batches of 64, fill 1500 bytes, flush; median of "
	       "%u x %llu chains):\n  off %.2f  on %.2f  (+%.2f ns per chain while logging)\n",
	       repeat, (unsigned long long)(batches * 64), off, on, on - off);
	vqs_vq_destroy(dev);
	vqs_drv_vq_destroy(drv);
	vqs_mem_destroy(m);
	vqs_gmem_destroy(g);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			lookups = 20000;
			batches = 200;
			repeat = 1;
		} else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
			only = argv[++i];
		} else if (!strcmp(argv[i], "--repeat") && i + 1 < argc) {
			repeat = (unsigned)atoi(argv[++i]);
			if (repeat < 1 || repeat > 64)
				repeat = 5;
		} else {
			fprintf(stderr, "usage: %s [--quick] [--repeat N] [--only CASE]\n", argv[0]);
			return 2;
		}
	}
	if (VQS_CHECK_VERSION())
		return 1;
	bench_lookup();
	bench_log();
	return 0;
}
