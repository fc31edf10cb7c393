/* SPDX-License-Identifier: MIT */
#include "ksim/peer.h"

#include <errno.h>
#include <string.h>

#define PEER_WAIT_MAX_NS 2000000u
#define SEND_BURST 64u

static void peer_in_ready(void *opaque) { ksim_unpark(opaque); }

int ksim_peer_init(struct ksim_peer *p, struct ksim_nic *nic, enum ksim_peer_mode mode, int cpu)
{
	memset(p, 0, sizeof(*p));
	p->nic = nic;
	p->mode = mode;
	p->cpu = cpu;
	atomic_init(&p->transactions, 0);
	int rc = ksim_park_init(&p->park);
	if (rc)
		return rc;
	if ((rc = ksim_tun_init(&p->in, KSIM_TUN_SIZE, nic->world->costs.ring_lock_ns))) {
		ksim_park_fini(&p->park);
		return rc;
	}
	p->in_ready = (struct ksim_tun_notify){peer_in_ready, &p->park};
	ksim_tun_set_notify(&p->in, &p->in_ready);
	nic->tx_dst = &p->in;
	return 0;
}

void ksim_peer_fini(struct ksim_peer *p)
{
	ksim_tun_fini(&p->in);
	ksim_park_fini(&p->park);
}

static void send_pkt(struct ksim_peer *p, uint16_t flow, uint16_t kind, uint32_t seq)
{
	struct ksim_world *w = p->nic->world;
	ksim_burn_ns(w->costs.send_pkt_ns);
	struct ksim_skb *skb = ksim_pkt_new(w, flow, kind, seq);
	if (skb && ksim_tun_produce(&p->nic->rx_tun, skb))
		ksim_net_drop(w, skb, &w->drops_ring);
}

/* The external host is another machine: whatever the host's costs, its waits take none of the
 * host's CPUs (a spinning peer would take the CPU the kthread-mode worker runs on beside the
 * vCPU's), so it sleeps for real. */
static void peer_wait(struct ksim_peer *p, bool (*ready)(struct ksim_peer *), uint64_t wake_at)
{
	uint64_t now = vqs_now_ns();
	if (wake_at > now + PEER_WAIT_MAX_NS)
		wake_at = now + PEER_WAIT_MAX_NS;
	ksim_park_prepare(&p->park);
	if (ready(p) || atomic_load(&p->nic->world->stop))
		ksim_park_cancel(&p->park);
	else
		ksim_park_wait(&p->park, VQS_KSIM_WAIT_BLOCK, wake_at > now ? wake_at - now : 0, 0);
}

static bool stream_ready(struct ksim_peer *p)
{
	uint64_t ignored = UINT64_MAX;
	return ksim_flow_can_send(&p->nic->world->flows[0], vqs_now_ns(), &ignored);
}

static bool response_ready(struct ksim_peer *p)
{
	ksim_tun_arm(&p->in);
	return !ksim_tun_empty(&p->in);
}

static void run_stream(struct ksim_peer *p)
{
	struct ksim_world *w = p->nic->world;
	struct ksim_flow *f = &w->flows[0];
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		uint64_t wake_at = UINT64_MAX;
		unsigned sent = 0;
		while (ksim_flow_can_send(f, vqs_now_ns(), &wake_at) && sent < SEND_BURST) {
			send_pkt(p, 0, KSIM_PKT_DATA, ksim_flow_sent(f));
			sent++;
		}
		if (!sent)
			peer_wait(p, stream_ready, wake_at);
	}
}

static void run_rr(struct ksim_peer *p)
{
	struct ksim_world *w = p->nic->world;
	uint32_t seq = 0;
	while (!atomic_load_explicit(&w->stop, memory_order_relaxed)) {
		send_pkt(p, 0, KSIM_PKT_REQ, seq);
		bool answered = false;
		while (!answered && !atomic_load_explicit(&w->stop, memory_order_relaxed)) {
			struct ksim_skb *skb;
			if (!ksim_tun_consume(&p->in, &skb, 1)) {
				peer_wait(p, response_ready, UINT64_MAX);
				continue;
			}
			struct ksim_pkt_tag tag;
			ksim_pkt_tag(skb->data, &tag);
			answered = skb->len >= sizeof(tag) && tag.kind == KSIM_PKT_RESP &&
				   tag.seq == seq;
			ksim_skb_free(skb);
		}
		if (answered)
			atomic_fetch_add_explicit(&p->transactions, 1, memory_order_relaxed);
		seq++;
	}
}

static void *peer_main(void *arg)
{
	struct ksim_peer *p = arg;
	if (p->mode == KSIM_PEER_STREAM)
		run_stream(p);
	else
		run_rr(p);
	return NULL;
}

int ksim_peer_start(struct ksim_peer *p)
{
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc)
		return -rc;
	if (p->cpu >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(p->cpu, &one);
		rc = pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	}
	if (!rc)
		rc = pthread_create(&p->thread, &attr, peer_main, p);
	pthread_attr_destroy(&attr);
	return -rc;
}

void ksim_peer_join(struct ksim_peer *p)
{
	ksim_efd_signal(p->park.efd);
	pthread_join(p->thread, NULL);
}
