/* SPDX-License-Identifier: MIT */
/*
 * The library's vhost-user frontend against a backend that returns each frame with source and
 * destination swapped (DPDK's net_vhost in testpmd macswap mode, or vqs-switch with such a
 * testpmd on another port): send `count` 64-byte frames on the transmit queue, each with its
 * sequence number and a payload derived from it, and expect each back on the receive queue, in
 * order, with the addresses swapped and every other byte as sent.
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

/* Frame seq from src to dst: Ethernet header, seq, then bytes that depend on seq and offset. */
static void frame(uint8_t *p, uint32_t seq, const uint8_t *dst, const uint8_t *src)
{
	memcpy(p, dst, 6);
	memcpy(p + 6, src, 6);
	p[12] = 0x88;
	p[13] = 0xb5;
	memcpy(p + 14, &seq, 4);
	for (unsigned i = 18; i < LEN; i++)
		p[i] = (uint8_t)(seq * 31u + i);
}

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
			memset(p, 0, HDR);
			frame(p + HDR, sent, B, A);
			struct vqs_drv_buf b = { .gpa = gpa, .len = HDR + LEN };
			if (vqs_drv_add(tx, &b, 1, 0, (void *)(uintptr_t)gpa, false)) {
				txbuf[txfree++] = gpa;
				break;
			}
			sent++;
		}
		kick(f, tx, TXQ);
		while ((tok = vqs_drv_get_used(rx, &len))) {
			uint8_t *p = vqs_gmem_host(g, (uint64_t)(uintptr_t)tok, len), want[LEN];
			frame(want, got, A, B);
			if (len != HDR + LEN || memcmp(p + HDR, want, LEN))
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
