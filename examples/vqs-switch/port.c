/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "port.h"

static const char *const drop_names[SW_DROP__COUNT] = {
	[SW_DROP_RUNT] = "runt",
	[SW_DROP_OVERSIZE] = "oversize",
	[SW_DROP_BAD_CHAIN] = "bad_chain",
	[SW_DROP_FILTERED] = "filtered",
	[SW_DROP_LINK_DOWN] = "link_down",
	[SW_DROP_NO_BUFFERS] = "no_buffers",
	[SW_DROP_RX_SMALL] = "rx_small",
};

const char *sw_drop_name(enum sw_drop d)
{
	return d < SW_DROP__COUNT ? drop_names[d] : "?";
}

unsigned sw_stage_slots(uint32_t budget_pkts)
{
	unsigned n = SW_STAGE_MIN;
	while (n < SW_STAGE_MAX && n < 4ull * budget_pkts)
		n *= 2;
	return n;
}

int sw_port_init(struct sw_port *p, struct sw_switch *sw, unsigned id, unsigned slots)
{
	memset(p, 0, sizeof(*p));
	p->sw = sw;
	p->id = id;
	pthread_mutex_init(&p->lock, NULL);
	p->stage_mask = slots - 1;
	p->slots = calloc(slots, sizeof(*p->slots));
	p->small = aligned_alloc(64, slots * sizeof(*p->small));
	p->large = calloc(slots, sizeof(*p->large));
	if (!p->slots || !p->small || !p->large) {
		sw_port_fini(p);
		return -ENOMEM;
	}
	atomic_init(&p->hdr_len, 12);
	return 0;
}

void sw_port_fini(struct sw_port *p)
{
	pthread_mutex_destroy(&p->lock);
	free(p->slots);
	free(p->small);
	free(p->large);
	p->slots = NULL;
	p->small = NULL;
	p->large = NULL;
}

static uint64_t get(_Atomic uint64_t *c)
{
	return atomic_load_explicit(c, memory_order_relaxed);
}

int sw_port_format(struct sw_port *p, char *buf, size_t len)
{
	int n = snprintf(buf, len, "port=%u path=%s rx_frames=%llu rx_bytes=%llu tx_frames=%llu tx_bytes=%llu announces=%llu",
			 p->id, p->path, (unsigned long long)get(&p->c.rx_frames),
			 (unsigned long long)get(&p->c.rx_bytes), (unsigned long long)get(&p->c.tx_frames),
			 (unsigned long long)get(&p->c.tx_bytes),
			 (unsigned long long)get(&p->c.announces));
	for (unsigned d = 0; d < SW_DROP__COUNT && n >= 0 && (size_t)n < len; d++)
		n += snprintf(buf + n, len - (size_t)n, " drop_%s=%llu", drop_names[d],
			      (unsigned long long)get(&p->c.drop[d]));
	return n;
}
