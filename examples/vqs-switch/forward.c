/* SPDX-License-Identifier: MIT */
/*
 * Forwarding. A port's transmit handler copies each frame out of the guest (one snapshot: the
 * addresses it switches on are the bytes it delivers), learns the source address, picks the
 * destinations (the learned port, or every other port for broadcast, multicast and unknown
 * addresses) and appends the frame to each destination's staging ring. The destination's receive
 * handler moves staged frames into its guest's receive buffers.
 *
 * Nothing taken from a guest is lost without a counter:
 *  - a full staging ring makes the sender give the rest of its batch back (handler return) and
 *    wait; the destination's receive handler wakes it once frames left the ring. A frame
 *    delivered to some flood destinations before the wait is not delivered to them twice.
 *  - a destination whose staging ring made no progress for stall_ns stops pushing back and drops
 *    what is sent to it (drop_no_buffers on that port): one stuck guest cannot stall the others
 *    for longer than that.
 *  - a receive handler with no staged frames gives its buffers back and is woken by the next push.
 */
#include <errno.h>
#include <string.h>

#include "net_hdr.h"
#include "switch.h"

#define ETH_HDR 14u

static uint64_t bit(unsigned i)
{
	return 1ull << i;
}

/* Copy len bytes starting `skip` bytes into the iovecs. */
static void iov_read(const struct iovec *iov, unsigned cnt, size_t skip, uint8_t *dst, size_t len)
{
	for (unsigned i = 0; i < cnt && len; i++) {
		size_t l = iov[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t c = l - skip < len ? l - skip : len;
		memcpy(dst, (const uint8_t *)iov[i].iov_base + skip, c);
		dst += c;
		len -= c;
		skip = 0;
	}
}

/* Copy len bytes into the iovecs starting `skip` bytes in; returns bytes written. */
static size_t iov_write(const struct iovec *iov, unsigned cnt, size_t skip, const uint8_t *src,
			size_t len)
{
	size_t done = 0;
	for (unsigned i = 0; i < cnt && done < len; i++) {
		size_t l = iov[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t c = l - skip < len - done ? l - skip : len - done;
		memcpy((uint8_t *)iov[i].iov_base + skip, src + done, c);
		done += c;
		skip = 0;
	}
	return done;
}

/* Start pulling the batch's guest buffers into the cache: the buffers were last written by the
 * guest's CPU, and one miss after another on the copy is most of a small frame's cost. */
static void prefetch_batch(struct vqs_req *const *reqs, unsigned n, bool for_write)
{
	for (unsigned i = 0; i < n; i++) {
		const struct vqs_elem *e = &reqs[i]->elem;
		unsigned first = for_write ? e->out_num : 0, cnt = for_write ? e->in_num : e->out_num;
		if (!cnt)
			continue;
		const uint8_t *p = e->iov[first].iov_base;
		bool two = e->iov[first].iov_len > 64;
		if (for_write) {
			__builtin_prefetch(p, 1);
			if (two)
				__builtin_prefetch(p + 64, 1);
		} else {
			__builtin_prefetch(p, 0);
			if (two)
				__builtin_prefetch(p + 64, 0);
		}
	}
}

/* Ports the frame goes to; learns its source. */
static uint64_t targets(struct sw_switch *sw, struct sw_port *from, const uint8_t *frame,
			uint64_t now, bool *flood)
{
	const uint8_t *dst = frame, *src = frame + 6;
	if (!(src[0] & 1))
		sw_mac_learn(&sw->mac, src, from->id, now);
	*flood = true;
	if (!(dst[0] & 1)) {
		int p = sw_mac_lookup(&sw->mac, dst);
		if (p >= 0 && (unsigned)p < sw->nports) {
			*flood = false;
			return (unsigned)p == from->id ? 0 : bit((unsigned)p);
		}
	}
	return sw->all_ports & ~bit(from->id);
}

/* Append a frame to to's staging ring: 0 when staged or counted as dropped, -EAGAIN when the
 * sender must wait for room (it is then registered as a waiter). */
static int push(struct sw_switch *sw, struct sw_port *to, struct sw_port *from, const uint8_t *frame,
		uint32_t len, uint64_t now, bool flood)
{
	enum sw_drop why;
	pthread_mutex_lock(&to->lock);
	if (!to->rxq) {
		pthread_mutex_unlock(&to->lock);
		/* A flood reaches the ports that are up; only a frame meant for this port is lost. */
		if (!flood)
			sw_count(&to->c.drop[SW_DROP_LINK_DOWN], 1);
		return 0;
	}
	if (to->count == SW_STAGE_SLOTS) {
		if (!sw_stalled(to, now)) {
			to->waiters |= bit(from->id);
			pthread_mutex_unlock(&to->lock);
			atomic_store_explicit(&sw->attention, true, memory_order_relaxed);
			return -EAGAIN;
		}
		why = SW_DROP_NO_BUFFERS;
		pthread_mutex_unlock(&to->lock);
		sw_count(&to->c.drop[why], 1);
		return 0;
	}
	if (!to->count)
		to->last_drain_ns = now; /* the stall clock runs from when frames start waiting */
	struct sw_slot *s = &to->slots[(to->head + to->count) & (SW_STAGE_SLOTS - 1)];
	s->len = len;
	memcpy(s->data, frame, len);
	to->count++;
	if (to->rx_parked) {
		to->rx_parked = false;
		/* Under the lock: queue_state clears rxq under it too. */
		vqs_queue_wake(to->rxq);
	}
	pthread_mutex_unlock(&to->lock);
	return 0;
}

unsigned sw_tx_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	struct sw_port *a = opaque;
	struct sw_switch *sw = a->sw;
	size_t hl = atomic_load_explicit(&a->hdr_len, memory_order_relaxed);
	uint64_t now = vqs_now_ns(), frames = 0, bytes = 0;
	uint8_t frame[SW_FRAME_MAX];
	unsigned i;
	prefetch_batch(reqs, n, false);
	for (i = 0; i < n; i++) {
		struct vqs_req *r = reqs[i];
		const struct vqs_elem *e = &r->elem;
		uint64_t before = 0;
		if (a->partial && a->partial_id == e->id)
			before = a->partial_done;
		a->partial = false;
		enum sw_drop why = SW_DROP__COUNT;
		if (e->in_num || e->out_len < hl)
			why = SW_DROP_BAD_CHAIN;
		else if (e->out_len - hl < ETH_HDR)
			why = SW_DROP_RUNT;
		else if (e->out_len - hl > SW_FRAME_MAX)
			why = SW_DROP_OVERSIZE;
		if (why != SW_DROP__COUNT) {
			sw_count(&a->c.drop[why], 1);
			vqs_req_complete(r, 0);
			continue;
		}
		uint32_t len = e->out_len - (uint32_t)hl;
		iov_read(e->iov, e->out_num, hl, frame, len);
		bool flood;
		uint64_t to = targets(sw, a, frame, now, &flood);
		if (!to && !before)
			sw_count(&a->c.drop[SW_DROP_FILTERED], 1);
		to &= ~before;
		uint64_t done = before;
		for (unsigned d = 0; to; d++) {
			if (!(to & bit(d)))
				continue;
			to &= ~bit(d);
			if (push(sw, sw->ports[d], a, frame, len, now, flood) == -EAGAIN) {
				a->partial = true;
				a->partial_id = e->id;
				a->partial_done = done;
				goto out;
			}
			done |= bit(d);
		}
		frames++;
		bytes += len;
		vqs_req_complete(r, 0);
	}
out:
	sw_count(&a->c.rx_frames, frames);
	sw_count(&a->c.rx_bytes, bytes);
	return i;
}

void sw_wake_senders(struct sw_switch *sw, uint64_t mask)
{
	for (unsigned w = 0; mask; w++) {
		if (!(mask & bit(w)))
			continue;
		mask &= ~bit(w);
		struct sw_port *p = sw->ports[w];
		pthread_mutex_lock(&p->lock);
		if (p->txq)
			vqs_queue_wake(p->txq);
		pthread_mutex_unlock(&p->lock);
	}
}

/* A receive chain the switch can write into: writable only; the first of a frame holds the
 * whole header. */
static bool rx_chain_ok(const struct vqs_elem *e, size_t hl, bool first)
{
	return e->out_num == 0 && e->in_len >= (first ? hl : 1);
}

unsigned sw_rx_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	struct sw_port *b = opaque;
	struct sw_switch *sw = b->sw;
	size_t hl = atomic_load_explicit(&b->hdr_len, memory_order_relaxed);
	bool mrg = atomic_load_explicit(&b->mrg_rxbuf, memory_order_relaxed);
	uint64_t now = vqs_now_ns(), frames = 0, bytes = 0, wake = 0;
	unsigned used = 0;
	bool short_batch = false;
	uint8_t hdr[SW_NET_HDR_MAX];

	prefetch_batch(reqs, n, true);
	pthread_mutex_lock(&b->lock);
	unsigned count0 = b->count;
	while (b->count && used < n) {
		struct sw_slot *s = &b->slots[b->head];
		size_t need = hl + s->len, have = 0;
		unsigned k = 0;
		bool bad = false;
		while (have < need && used + k < n) {
			bad = !rx_chain_ok(&reqs[used + k]->elem, hl, k == 0);
			if (bad)
				break;
			have += reqs[used + k]->elem.in_len;
			k++;
			if (!mrg)
				break;
		}
		if (bad) {
			/* A malformed chain ends the buffers this frame could use; hand them back
			 * empty and try the frame again with the next ones. */
			sw_count(&b->c.drop[SW_DROP_BAD_CHAIN], 1);
			for (unsigned j = 0; j <= k; j++)
				vqs_req_complete(reqs[used + j], 0);
			used += k + 1;
			continue;
		}
		if (have < need) {
			short_batch = mrg && used + k == n;
			/* Buffers that cannot ever hold it (no MRG_RXBUF), or a stall: drop the frame. */
			if (short_batch && !sw_stalled(b, now))
				break;
			short_batch = false;
			sw_count(&b->c.drop[SW_DROP_RX_SMALL], 1);
			b->head = (b->head + 1) & (SW_STAGE_SLOTS - 1);
			b->count--;
			continue;
		}
		/* First buffer: header, then the frame across as many buffers as it needs. */
		sw_net_hdr_rx(hdr, hl, (uint16_t)k);
		size_t off = 0;
		for (unsigned j = 0; j < k; j++) {
			const struct vqs_elem *e = &reqs[used + j]->elem;
			const struct iovec *iov = e->iov + e->out_num;
			size_t w = j == 0 ? iov_write(iov, e->in_num, 0, hdr, hl) : 0;
			size_t c = iov_write(iov, e->in_num, w, s->data + off, s->len - off);
			off += c;
			vqs_req_complete(reqs[used + j], (uint32_t)(w + c));
		}
		used += k;
		frames++;
		bytes += s->len;
		b->head = (b->head + 1) & (SW_STAGE_SLOTS - 1);
		b->count--;
	}
	if (b->count < count0) {
		b->last_drain_ns = now;
		wake = b->waiters;
		b->waiters = 0;
	}
	if (used < n) {
		if (!b->count) {
			b->rx_parked = true; /* the next push wakes us */
		} else if (short_batch && (used || ++b->rx_short_turns <= SW_RX_SHORT_RETRIES)) {
			/* A fresh batch starts with the buffers given back; policies that size
			 * batches by demand grow it when the last one came back full. */
			vqs_queue_wake(q);
		} else if (short_batch) {
			/* The ring itself holds fewer buffers than the frame needs: retry on the
			 * housekeeping tick instead of spinning. */
			b->rx_starved = true;
			atomic_store_explicit(&sw->attention, true, memory_order_relaxed);
		}
	}
	if (used)
		b->rx_short_turns = 0;
	pthread_mutex_unlock(&b->lock);
	sw_wake_senders(sw, wake);
	sw_count(&b->c.tx_frames, frames);
	sw_count(&b->c.tx_bytes, bytes);
	return used;
}
