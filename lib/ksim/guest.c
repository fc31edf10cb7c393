/* SPDX-License-Identifier: MIT */
#include "ksim/guest.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>

/* Longest halt without looking at the stop flag or a recovery timer. */
#define HALT_MAX_NS 2000000u
#define NAPI_BUDGET 64u
/* virtio-net refills RX buffers after a poll once more than half a budget is free. */
#define REFILL_MIN (NAPI_BUDGET / 2)

int ksim_pin_self(int cpu)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	return -pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
}

static void *token_of(unsigned i) { return (void *)(uintptr_t)(i + 1); }

/* The device hands tokens back; they are ours, but check the range before indexing. */
static bool index_of(void *tok, unsigned *i)
{
	uintptr_t v = (uintptr_t)tok;
	if (v < 1 || v > KSIM_QUEUE_NUM)
		return false;
	*i = (unsigned)(v - 1);
	return true;
}

static void kick(struct ksim_guest *g, unsigned q)
{
	struct ksim_world *w = g->nic->world;
	ksim_burn_ns(w->costs.exit_ns);
	ksim_efd_signal(g->nic->kick[q]);
	atomic_fetch_add_explicit(&w->kicks, 1, memory_order_relaxed);
}

static int post_rx(struct ksim_guest *g, unsigned i)
{
	struct vqs_drv_buf b = {.gpa = g->nic->buf_gpa[KSIM_RXQ] + (uint64_t)i * g->nic->buf_size,
				.len = g->nic->buf_size};
	return vqs_drv_add(g->nic->drv[KSIM_RXQ], &b, 0, 1, token_of(i), false);
}

static void deliver(struct ksim_guest *g, const uint8_t *buf, uint32_t len)
{
	struct ksim_world *w = g->nic->world;
	if (len < KSIM_VNET_HDR + sizeof(struct ksim_pkt_tag))
		return;
	struct ksim_pkt_tag tag;
	ksim_pkt_tag(buf + KSIM_VNET_HDR, &tag);
	ksim_burn_ns(w->costs.recv_pkt_ns);
	if (tag.kind == KSIM_PKT_DATA && (g->role & KSIM_GUEST_RECEIVER) && tag.flow < w->nflows) {
		ksim_flow_delivered(&w->flows[tag.flow]);
	} else if (tag.kind == KSIM_PKT_REQ && (g->role & KSIM_GUEST_RR_SERVER)) {
		g->resp_pending++;
		g->resp_seq = tag.seq;
	}
}

/* NAPI poll: up to a budget of received packets; then refill (and kick) once enough is free. */
static unsigned guest_rx(struct ksim_guest *g)
{
	struct vqs_drv_vq *rx = g->nic->drv[KSIM_RXQ];
	unsigned n = 0;
	uint32_t len;
	void *tok;
	while (n < NAPI_BUDGET && (tok = vqs_drv_get_used(rx, &len))) {
		unsigned i;
		if (!index_of(tok, &i))
			continue;
		const uint8_t *buf = ksim_nic_buf(g->nic, KSIM_RXQ, i);
		deliver(g, buf, len < g->nic->buf_size ? len : g->nic->buf_size);
		g->rx_refill[g->nrx_refill++] = i;
		n++;
	}
	if (g->nrx_refill >= REFILL_MIN) {
		while (g->nrx_refill)
			post_rx(g, g->rx_refill[--g->nrx_refill]);
		if (vqs_drv_kick_prepare(rx))
			kick(g, KSIM_RXQ);
	}
	return n;
}

/* The next packet to send: a pending response first, then a stream whose window allows. */
static bool next_packet(struct ksim_guest *g, uint64_t now, uint64_t *wake_at,
			struct ksim_pkt_tag *tag)
{
	if (g->resp_pending) {
		g->resp_pending--;
		*tag = (struct ksim_pkt_tag){.flow = 0, .kind = KSIM_PKT_RESP, .seq = g->resp_seq};
		return true;
	}
	if (!(g->role & KSIM_GUEST_SENDER))
		return false;
	struct ksim_world *w = g->nic->world;
	for (unsigned k = 0; k < w->nflows; k++) {
		unsigned f = (g->next_flow + k) % w->nflows;
		if (ksim_flow_can_send(&w->flows[f], now, wake_at)) {
			g->next_flow = f + 1;
			*tag = (struct ksim_pkt_tag){.flow = (uint16_t)f, .kind = KSIM_PKT_DATA,
						     .seq = ksim_flow_sent(&w->flows[f])};
			return true;
		}
	}
	return false;
}

static unsigned guest_tx(struct ksim_guest *g, uint64_t *wake_at)
{
	struct ksim_nic *nic = g->nic;
	struct vqs_drv_vq *tx = nic->drv[KSIM_TXQ];
	uint32_t len;
	void *tok;
	unsigned i, sent = 0;
	while ((tok = vqs_drv_get_used(tx, &len)))
		if (index_of(tok, &i))
			g->tx_free[g->ntx_free++] = i;
	struct ksim_pkt_tag tag;
	uint32_t pkt = nic->world->costs.pkt_bytes;
	while (g->ntx_free && next_packet(g, vqs_now_ns(), wake_at, &tag)) {
		i = g->tx_free[--g->ntx_free];
		uint8_t *buf = ksim_nic_buf(nic, KSIM_TXQ, i);
		memset(buf, 0, KSIM_VNET_HDR);
		memcpy(buf + KSIM_VNET_HDR, &tag, sizeof(tag));
		memset(buf + KSIM_VNET_HDR + sizeof(tag), (int)(tag.seq & 0xff), pkt);
		ksim_burn_ns(nic->world->costs.send_pkt_ns);
		struct vqs_drv_buf b = {.gpa = nic->buf_gpa[KSIM_TXQ] + (uint64_t)i * nic->buf_size,
					.len = KSIM_VNET_HDR + (uint32_t)sizeof(tag) + pkt};
		if (vqs_drv_add(tx, &b, 1, 0, token_of(i), false)) {
			g->tx_free[g->ntx_free++] = i;
			break;
		}
		sent++;
		if (vqs_drv_kick_prepare(tx))
			kick(g, KSIM_TXQ);
	}
	return sent;
}

/* Anything to do right now? Interrupts are enabled for what the guest waits on. */
static bool work_pending(struct ksim_guest *g, uint64_t *wake_at)
{
	struct ksim_nic *nic = g->nic;
	bool pending = g->resp_pending > 0;
	if (g->role & (KSIM_GUEST_RECEIVER | KSIM_GUEST_RR_SERVER))
		pending |= vqs_drv_enable_cb(nic->drv[KSIM_RXQ]);
	if (g->role & KSIM_GUEST_SENDER) {
		/* Out of TX buffers: wait for completions; else for acks (flows wake us). */
		if (!g->ntx_free)
			pending |= vqs_drv_enable_cb(nic->drv[KSIM_TXQ]);
		else
			for (unsigned f = 0; f < nic->world->nflows && !pending; f++)
				pending = ksim_flow_can_send(&nic->world->flows[f], vqs_now_ns(),
							     wake_at);
	}
	return pending;
}

/* Context switches away from this thread that it did not ask for by sleeping. */
static long switched_away(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_THREAD, &ru) ? -1 : ru.ru_nivcsw;
}

static void halt(struct ksim_guest *g)
{
	struct ksim_nic *nic = g->nic;
	const struct vqs_ksim_costs *c = &nic->world->costs;
	uint64_t now = vqs_now_ns();
	uint64_t wake_at = now + HALT_MAX_NS;
	ksim_park_prepare(&nic->irq);
	bool pending = work_pending(g, &wake_at) || atomic_load(&nic->world->stop);
	/*
	 * Halt polling looks for work while no other task wants this CPU: KVM ends it as soon as
	 * another task is runnable on the vCPU's run queue (kvm_vcpu_can_poll:
	 * single_task_running() && !need_resched()), so a worker woken there runs at once. User
	 * space cannot read its run queue; it offers the CPU (sched_yield) and ends the poll when
	 * the kernel switched to another task meanwhile (a yield that ran one, or a preemption,
	 * counts as an involuntary switch). A poll that held the CPU against such a worker until
	 * halt_poll_ns ran out made every TCP_RR transaction of task mode wait out the poll.
	 */
	long switches = c->halt_poll_ns ? switched_away() : 0;
	for (uint64_t end = now + c->halt_poll_ns; !pending && vqs_now_ns() < end;) {
		sched_yield();
		if (switched_away() != switches)
			break;
		pending = work_pending(g, &wake_at);
	}
	if (pending)
		ksim_park_cancel(&nic->irq);
	else
		ksim_park_wait(&nic->irq, c->wait, wake_at > now ? wake_at - now : 0, c->wake_ns);
	vqs_drv_disable_cb(nic->drv[KSIM_RXQ]);
	vqs_drv_disable_cb(nic->drv[KSIM_TXQ]);
}

static void *vcpu_main(void *p)
{
	struct ksim_guest *g = p;
	struct ksim_nic *nic = g->nic;
	while (!atomic_load_explicit(&nic->world->stop, memory_order_relaxed)) {
		uint64_t wake_at = UINT64_MAX;
		unsigned did = 0;
		if (g->role & (KSIM_GUEST_RECEIVER | KSIM_GUEST_RR_SERVER))
			did += guest_rx(g);
		if ((g->role & KSIM_GUEST_SENDER) || g->resp_pending)
			did += guest_tx(g, &wake_at);
		if (!did)
			halt(g);
	}
	return NULL;
}

int ksim_guest_start(struct ksim_guest *g, struct ksim_nic *nic, unsigned role, int cpu)
{
	memset(g, 0, sizeof(*g));
	g->nic = nic;
	g->role = role;
	g->cpu = cpu;
	for (unsigned i = 0; i < KSIM_QUEUE_NUM; i++)
		g->tx_free[g->ntx_free++] = KSIM_QUEUE_NUM - 1 - i;
	vqs_drv_disable_cb(nic->drv[KSIM_TXQ]);
	if (role & (KSIM_GUEST_RECEIVER | KSIM_GUEST_RR_SERVER)) {
		for (unsigned i = 0; i < KSIM_QUEUE_NUM; i++) {
			int rc = post_rx(g, i);
			if (rc)
				return rc;
		}
		if (vqs_drv_kick_prepare(nic->drv[KSIM_RXQ]))
			ksim_efd_signal(nic->kick[KSIM_RXQ]);
	}
	pthread_attr_t attr;
	int rc = pthread_attr_init(&attr);
	if (rc)
		return -rc;
	if (cpu >= 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		rc = pthread_attr_setaffinity_np(&attr, sizeof(one), &one);
	}
	if (!rc)
		rc = pthread_create(&g->thread, &attr, vcpu_main, g);
	pthread_attr_destroy(&attr);
	return -rc;
}

void ksim_guest_join(struct ksim_guest *g)
{
	ksim_efd_signal(g->nic->irq.efd);
	pthread_join(g->thread, NULL);
}
