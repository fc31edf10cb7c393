/* SPDX-License-Identifier: MIT */
/*
 * Forwarding. A port's transmit handler reads each frame's Ethernet header out of the guest once
 * (the addresses it switches on are the bytes it delivers), learns the source address, picks the
 * destinations (the learned port, or every other port for broadcast, multicast and unknown
 * addresses) and copies the frame straight from the guest's buffers into the destination's
 * staging ring (a frame with several destinations through one snapshot of it). The destination's
 * receive handler moves staged frames into its guest's receive buffers: two copies per frame, as
 * testpmd's io forwarding between vhost ports makes (guest to mbuf to guest).
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
#include <limits.h>
#include <string.h>

#include "net_hdr.h"
#include "switch.h"

#define ETH_HDR 14u

static uint64_t bit(unsigned i)
{
	return 1ull << i;
}

/* Copy len bytes starting `skip` bytes into the iovecs, any layout. */
static void iov_read_slow(const struct iovec *iov, unsigned cnt, size_t skip, uint8_t *dst,
			  size_t len)
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

/* The same, inline for the usual layout (all of it in the first buffer): it runs per frame. */
static inline void iov_read(const struct iovec *iov, unsigned cnt, size_t skip, uint8_t *dst,
			    size_t len)
{
	if (cnt && iov[0].iov_len >= skip + len)
		memcpy(dst, (const uint8_t *)iov[0].iov_base + skip, len);
	else
		iov_read_slow(iov, cnt, skip, dst, len);
}

/* Copy len bytes into the iovecs starting `skip` bytes in, any layout; returns bytes written. */
static size_t iov_write_slow(const struct iovec *iov, unsigned cnt, size_t skip,
			     const uint8_t *src, size_t len)
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

/* The same, inline for the usual layout. */
static inline size_t iov_write(const struct iovec *iov, unsigned cnt, size_t skip,
			       const uint8_t *src, size_t len)
{
	if (cnt && iov[0].iov_len >= skip + len) {
		memcpy((uint8_t *)iov[0].iov_base + skip, src, len);
		return len;
	}
	return iov_write_slow(iov, cnt, skip, src, len);
}

/* How many staged frames ahead of the one being delivered the receive handler prefetches: far
 * enough that its lines arrive while the frames before it are copied. (Guest buffers need no
 * prefetch here: the scheduler starts fetching them as it pops the batch.) */
#define PREFETCH_AHEAD 4u

/* Start pulling a staged frame's first two lines (header room and a small frame): staged a
 * few turns ago, they are often out of the first-level caches by the time they are delivered. */
static void prefetch_staged(const struct sw_slot *s)
{
	__builtin_prefetch(s->buf);
	__builtin_prefetch(s->buf + 64);
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

/* The transmit handler keeps one destination locked while consecutive frames go there (between
 * two guests, that is every frame of a batch): one lock round trip and at most one wake of the
 * receiver per run of frames instead of per frame. Switch to `to` (NULL: hold none). */
static void hold(struct sw_port **held, struct sw_port *to)
{
	if (*held == to)
		return;
	if (*held)
		pthread_mutex_unlock(&(*held)->lock);
	*held = to;
	if (to)
		pthread_mutex_lock(&to->lock);
}

/*
 * Room for a frame of len bytes at the tail of to's staging ring, to being held (locked): 0 with
 * *room set to where its bytes go (the caller copies them before letting go of the lock, which
 * keeps the receive handler out meanwhile) or NULL when the frame is counted as dropped; -EAGAIN
 * when the sender must wait for room (it is then registered as a waiter). The caller copies, so
 * that the transmit handler's frame goes from the guest's buffer into the slot in one copy without
 * a description of where it comes from (and inline: it runs per frame).
 */
static inline int stage(struct sw_switch *sw, struct sw_port *to, struct sw_port *from,
			uint32_t len, uint64_t now, bool flood, uint8_t **room)
{
	*room = NULL;
	if (!to->rxq) {
		/* A flood reaches the ports that are up; only a frame meant for this port is lost. */
		if (!flood)
			sw_count(&to->c.drop[SW_DROP_LINK_DOWN], 1);
		return 0;
	}
	if (sw_stage_full(to)) {
		if (!sw_stalled(to, now)) {
			to->waiters |= bit(from->id);
			atomic_store_explicit(&sw->attention, true, memory_order_relaxed);
			return -EAGAIN;
		}
		sw_count(&to->c.drop[SW_DROP_NO_BUFFERS], 1);
		return 0;
	}
	if (!to->count)
		to->last_drain_ns = now; /* the stall clock runs from when frames start waiting */
	unsigned at = (to->head + to->count) & to->stage_mask;
	struct sw_slot *s = &to->slots[at];
	s->buf = SW_NET_HDR_MAX + len <= SW_SLOT_SMALL ? to->small[at] : to->large[at];
	s->len = len;
	*room = s->buf + SW_NET_HDR_MAX;
	to->count++;
	if (to->rx_parked) {
		to->rx_parked = false;
		/* Under the lock: queue_state clears rxq under it too. */
		vqs_queue_wake(to->rxq);
	}
	return 0;
}

/*
 * An Ethernet header as two overlapping 8-byte words (bytes 0-7 and 6-13), read once from the
 * guest and kept in registers: comparing it with the previous frame's and copying it into a slot
 * then load nothing back from the stack. As a 14-byte array it was stored in two overlapping
 * 8-byte halves and compared with a load spanning both, which store forwarding cannot serve: that
 * stall took 57% of sw_tx_handler's perf samples (9% of the switch's) at heavy load. Bytes 6-7
 * are in both words and eth_store writes hi's last, so the bytes switched on and the bytes
 * delivered are the same (hi's) whatever the guest changes between the two loads; lo's copy
 * only decides whether the previous frame's decision is reused, which it is only for equal words.
 */
struct eth_words {
	uint64_t lo, hi;
};

static inline void eth_store(uint8_t *dst, struct eth_words w)
{
	memcpy(dst, &w.lo, 8);
	memcpy(dst + 6, &w.hi, 8);
}

/* The header at `skip` bytes into the chain (at least ETH_HDR bytes there). */
static inline struct eth_words eth_read(const struct iovec *iov, unsigned cnt, size_t skip)
{
	uint8_t b[ETH_HDR];
	const uint8_t *p = b;
	if (cnt && iov[0].iov_len >= skip + ETH_HDR) /* the usual layout */
		p = (const uint8_t *)iov[0].iov_base + skip;
	else
		iov_read_slow(iov, cnt, skip, b, ETH_HDR);
	struct eth_words w;
	memcpy(&w.lo, p, 8);
	memcpy(&w.hi, p + 6, 8);
	return w;
}

unsigned sw_tx_handler(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n, void *opaque)
{
	struct sw_port *a = opaque, *held = NULL;
	struct sw_switch *sw = a->sw;
	size_t hl = atomic_load_explicit(&a->hdr_len, memory_order_relaxed);
	uint32_t gen = atomic_load_explicit(&a->tx_gen, memory_order_relaxed);
	uint64_t now = vqs_queue_clock_ns(q), frames = 0, bytes = 0;
	/* The previous frame's addresses and where they led: a batch is mostly one flow, which then
	 * costs one learn and one lookup. A table change meanwhile is seen by the next batch. */
	uint8_t eth[ETH_HDR], whole[SW_FRAME_MAX];
	struct eth_words last = { 0, 0 };
	uint64_t last_to = 0;
	bool last_flood = false, have_last = false;
	unsigned i;
	for (i = 0; i < n; i++) {
		struct vqs_req *r = reqs[i];
		const struct vqs_elem *e = &r->elem;
		uint64_t before = 0;
		if (a->partial) {
			if (a->partial_id == e->id && a->partial_gen == gen)
				before = a->partial_done;
			a->partial = false;
		}
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
		/* One snapshot of the header: the addresses switched on are the ones delivered. */
		uint32_t len = e->out_len - (uint32_t)hl;
		struct eth_words w = eth_read(e->iov, e->out_num, hl);
		bool flood;
		uint64_t to;
		/* The type field is compared too: a frame of another type between the same two
		 * addresses only costs a learn and a lookup more. */
		if (have_last && w.lo == last.lo && w.hi == last.hi) {
			to = last_to;
			flood = last_flood;
		} else {
			eth_store(eth, w);
			to = targets(sw, a, eth, now, &flood);
			last = w;
			last_to = to;
			last_flood = flood;
			have_last = true;
		}
		if (!to && !before)
			sw_count(&a->c.drop[SW_DROP_FILTERED], 1);
		to &= ~before;
		/* A frame with several destinations is copied from one snapshot of it, so that every
		 * destination gets the same bytes (not from another destination's slot: that belongs
		 * to its receive handler once its lock is let go); one destination's straight from
		 * the guest's buffer, its header from the snapshot switched on. */
		uint64_t done = before;
		uint8_t *room;
		if (!(to & (to - 1))) {
			/* One destination or none, the usual case, outside the loop below: through
			 * it, spilling and reloading the registers it rotates, the handler took 196
			 * instructions per frame instead of 163 (callgrind, docs/bench.md). */
			if (to) {
				hold(&held, sw->ports[__builtin_ctzll(to)]);
				if (stage(sw, held, a, len, now, flood, &room) == -EAGAIN)
					goto wait;
				if (room) {
					eth_store(room, w);
					iov_read(e->iov, e->out_num, hl + ETH_HDR, room + ETH_HDR,
						 len - ETH_HDR);
				}
			}
		} else {
			eth_store(whole, w);
			iov_read(e->iov, e->out_num, hl + ETH_HDR, whole + ETH_HDR, len - ETH_HDR);
			while (to) {
				unsigned d = (unsigned)__builtin_ctzll(to);
				to &= to - 1;
				hold(&held, sw->ports[d]);
				if (stage(sw, held, a, len, now, flood, &room) == -EAGAIN)
					goto wait;
				if (room)
					memcpy(room, whole, len);
				done |= bit(d);
			}
		}
		frames++;
		bytes += len;
		vqs_req_complete(r, 0);
		continue;
	wait:
		a->partial = true;
		a->partial_id = e->id;
		a->partial_gen = gen;
		a->partial_done = done;
		break;
	}
	hold(&held, NULL);
	sw_count(&a->c.rx_frames, frames);
	sw_count(&a->c.rx_bytes, bytes);
	return i;
}

void sw_inject(struct sw_switch *sw, struct sw_port *from, const uint8_t *frame, uint32_t len)
{
	uint64_t now = vqs_now_ns();
	bool flood;
	uint64_t to = targets(sw, from, frame, now, &flood);
	while (to) {
		struct sw_port *d = sw->ports[__builtin_ctzll(to)];
		to &= to - 1;
		pthread_mutex_lock(&d->lock);
		uint8_t *room;
		if (sw_stage_full(d))
			sw_count(&d->c.drop[SW_DROP_NO_BUFFERS], 1);
		else if (stage(sw, d, from, len, now, flood, &room) == 0 && room)
			memcpy(room, frame, len);
		pthread_mutex_unlock(&d->lock);
	}
}

void sw_wake_senders(struct sw_switch *sw, uint64_t mask)
{
	while (mask) {
		struct sw_port *p = sw->ports[__builtin_ctzll(mask)];
		mask &= mask - 1;
		pthread_mutex_lock(&p->lock);
		if (p->txq)
			vqs_queue_wake(p->txq);
		pthread_mutex_unlock(&p->lock);
	}
}

/*
 * Receive buffers worth popping: the frames waiting, at the buffers per frame of the last turn
 * (the rest would only be given back); none when no frame waits (parked: the next push wakes the
 * queue, as after a give-back); no cap while a frame keeps coming up short of buffers, so the
 * batch can grow to what that frame needs.
 */
unsigned sw_rx_demand(struct vqs_queue *q, void *opaque)
{
	struct sw_port *b = opaque;
	(void)q;
	pthread_mutex_lock(&b->lock);
	unsigned d, per = b->rx_bufs_per_frame ? b->rx_bufs_per_frame : 1;
	if (b->rx_short_turns) {
		d = UINT_MAX;
	} else if (!b->count) {
		b->rx_parked = true;
		d = 0;
	} else {
		d = b->count > UINT_MAX / per ? UINT_MAX : b->count * per;
	}
	pthread_mutex_unlock(&b->lock);
	return d;
}

/* Write len bytes over the k receive chains (no readable buffers), completing each with what it
 * got. */
static void spread(struct vqs_req *const *reqs, unsigned k, const uint8_t *run, size_t len)
{
	size_t off = 0;
	for (unsigned j = 0; j < k; j++) {
		const struct vqs_elem *e = &reqs[j]->elem;
		size_t c = iov_write(e->iov, e->in_num, 0, run + off, len - off);
		off += c;
		vqs_req_complete(reqs[j], (uint32_t)c);
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
	uint64_t now = vqs_queue_clock_ns(q), frames = 0, bytes = 0, wake = 0;
	unsigned used = 0, most_bufs = 0;
	bool short_batch = false;

	pthread_mutex_lock(&b->lock);
	unsigned count0 = b->count;
	while (b->count && used < n) {
		struct sw_slot *s = &b->slots[b->head];
		size_t need = hl + s->len, have = 0;
		unsigned k = 0;
		bool bad = false;
		const struct vqs_elem *first = &reqs[used]->elem;
		if (!first->out_num && first->in_len >= need) {
			have = first->in_len; /* the usual case: one buffer holds header and frame */
			k = 1;
		}
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
			b->head = (b->head + 1) & b->stage_mask;
			b->count--;
			continue;
		}
		if (b->count > PREFETCH_AHEAD) /* the frame delivered PREFETCH_AHEAD frames on */
			prefetch_staged(&b->slots[(b->head + PREFETCH_AHEAD) & b->stage_mask]);
		/* Header (in the slot's room before the frame) and frame as one run of bytes across
		 * as many buffers as it needs; the first buffer holds the whole header. */
		uint8_t *run = s->buf + SW_NET_HDR_MAX - hl;
		size_t total = hl + s->len;
		sw_net_hdr_rx(run, hl, (uint16_t)k);
		if (k == 1) /* the usual case, without spread's loop (its calls spill this loop's state) */
			vqs_req_complete(reqs[used], (uint32_t)iov_write(first->iov, first->in_num, 0,
									 run, total));
		else
			spread(reqs + used, k, run, total);
		used += k;
		if (k > most_bufs)
			most_bufs = k;
		frames++;
		bytes += s->len;
		b->head = (b->head + 1) & b->stage_mask;
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
	if (most_bufs)
		b->rx_bufs_per_frame = most_bufs;
	pthread_mutex_unlock(&b->lock);
	sw_wake_senders(sw, wake);
	sw_count(&b->c.tx_frames, frames);
	sw_count(&b->c.tx_bytes, bytes);
	return used;
}
