/* SPDX-License-Identifier: MIT */
#include "ksim/sched_net.h"

#include <errno.h>
#include <stdlib.h>

#define RX_TAKE_MAX 256u /* batch_max is at most 256 */

struct ksim_snet {
	struct ksim_nic *nic;
	struct vqs_sched *sched;
	struct vqs_queue *q[2];
	struct ksim_tun_notify rx_ready; /* the tun ring's readiness: wakes the RX queue */
};

static unsigned tx_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			   void *opaque)
{
	struct ksim_snet *s = opaque;
	for (unsigned i = 0; i < n; i++) {
		ksim_net_xmit(s->nic, &reqs[i]->elem);
		vqs_req_complete(reqs[i], 0);
	}
	return n;
}

static unsigned rx_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			   void *opaque)
{
	struct ksim_snet *s = opaque;
	struct ksim_tun *tun = &s->nic->rx_tun;
	struct ksim_skb *skbs[RX_TAKE_MAX];
	if (n > RX_TAKE_MAX)
		n = RX_TAKE_MAX;
	unsigned taken = 0;
	for (;;) {
		unsigned got = ksim_tun_consume(tun, skbs, n - taken);
		for (unsigned i = 0; i < got; i++, taken++)
			vqs_req_complete(reqs[taken],
					 ksim_net_receive(s->nic, skbs[i], &reqs[taken]->elem));
		if (taken == n)
			break;
		/* Out of packets: the buffers left go back to the ring and the queue waits for the
		 * tun ring's wake-up (vqs_queue_wake), armed before the last look. */
		ksim_tun_arm(tun);
		if (ksim_tun_empty(tun))
			break;
	}
	return taken;
}

static void rx_tun_ready(void *opaque)
{
	struct ksim_snet *s = opaque;
	vqs_queue_wake(s->q[KSIM_RXQ]);
}

int ksim_snet_start(struct ksim_nic *n, const struct vqs_sched_opts *opts)
{
	struct ksim_snet *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->nic = n;
	int rc = vqs_sched_create(&s->sched, opts);
	if (rc) {
		free(s);
		return rc;
	}
	n->backend = s;
	static const vqs_handler_fn handlers[2] = {[KSIM_RXQ] = rx_handler, [KSIM_TXQ] = tx_handler};
	for (unsigned i = 0; i < 2; i++) {
		struct vqs_queue_opts qo;
		vqs_queue_opts_init(&qo);
		qo.vq = n->vq[i];
		qo.kick_fd = n->kick[i];
		qo.call_fd = n->irq.efd;
		qo.handler = handlers[i];
		qo.opaque = s;
		qo.group = 0;
		qo.worker = 0;
		if ((rc = vqs_sched_attach(s->sched, &qo, &s->q[i]))) {
			ksim_snet_stop(n);
			return rc;
		}
	}
	s->rx_ready = (struct ksim_tun_notify){rx_tun_ready, s};
	ksim_tun_set_notify(&n->rx_tun, &s->rx_ready);
	vqs_queue_wake(s->q[KSIM_RXQ]);
	return 0;
}

int ksim_snet_park(struct ksim_nic *n)
{
	struct ksim_snet *s = n->backend;
	for (unsigned i = 0; i < 2; i++) {
		vqs_queue_pause(s->q[i]);
		/* no kick fd: the other backend reads the kicks, and this worker sleeps through
		 * them */
		int rc = vqs_queue_set_fds(s->q[i], -1, n->irq.efd);
		if (rc)
			return rc;
	}
	return 0;
}

int ksim_snet_unpark(struct ksim_nic *n)
{
	struct ksim_snet *s = n->backend;
	ksim_tun_set_notify(&n->rx_tun, &s->rx_ready);
	for (unsigned i = 0; i < 2; i++) {
		int rc = vqs_queue_set_fds(s->q[i], n->kick[i], n->irq.efd);
		/* a resumed queue has a turn whatever came meanwhile */
		if (rc || (rc = vqs_queue_resume(s->q[i])))
			return rc;
	}
	/* RX may have given its buffers back before the pause, to wait for the tun ring's
	 * readiness, which the other backend has had since: look again */
	vqs_queue_wake(s->q[KSIM_RXQ]);
	return 0;
}

void ksim_snet_stop(struct ksim_nic *n)
{
	struct ksim_snet *s = n->backend;
	if (!s)
		return;
	for (unsigned i = 0; i < 2; i++)
		if (s->q[i])
			vqs_sched_detach(s->q[i]);
	vqs_sched_destroy(s->sched);
	free(s);
	n->backend = NULL;
}

int ksim_snet_worker_cpus(struct ksim_nic *n, cpu_set_t *cpus)
{
	struct ksim_snet *s = n->backend;
	return vqs_sched_worker_cpus(s->sched, 0, cpus);
}
