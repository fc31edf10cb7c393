/* SPDX-License-Identifier: MIT */
/*
 * Announcing a migrated guest's address (vhost-user SEND_RARP). QEMU, for a guest that cannot
 * announce itself, broadcasts a RARP request from the guest's address after a migration; with a
 * vhost-user net device it cannot put that frame on the backend's network and asks the backend
 * to. The switch sends the same frame from the guest's new port: learning its source moves the
 * address to that port here, and every other port's guest (and any switch behind it) sees it.
 */
#include <string.h>

#include "switch.h"

#define ETH_P_RARP 0x8035
#define RARP_OP_REQUEST_REVERSE 3 /* RFC 903 */
#define ETH_MIN_FRAME 60u         /* without the frame check sequence */

void sw_announce(struct sw_switch *sw, struct sw_port *p, const uint8_t mac[6])
{
	uint8_t f[ETH_MIN_FRAME] = { 0 }; /* the protocol addresses stay 0.0.0.0: unknown */
	memset(f, 0xff, 6);
	memcpy(f + 6, mac, 6);
	f[12] = ETH_P_RARP >> 8;
	f[13] = ETH_P_RARP & 0xff;
	uint8_t *a = f + 14; /* ARP-format body: Ethernet hardware, IPv4 protocol addresses */
	a[1] = 1;
	a[2] = 0x08;
	a[4] = 6;
	a[5] = 4;
	a[7] = RARP_OP_REQUEST_REVERSE;
	memcpy(a + 8, mac, 6);  /* sender hardware address */
	memcpy(a + 18, mac, 6); /* target hardware address: the one asking about itself */
	sw_inject(sw, p, f, sizeof(f));
}
