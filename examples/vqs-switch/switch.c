/* SPDX-License-Identifier: MIT */
/* Ports as vhost-user devices, and the switch's life cycle and housekeeping. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net_hdr.h"
#include "switch.h"

void sw_opts_init(struct sw_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->mrg_rxbuf = true;
	o->mac_age_ns = 300ull * 1000000000ull;
	o->stall_ns = 100ull * 1000000ull;
	struct vqs_sched_opts so; /* staging for the library's default turn budget */
	vqs_sched_opts_init(&so);
	o->stage_slots = sw_stage_slots(so.budget_pkts);
}

/* ---- device ops: run on each port's backend control thread ---- */

static vqs_handler_fn queue_handler(void *opaque, unsigned qidx, void **handler_opaque)
{
	*handler_opaque = opaque;
	if (qidx == SW_RXQ)
		return sw_rx_handler;
	if (qidx == SW_TXQ)
		return sw_tx_handler;
	return NULL;
}

static vqs_demand_fn queue_demand(void *opaque, unsigned qidx)
{
	(void)opaque;
	return qidx == SW_RXQ ? sw_rx_demand : NULL;
}

static void set_features(void *opaque, uint64_t f)
{
	struct sw_port *p = opaque;
	atomic_store_explicit(&p->hdr_len, (uint32_t)sw_net_hdr_len(f), memory_order_relaxed);
	atomic_store_explicit(&p->mrg_rxbuf, (f & VQS_BIT(SW_NET_F_MRG_RXBUF)) != 0,
			      memory_order_relaxed);
	printf("vqs-switch: port %u features 0x%llx packed=%d mrg_rxbuf=%d event_idx=%d\n", p->id,
	       (unsigned long long)f, !!(f & VQS_BIT(VQS_F_RING_PACKED)),
	       !!(f & VQS_BIT(SW_NET_F_MRG_RXBUF)), !!(f & VQS_BIT(VQS_F_EVENT_IDX)));
}

static void queue_state(void *opaque, unsigned qidx, struct vqs_queue *q)
{
	struct sw_port *p = opaque;
	uint64_t wake = 0, lost = 0;
	pthread_mutex_lock(&p->lock);
	if (qidx == SW_RXQ) {
		p->rxq = q;
		/* rx_parked is left alone: the queue's first turn may already have parked it (its
		 * demand found nothing to deliver) before the backend tells us it started, and only
		 * the push that sees the flag wakes it. A flag left over from an earlier session
		 * costs one spurious wake. */
		p->rx_starved = false;
		p->last_drain_ns = vqs_now_ns();
		if (!q) {
			/* Nobody will read what waits here; the senders learn it on their retry. */
			lost = p->count;
			p->count = 0;
			p->head = 0;
			wake = p->waiters;
			p->waiters = 0;
		}
	} else if (qidx == SW_TXQ) {
		p->txq = q;
		/* The handler owns `partial` and may still run here (the backend tells the device
		 * before it detaches the queue): only the generation changes. Relaxed: the detach
		 * that follows orders it before the next session's first handler call. */
		if (!q)
			atomic_fetch_add_explicit(&p->tx_gen, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&p->lock);
	sw_count(&p->c.drop[SW_DROP_LINK_DOWN], lost);
	sw_wake_senders(p->sw, wake);
}

static int send_rarp(void *opaque, const uint8_t mac[VQS_VU_MAC_LEN])
{
	struct sw_port *p = opaque;
	sw_announce(p->sw, p, mac);
	sw_count(&p->c.announces, 1);
	return 0;
}

static void connection(void *opaque, bool connected)
{
	struct sw_port *p = opaque;
	if (!connected)
		sw_mac_flush_port(&p->sw->mac, p->id);
	printf("vqs-switch: port %u %s\n", p->id, connected ? "connected" : "disconnected");
}

/* ---- life cycle ---- */

int sw_create(struct sw_switch **out, const struct sw_opts *o)
{
	if (o->size < sizeof(*o) || !o->sched || o->nports == 0 || o->nports > SW_MAX_PORTS ||
	    o->stage_slots < SW_STAGE_MIN || o->stage_slots > SW_STAGE_MAX ||
	    (o->stage_slots & (o->stage_slots - 1)))
		return -EINVAL;
	struct sw_switch *sw = calloc(1, sizeof(*sw));
	if (!sw)
		return -ENOMEM;
	sw->o = *o;
	sw_mac_init(&sw->mac);
	sw->ops = (struct vqs_vu_device_ops){
		.size = sizeof(sw->ops),
		/* IN_ORDER: both handlers complete every buffer they take, in the order popped
		 * (what they give back comes again, in order), so the guest may use its in-order
		 * ring paths (descriptors in table order, no free list).
		 * A migrated guest must be found on its new port. GUEST_ANNOUNCE: QEMU (with its
		 * control queue, which QEMU serves) asks a guest that negotiated it to announce
		 * itself, and its gratuitous ARPs teach the switch; QEMU masks the bit with the
		 * backend's offer. A guest without it gets SEND_RARP instead (protocol feature RARP),
		 * and the switch sends the RARP QEMU would have. */
		.features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX) |
			    VQS_BIT(VQS_F_INDIRECT_DESC) | VQS_BIT(VQS_F_IN_ORDER) |
			    VQS_BIT(SW_NET_F_GUEST_ANNOUNCE) |
			    (o->mrg_rxbuf ? VQS_BIT(SW_NET_F_MRG_RXBUF) : 0) |
			    (o->packed ? VQS_BIT(VQS_F_RING_PACKED) : 0),
		/* LOG_SHMFD: QEMU migrates a guest only when the backend can share its dirty log. */
		.protocol_features = VQS_BIT(VQS_VU_PROTOCOL_F_MQ) |
				     VQS_BIT(VQS_VU_PROTOCOL_F_REPLY_ACK) |
				     VQS_BIT(VQS_VU_PROTOCOL_F_STATUS) |
				     VQS_BIT(VQS_VU_PROTOCOL_F_LOG_SHMFD) |
				     VQS_BIT(VQS_VU_PROTOCOL_F_RARP),
		.num_queues = 2,
		.queue_handler = queue_handler,
		.queue_demand = queue_demand,
		.set_features = set_features,
		.queue_state = queue_state,
		.connection = connection,
		.send_rarp = send_rarp,
		/* The handlers wait for nothing; the port locks they take are held briefly, and
		 * never by a thread waiting for a grace period (queue_state does not). */
		.handlers_nonblocking = true,
	};
	int err = 0;
	for (unsigned i = 0; i < o->nports && !err; i++) {
		struct sw_port *p = calloc(1, sizeof(*p));
		if (!p) {
			err = -ENOMEM;
			break;
		}
		err = sw_port_init(p, sw, i, o->stage_slots);
		if (err) {
			free(p);
			break;
		}
		snprintf(p->path, sizeof(p->path), "%s", o->paths[i]);
		sw->ports[i] = p;
		sw->nports = i + 1;
		sw->all_ports |= 1ull << i;
	}
	/* Every port exists before any backend can call into the forwarding code. */
	for (unsigned i = 0; i < sw->nports && !err; i++) {
		struct vqs_vu_backend_opts bo;
		vqs_vu_backend_opts_init(&bo);
		bo.path = o->paths[i];
		bo.client = o->client;
		bo.sched = o->sched;
		bo.ops = &sw->ops;
		bo.opaque = sw->ports[i];
		err = vqs_vu_backend_create(&sw->ports[i]->backend, &bo);
	}
	if (err) {
		sw_destroy(sw);
		return err;
	}
	*out = sw;
	return 0;
}

void sw_stop(struct sw_switch *sw)
{
	for (unsigned i = 0; i < sw->nports; i++) {
		if (sw->ports[i]->backend)
			vqs_vu_backend_destroy(sw->ports[i]->backend);
		sw->ports[i]->backend = NULL;
	}
}

void sw_destroy(struct sw_switch *sw)
{
	if (!sw)
		return;
	sw_stop(sw);
	for (unsigned i = 0; i < sw->nports; i++) {
		sw_port_fini(sw->ports[i]);
		free(sw->ports[i]);
	}
	sw_mac_fini(&sw->mac);
	free(sw);
}

unsigned sw_housekeep(struct sw_switch *sw, uint64_t now)
{
	if (now >= sw->next_age_ns) {
		sw_mac_age(&sw->mac, now > sw->o.mac_age_ns ? now - sw->o.mac_age_ns : 0);
		sw->next_age_ns = now + 1000000000ull;
	}
	atomic_store_explicit(&sw->attention, false, memory_order_relaxed);
	bool again = false;
	for (unsigned i = 0; i < sw->nports; i++) {
		struct sw_port *p = sw->ports[i];
		uint64_t wake = 0;
		pthread_mutex_lock(&p->lock);
		/* A destination that stalled makes its waiters drop instead of wait (see forward.c). */
		if (p->waiters && (!sw_stage_full(p) || sw_stalled(p, now))) {
			wake = p->waiters;
			p->waiters = 0;
		}
		if (p->rx_starved && p->rxq) {
			p->rx_starved = false;
			vqs_queue_wake(p->rxq);
		}
		again |= p->waiters != 0;
		pthread_mutex_unlock(&p->lock);
		sw_wake_senders(sw, wake);
	}
	again |= atomic_load_explicit(&sw->attention, memory_order_relaxed);
	return again ? 10 : 1000;
}

void sw_print(struct sw_switch *sw, FILE *f, const char *prefix)
{
	char line[512];
	for (unsigned i = 0; i < sw->nports; i++) {
		sw_port_format(sw->ports[i], line, sizeof(line));
		fprintf(f, "%s%s\n", prefix, line);
	}
	fprintf(f, "%smacs=%u mac_table_full=%llu\n", prefix, sw_mac_count(&sw->mac),
		(unsigned long long)atomic_load_explicit(&sw->mac.full_misses, memory_order_relaxed));
	fflush(f);
}
