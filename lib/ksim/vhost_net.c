/* SPDX-License-Identifier: MIT */
#include "ksim/vhost_net.h"

#include <errno.h>
#include <stdlib.h>

/* vhost_net_buf (4.13): packets taken out of the tun ring in one round, not yet placed. */
struct rx_batch {
	struct ksim_skb *skb[VQS_KSIM_NET_BATCH];
	unsigned head, tail;
};

struct ksim_vnet {
	struct ksim_nic *nic;
	struct vqs_ksim_dev *dev;
	struct ksim_vnet_cfg cfg;
	struct vqs_ksim_work tx_work, rx_work;
	struct rx_batch rxq; /* RX_413 only; the worker's */
	/* RX_413: when the last packet leaked, moved on by the time the fixed handler was in
	 * place (left_413_ns: when it took over, 0 never), so that in a world switched between
	 * the two the gap counts the 4.13 handler's time as it does in a world of its own */
	uint64_t last_leak_ns, left_413_ns;
	/* ksim_vnet_park: its handlers return at once (a requeued one may still run) */
	atomic_bool parked;
	struct ksim_tun_notify rx_ready; /* the tun ring's readiness: queues rx_work */
	/* ksim_vnet_set_rx: the RX handler asked for (variant << 8 | batch), 0 none; the worker
	 * adopts it into cfg between rounds, once the 4.13 private batch is empty */
	atomic_uint rx_next;
};

#define IOV_PER_ELEM 4

/* vhost_exceeds_weight: past either budget, requeue the handler and yield the worker. */
static bool exceeds_weight(struct ksim_vnet *v, struct vqs_ksim_work *w, unsigned q,
			   unsigned pkts, uint64_t bytes)
{
	if (bytes < VQS_KSIM_NET_WEIGHT && pkts < VQS_KSIM_NET_PKT_WEIGHT)
		return false;
	vqs_ksim_vq_work_queue(v->dev, q, w);
	return true;
}

/* vhost_net_busy_poll: spin up to busyloop_us for `ready`; true when it turned ready. */
static bool busy_poll(struct ksim_vnet *v, bool (*ready)(struct ksim_vnet *))
{
	uint32_t us = v->nic->world->costs.busyloop_us;
	if (!us)
		return false;
	uint64_t end = vqs_now_ns() + (uint64_t)us * 1000u;
	while (vqs_now_ns() < end)
		if (ready(v))
			return true;
	return false;
}

static bool tx_ready(struct ksim_vnet *v) { return vqs_vq_avail_count(v->nic->vq[KSIM_TXQ]) > 0; }
static bool rx_ready(struct ksim_vnet *v) { return !ksim_tun_empty(&v->nic->rx_tun); }

static void handle_tx(struct vqs_ksim_work *w)
{
	struct ksim_vnet *v = w->opaque;
	struct ksim_nic *n = v->nic;
	struct vqs_vq *vq = n->vq[KSIM_TXQ];
	unsigned pkts = 0, pending = 0;
	uint64_t bytes = 0;
	if (atomic_load_explicit(&v->parked, memory_order_acquire))
		return;
	vqs_mem_read_lock();
	vqs_vq_disable_notify(vq);
	for (;;) {
		struct iovec iov[IOV_PER_ELEM];
		struct vqs_elem e = {.iov = iov, .iov_cap = IOV_PER_ELEM};
		int rc = vqs_vq_pop(vq, &e);
		if (rc == -EAGAIN) {
			if (busy_poll(v, tx_ready))
				continue;
			if (vqs_vq_enable_notify(vq)) {
				vqs_vq_disable_notify(vq);
				continue;
			}
			break;
		}
		if (rc)
			break; /* broken ring: the guest gets nothing more from this queue */
		ksim_net_xmit(n, &e);
		vqs_vq_fill(vq, &e, 0);
		if (++pending == VQS_KSIM_NET_BATCH) {
			ksim_net_signal(n, KSIM_TXQ);
			pending = 0;
		}
		bytes += e.out_len;
		if (exceeds_weight(v, w, KSIM_TXQ, ++pkts, bytes))
			break;
	}
	ksim_net_signal(n, KSIM_TXQ);
	vqs_mem_read_unlock();
}

/* No RX buffer: ask the guest to kick when it adds some. False when it already did (retry). */
static bool rx_wait_for_buffers(struct vqs_vq *vq)
{
	if (vqs_vq_enable_notify(vq)) {
		vqs_vq_disable_notify(vq);
		return false;
	}
	return true;
}

/* Socket empty: arm the tun ring's wake-up. False when packets arrived meanwhile (retry). */
static bool rx_wait_for_packets(struct ksim_vnet *v)
{
	if (busy_poll(v, rx_ready))
		return false;
	ksim_tun_arm(&v->nic->rx_tun);
	return ksim_tun_empty(&v->nic->rx_tun);
}

/*
 * One round of the 4.13 variant (c67df11f): refill the private batch from the tun ring when it is
 * empty (vhost_net_buf_produce, one lock round for up to `batch` packets), then place its packets
 * one by one. When the RX ring runs dry, the batch stays private for the next run
 * (vhost_net_buf_peek finds it). What 4.13 lost is the skb leak that "vhost: fix skb leak in
 * handle_rx()" closed: hit when the guest drains its ring slower than vhost fills it, one skb at a
 * time, on a path the guest reaches now and then, not at every exhausted ring. The model leaks
 * the packet in hand at an exhausted ring at most once per leak_gap_us; its stream sees no
 * duplicate acks for it and waits for a retransmission timeout. Returns packets placed, or -1
 * to stop.
 */
static int rx_round_413(struct ksim_vnet *v, uint64_t *bytes)
{
	struct ksim_nic *n = v->nic;
	struct vqs_vq *vq = n->vq[KSIM_RXQ];
	struct rx_batch *b = &v->rxq;
	if (b->head == b->tail) {
		b->head = 0;
		b->tail = ksim_tun_consume(&n->rx_tun, b->skb, v->cfg.batch);
		if (!b->tail)
			return rx_wait_for_packets(v) ? -1 : 0;
	}
	int placed = 0;
	while (b->head < b->tail) {
		struct iovec iov[IOV_PER_ELEM];
		struct vqs_elem e = {.iov = iov, .iov_cap = IOV_PER_ELEM};
		int rc = vqs_vq_pop(vq, &e);
		if (rc == -EAGAIN && !rx_wait_for_buffers(vq))
			continue;
		if (rc) {
			uint64_t now = vqs_now_ns();
			if (now - v->last_leak_ns >= n->world->costs.leak_gap_us * 1000ull) {
				v->last_leak_ns = now;
				ksim_net_leak(n->world, b->skb[b->head++]);
			}
			return -1;
		}
		uint32_t written = ksim_net_receive(n, b->skb[b->head++], &e);
		vqs_vq_fill(vq, &e, written);
		*bytes += written;
		placed++;
	}
	return placed;
}

/* One round of the fixed variant: buffers first, then only as many packets as buffers; one ring
 * session (handle_rx's ksim_net_signal publishes and calls). */
static int rx_round_fixed(struct ksim_vnet *v, uint64_t *bytes)
{
	struct ksim_nic *n = v->nic;
	struct vqs_vq *vq = n->vq[KSIM_RXQ];
	struct iovec iov[VQS_KSIM_NET_BATCH][IOV_PER_ELEM];
	struct vqs_elem e[VQS_KSIM_NET_BATCH], *ep[VQS_KSIM_NET_BATCH];
	for (unsigned i = 0; i < v->cfg.batch; i++) {
		e[i] = (struct vqs_elem){.iov = iov[i], .iov_cap = IOV_PER_ELEM};
		ep[i] = &e[i];
	}
	struct vqs_vq_session ss;
	int nb = vqs_vq_session_begin(vq, &ss);
	if (nb > 0)
		nb = vqs_vq_session_pop(&ss, &(struct vqs_pop_to){.base = e, .stride = sizeof(*e)},
					v->cfg.batch);
	if (nb <= 0) {
		vqs_vq_session_pause(&ss);
		if (nb < 0)
			return -1;
		return rx_wait_for_buffers(vq) ? -1 : 0;
	}
	struct ksim_skb *skbs[VQS_KSIM_NET_BATCH];
	uint32_t written[VQS_KSIM_NET_BATCH];
	unsigned got = ksim_tun_consume(&n->rx_tun, skbs, (unsigned)nb);
	if (got < (unsigned)nb)
		vqs_vq_unpop(vq, &e[got], (unsigned)nb - got);
	for (unsigned i = 0; i < got; i++) {
		written[i] = ksim_net_receive(n, skbs[i], &e[i]);
		*bytes += written[i];
	}
	if (got)
		vqs_vq_session_fill(&ss, (const struct vqs_elem *const *)ep, written, got);
	vqs_vq_session_pause(&ss);
	if (!got)
		return rx_wait_for_packets(v) ? -1 : 0;
	return (int)got;
}

/* A handler switch asked for by ksim_vnet_set_rx, taken where no packet is held privately:
 * a 4.13 batch in hand would otherwise be stranded by the fixed variant. */
static void rx_adopt(struct ksim_vnet *v)
{
	/* relaxed: the value is all there is to it; the packets it governs come from the tun
	 * ring, ordered by the ring's own barriers. */
	unsigned next = atomic_load_explicit(&v->rx_next, memory_order_relaxed);
	if (!next || v->rxq.head != v->rxq.tail)
		return;
	enum vqs_ksim_rx_variant variant = (enum vqs_ksim_rx_variant)(next >> 8);
	if (variant != v->cfg.variant) {
		uint64_t now = vqs_now_ns();
		if (variant != VQS_KSIM_RX_413)
			v->left_413_ns = now;
		else if (v->left_413_ns)
			v->last_leak_ns += now - v->left_413_ns;
	}
	v->cfg.variant = variant;
	v->cfg.batch = next & 0xff;
}

static void handle_rx(struct vqs_ksim_work *w)
{
	struct ksim_vnet *v = w->opaque;
	struct ksim_nic *n = v->nic;
	unsigned pkts = 0;
	uint64_t bytes = 0;
	if (atomic_load_explicit(&v->parked, memory_order_acquire))
		return;
	vqs_mem_read_lock();
	vqs_vq_disable_notify(n->vq[KSIM_RXQ]);
	for (;;) {
		rx_adopt(v);
		int placed = v->cfg.variant == VQS_KSIM_RX_413 ? rx_round_413(v, &bytes)
							       : rx_round_fixed(v, &bytes);
		if (placed < 0)
			break;
		if (!placed)
			continue;
		ksim_net_signal(n, KSIM_RXQ);
		pkts += (unsigned)placed;
		if (exceeds_weight(v, w, KSIM_RXQ, pkts, bytes))
			break;
	}
	ksim_net_signal(n, KSIM_RXQ);
	vqs_mem_read_unlock();
}

static void rx_tun_ready(void *opaque)
{
	struct ksim_vnet *v = opaque;
	vqs_ksim_vq_work_queue(v->dev, KSIM_RXQ, &v->rx_work);
}

int ksim_vnet_start(struct ksim_nic *n, const struct ksim_vnet_cfg *cfg)
{
	if (cfg->batch < 1 || cfg->batch > VQS_KSIM_NET_BATCH)
		return -EINVAL;
	struct ksim_vnet *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->nic = n;
	v->cfg = *cfg;
	vqs_ksim_work_init(&v->tx_work, handle_tx, v);
	vqs_ksim_work_init(&v->rx_work, handle_rx, v);
	struct vqs_ksim_dev_opts o;
	vqs_ksim_dev_opts_init(&o);
	o.fork = cfg->fork;
	o.nvqs = 2;
	o.wait = n->world->costs.wait;
	o.wake_ns = n->world->costs.wake_ns;
	int rc = vqs_ksim_dev_create(&v->dev, &o);
	if (rc) {
		free(v);
		return rc;
	}
	n->backend = v;
	v->rx_ready = (struct ksim_tun_notify){rx_tun_ready, v};
	if ((rc = ksim_vnet_unpark(n)))
		ksim_vnet_stop(n);
	return rc;
}

void ksim_vnet_park(struct ksim_nic *n)
{
	struct ksim_vnet *v = n->backend;
	/* release: pairs with the handlers' acquire load: one that runs after the flush below
	 * (requeued by its budget meanwhile) sees it and leaves the queues to the other backend */
	atomic_store_explicit(&v->parked, true, memory_order_release);
	for (unsigned q = 0; q < 2; q++)
		vqs_ksim_poll_stop(v->dev, q);
	/* the handler running now, and those queued, end before the other backend starts */
	vqs_ksim_dev_flush(v->dev);
}

int ksim_vnet_unpark(struct ksim_nic *n)
{
	struct ksim_vnet *v = n->backend;
	atomic_store_explicit(&v->parked, false, memory_order_release);
	ksim_tun_set_notify(&n->rx_tun, &v->rx_ready);
	int rc;
	if ((rc = vqs_ksim_poll_start(v->dev, KSIM_TXQ, n->kick[KSIM_TXQ], &v->tx_work)) ||
	    (rc = vqs_ksim_poll_start(v->dev, KSIM_RXQ, n->kick[KSIM_RXQ], &v->rx_work)))
		return rc;
	/* Work may already wait, with no kick or readiness to come for it (another backend
	 * served the queues, notifications off): look once at each, as vhost_net_enable_vq's
	 * first poll does. */
	vqs_ksim_vq_work_queue(v->dev, KSIM_RXQ, &v->rx_work);
	vqs_ksim_vq_work_queue(v->dev, KSIM_TXQ, &v->tx_work);
	return 0;
}

void ksim_vnet_stop(struct ksim_nic *n)
{
	struct ksim_vnet *v = n->backend;
	if (!v)
		return;
	vqs_ksim_dev_destroy(v->dev);
	while (v->rxq.head < v->rxq.tail)
		ksim_skb_free(v->rxq.skb[v->rxq.head++]);
	free(v);
	n->backend = NULL;
}

int ksim_vnet_set_rx(struct ksim_nic *n, enum vqs_ksim_rx_variant variant, unsigned batch)
{
	struct ksim_vnet *v = n->backend;
	if (!v || batch < 1 || batch > VQS_KSIM_NET_BATCH)
		return -EINVAL;
	atomic_store_explicit(&v->rx_next, (unsigned)variant << 8 | batch, memory_order_relaxed);
	return 0;
}

int ksim_vnet_worker_cpus(struct ksim_nic *n, cpu_set_t *cpus)
{
	struct ksim_vnet *v = n->backend;
	unsigned id;
	int rc = vqs_ksim_vring_get_worker(v->dev, KSIM_RXQ, &id);
	return rc ? rc : vqs_ksim_worker_cpus(v->dev, id, cpus);
}

int ksim_vnet_worker_tid(struct ksim_nic *n)
{
	struct ksim_vnet *v = n->backend;
	unsigned id;
	int rc = vqs_ksim_vring_get_worker(v->dev, KSIM_RXQ, &id);
	return rc ? rc : vqs_ksim_worker_tid(v->dev, id);
}
