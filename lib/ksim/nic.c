/* SPDX-License-Identifier: MIT */
#include "ksim/nic.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#define GMEM_BASE 0x100000u

static uint32_t buf_size(const struct ksim_world *w)
{
	return (KSIM_VNET_HDR + (uint32_t)sizeof(struct ksim_pkt_tag) + w->costs.pkt_bytes + 63u) &
	       ~63u;
}

int ksim_nic_init(struct ksim_nic *n, struct ksim_world *w)
{
	memset(n, 0, sizeof(*n));
	n->world = w;
	n->kick[0] = n->kick[1] = -1;
	n->irq.efd = -1;
	n->buf_size = buf_size(w);
	const uint64_t features = VQS_BIT(VQS_F_VERSION_1) | VQS_BIT(VQS_F_EVENT_IDX);
	size_t arena = (size_t)2 * KSIM_QUEUE_NUM * n->buf_size + (1u << 20);
	int rc = vqs_gmem_create(&n->gmem, GMEM_BASE, arena);
	if (rc)
		goto fail;
	struct vqs_mem_region r;
	vqs_gmem_region(n->gmem, &r);
	if ((rc = vqs_mem_create(&n->mem)) || (rc = vqs_mem_set(n->mem, &r, 1)))
		goto fail;
	for (unsigned q = 0; q < 2; q++) {
		struct vqs_drv_vq_config dc = {.size = sizeof(dc), .num = KSIM_QUEUE_NUM,
					       .features = features, .gmem = n->gmem};
		if ((rc = vqs_drv_vq_create(&n->drv[q], &dc)))
			goto fail;
		struct vqs_vq_config vc = {.size = sizeof(vc), .num = KSIM_QUEUE_NUM,
					   .features = features, .addr_space = VQS_ADDR_GPA,
					   .mem = n->mem};
		vqs_drv_vq_addrs(n->drv[q], &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
		if ((rc = vqs_vq_create(&n->vq[q])) || (rc = vqs_vq_configure(n->vq[q], &vc)))
			goto fail;
		n->buf_gpa[q] = vqs_gmem_alloc(n->gmem, (size_t)KSIM_QUEUE_NUM * n->buf_size, 64);
		n->kick[q] = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (!n->buf_gpa[q] || n->kick[q] < 0) {
			rc = n->buf_gpa[q] ? -errno : -ENOMEM;
			goto fail;
		}
	}
	if ((rc = ksim_park_init(&n->irq)) ||
	    (rc = ksim_tun_init(&n->rx_tun, KSIM_TUN_SIZE, w->costs.ring_lock_ns)))
		goto fail;
	return 0;
fail:
	ksim_nic_fini(n);
	return rc;
}

void ksim_nic_fini(struct ksim_nic *n)
{
	ksim_tun_fini(&n->rx_tun);
	ksim_park_fini(&n->irq);
	for (unsigned q = 0; q < 2; q++) {
		if (n->kick[q] >= 0)
			close(n->kick[q]);
		if (n->vq[q])
			vqs_vq_destroy(n->vq[q]);
		if (n->drv[q])
			vqs_drv_vq_destroy(n->drv[q]);
		n->kick[q] = -1;
		n->vq[q] = NULL;
		n->drv[q] = NULL;
	}
	if (n->mem)
		vqs_mem_destroy(n->mem);
	if (n->gmem)
		vqs_gmem_destroy(n->gmem);
	n->mem = NULL;
	n->gmem = NULL;
}

void *ksim_nic_buf(struct ksim_nic *n, unsigned q, unsigned i)
{
	return vqs_gmem_host(n->gmem, n->buf_gpa[q] + (uint64_t)i * n->buf_size, n->buf_size);
}

void ksim_pkt_tag(const void *data, struct ksim_pkt_tag *tag) { memcpy(tag, data, sizeof(*tag)); }

struct ksim_skb *ksim_pkt_new(struct ksim_world *w, uint16_t flow, uint16_t kind, uint32_t seq)
{
	uint32_t len = (uint32_t)sizeof(struct ksim_pkt_tag) + w->costs.pkt_bytes;
	struct ksim_skb *skb = ksim_skb_alloc(len);
	if (!skb)
		return NULL;
	struct ksim_pkt_tag tag = {.flow = flow, .kind = kind, .seq = seq};
	memcpy(skb->data, &tag, sizeof(tag));
	memset(skb->data + sizeof(tag), (int)(seq & 0xff), w->costs.pkt_bytes);
	return skb;
}

/* Copy up to len bytes from an iovec array, skipping `skip` bytes first. */
static uint32_t iov_read(const struct iovec *iov, unsigned n, uint32_t skip, void *dst,
			 uint32_t len)
{
	uint32_t done = 0;
	for (unsigned i = 0; i < n && done < len; i++) {
		size_t l = iov[i].iov_len;
		if (skip >= l) {
			skip -= (uint32_t)l;
			continue;
		}
		size_t c = l - skip < len - done ? l - skip : len - done;
		memcpy((uint8_t *)dst + done, (uint8_t *)iov[i].iov_base + skip, c);
		done += (uint32_t)c;
		skip = 0;
	}
	return done;
}

/* Copy hdr then data into writable iovecs; returns the bytes written. */
static uint32_t iov_write(const struct iovec *iov, unsigned n, const void *hdr, uint32_t hlen,
			  const void *data, uint32_t len)
{
	uint32_t done = 0, total = hlen + len;
	for (unsigned i = 0; i < n && done < total; i++) {
		size_t off = 0;
		while (off < iov[i].iov_len && done < total) {
			const uint8_t *src = done < hlen ? (const uint8_t *)hdr + done
							 : (const uint8_t *)data + (done - hlen);
			uint32_t left = done < hlen ? hlen - done : total - done;
			size_t c = iov[i].iov_len - off < left ? iov[i].iov_len - off : left;
			memcpy((uint8_t *)iov[i].iov_base + off, src, c);
			off += c;
			done += (uint32_t)c;
		}
	}
	return done;
}

static void lose(struct ksim_world *w, struct ksim_skb *skb, _Atomic uint64_t *counter, bool hang)
{
	atomic_fetch_add_explicit(counter, 1, memory_order_relaxed);
	struct ksim_pkt_tag tag;
	ksim_pkt_tag(skb->data, &tag);
	if (tag.kind == KSIM_PKT_DATA && tag.flow < w->nflows)
		ksim_flow_lost(&w->flows[tag.flow], tag.seq, hang);
	ksim_skb_free(skb);
}

void ksim_net_drop(struct ksim_world *w, struct ksim_skb *skb, _Atomic uint64_t *counter)
{
	lose(w, skb, counter, false);
}

void ksim_net_leak(struct ksim_world *w, struct ksim_skb *skb)
{
	lose(w, skb, &w->drops_batch, true);
}

void ksim_net_xmit(struct ksim_nic *n, const struct vqs_elem *e)
{
	struct ksim_world *w = n->world;
	ksim_burn_ns(w->costs.host_pkt_ns);
	/* The guest wrote the chain: its length is what it says, bounded by our packet size. */
	uint32_t len = e->out_len > KSIM_VNET_HDR ? e->out_len - KSIM_VNET_HDR : 0;
	uint32_t max = (uint32_t)sizeof(struct ksim_pkt_tag) + w->costs.pkt_bytes;
	if (len < sizeof(struct ksim_pkt_tag) || len > max)
		return; /* malformed: tun would drop it too */
	struct ksim_skb *skb = ksim_skb_alloc(len);
	if (!skb)
		return;
	skb->len = iov_read(e->iov, e->out_num, KSIM_VNET_HDR, skb->data, len);
	if (ksim_tun_produce(n->tx_dst, skb))
		ksim_net_drop(w, skb, &w->drops_ring);
}

uint32_t ksim_net_receive(struct ksim_nic *n, struct ksim_skb *skb, const struct vqs_elem *e)
{
	static const uint8_t hdr[KSIM_VNET_HDR];
	ksim_burn_ns(n->world->costs.host_pkt_ns);
	uint32_t written = iov_write(e->iov + e->out_num, e->in_num, hdr, KSIM_VNET_HDR, skb->data,
				     skb->len);
	ksim_skb_free(skb);
	return written;
}

void ksim_net_signal(struct ksim_nic *n, unsigned q)
{
	struct vqs_vq_session ss = {.vq = n->vq[q]}; /* the end of the work's sessions */
	bool call;
	if (vqs_vq_session_end(&ss, &call) && call)
		ksim_efd_signal(n->irq.efd);
}
