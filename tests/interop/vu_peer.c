/* SPDX-License-Identifier: MIT */
/*
 * The library's vhost-user frontend against a third-party backend (DPDK's net_vhost in testpmd
 * macswap mode): send `count` 64-byte frames on the transmit queue, expect each back on the
 * receive queue with source and destination swapped and its payload intact.
 *   vu_peer SOCKET COUNT     exit 0 when every frame came back
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vqsched/vqsched.h>

#define HDR 12u
#define LEN 64u
#define RXQ 0
#define TXQ 1

static const uint8_t A[6] = { 2, 0, 0, 0, 0, 0xa }, B[6] = { 2, 0, 0, 0, 0, 0xb };

static void kick(struct vqs_vu_frontend *f, struct vqs_drv_vq *dq, unsigned q)
{
	uint64_t one = 1;
	if (vqs_drv_kick_prepare(dq) && write(vqs_vu_frontend_kick_fd(f, q), &one, 8) != 8)
		perror("kick");
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	unsigned count = (unsigned)atoi(argv[2]);
	struct vqs_vu_frontend_opts o;
	vqs_vu_frontend_opts_init(&o);
	o.path = argv[1];
	o.num_queues = 2;
	o.queue_size = 256;
	o.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(15) /* MRG_RXBUF */;
	o.mem_size = 16u << 20;
	o.timeout_ms = 10000;
	struct vqs_vu_frontend *f;
	int err = vqs_vu_frontend_create(&f, &o);
	if (!err)
		err = vqs_vu_frontend_connect(f);
	if (!err)
		err = vqs_vu_frontend_setup(f);
	if (err) {
		fprintf(stderr, "vu_peer: connect/setup: %s\n", strerror(-err));
		return 1;
	}
	printf("vu_peer: features 0x%llx\n", (unsigned long long)vqs_vu_frontend_features(f));
	struct vqs_gmem *g = vqs_vu_frontend_gmem(f);
	struct vqs_drv_vq *rx = vqs_vu_frontend_vq(f, RXQ), *tx = vqs_vu_frontend_vq(f, TXQ);
	/* Receive buffers are recycled; transmit buffers too, one per ring slot. */
	for (unsigned i = 0; i < 128; i++) {
		struct vqs_drv_buf b = { .gpa = vqs_gmem_alloc(g, 2048, 64), .len = 2048 };
		vqs_drv_add(rx, &b, 0, 1, (void *)(uintptr_t)b.gpa, false);
	}
	kick(f, rx, RXQ);
	uint64_t txbuf[256];
	unsigned txfree = 0;
	for (unsigned i = 0; i < 256; i++)
		txbuf[txfree++] = vqs_gmem_alloc(g, HDR + LEN, 64);
	unsigned sent = 0, got = 0, bad = 0;
	uint64_t deadline = vqs_now_ns() + 30000000000ull;
	while (got < count && vqs_now_ns() < deadline) {
		uint32_t len;
		void *tok;
		while ((tok = vqs_drv_get_used(tx, &len)))
			txbuf[txfree++] = (uint64_t)(uintptr_t)tok;
		/* Keep a window of 32 frames in flight: a receiver short of buffers would drop. */
		while (sent < count && sent - got < 32 && txfree) {
			uint64_t gpa = txbuf[--txfree];
			uint8_t *p = vqs_gmem_host(g, gpa, HDR + LEN);
			memset(p, 0, HDR + LEN);
			memcpy(p + HDR, B, 6);
			memcpy(p + HDR + 6, A, 6);
			p[HDR + 12] = 0x88;
			p[HDR + 13] = 0xb5;
			memcpy(p + HDR + 14, &sent, 4);
			struct vqs_drv_buf b = { .gpa = gpa, .len = HDR + LEN };
			if (vqs_drv_add(tx, &b, 1, 0, (void *)(uintptr_t)gpa, false)) {
				txbuf[txfree++] = gpa;
				break;
			}
			sent++;
		}
		kick(f, tx, TXQ);
		while ((tok = vqs_drv_get_used(rx, &len))) {
			uint8_t *p = vqs_gmem_host(g, (uint64_t)(uintptr_t)tok, len);
			uint32_t seq;
			memcpy(&seq, p + HDR + 14, 4);
			if (len != HDR + LEN || memcmp(p + HDR, A, 6) || memcmp(p + HDR + 6, B, 6) || seq != got)
				bad++;
			got++;
			struct vqs_drv_buf b = { .gpa = (uint64_t)(uintptr_t)tok, .len = 2048 };
			vqs_drv_add(rx, &b, 0, 1, tok, false);
			kick(f, rx, RXQ);
		}
		usleep(100);
	}
	printf("vu_peer: sent %u received %u bad %u\n", sent, got, bad);
	vqs_vu_frontend_disconnect(f, true);
	vqs_vu_frontend_destroy(f);
	return got == count && !bad ? 0 : 1;
}
