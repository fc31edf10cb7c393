/* SPDX-License-Identifier: MIT */
/*
 * Read side of the memory map: gpa and uaddr lookups in one immutable table. Nothing here writes
 * shared state or uses atomics; the caller keeps the table alive (read-side section or pin).
 * Ranges are handled through their last byte (start + len - 1), so a range or region may end at
 * the very top of the address space while anything that wraps is rejected.
 */
#include <errno.h>
#include <string.h>

#include "mem/table.h"

static bool slot_holds(const struct mem_slot *s, uint64_t addr, uint64_t base)
{
	return addr >= base && addr - base < s->size;
}

const struct mem_slot *vqs_mem_find_gpa(const struct vqs_mem_table *t, uint64_t gpa,
					unsigned *hint)
{
	if (*hint < t->n && slot_holds(&t->slots[*hint], gpa, t->slots[*hint].gpa))
		return &t->slots[*hint];
	/* Last slot starting at or below gpa: the only one that can hold it. */
	unsigned lo = 0, hi = t->n;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (t->slots[mid].gpa <= gpa)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || !slot_holds(&t->slots[lo - 1], gpa, t->slots[lo - 1].gpa))
		return NULL;
	*hint = lo - 1;
	return &t->slots[lo - 1];
}

static const struct mem_slot *find_uaddr(const struct vqs_mem_table *t, uint64_t uaddr)
{
	unsigned lo = 0, hi = t->n;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (t->slots[t->by_uaddr[mid]].uaddr <= uaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct mem_slot *s = &t->slots[t->by_uaddr[lo - 1]];
	return slot_holds(s, uaddr, s->uaddr) ? s : NULL;
}

/* Bytes of s from addr (inside s, whose first byte is at base) to the end of s. */
static uint64_t slot_rest(const struct mem_slot *s, uint64_t addr, uint64_t base)
{
	return s->size - (addr - base);
}

static bool range_wraps(uint64_t start, uint64_t len)
{
	return len && len - 1 > UINT64_MAX - start;
}

int vqs_mem_translate(const struct vqs_mem_table *t, uint64_t gpa, uint64_t len,
		      struct iovec *iov, unsigned cap, unsigned *hint)
{
	if (range_wraps(gpa, len))
		return -EFAULT;
	/* Keep walking after the iovecs run out: a range that is also unmapped is the guest's
	 * fault (-EFAULT), not a storage problem the caller could retry (-ENOBUFS). */
	unsigned niov = 0;
	while (len) {
		const struct mem_slot *s = vqs_mem_find_gpa(t, gpa, hint);
		if (!s)
			return -EFAULT;
		uint64_t rest = slot_rest(s, gpa, s->gpa);
		uint64_t chunk = len < rest ? len : rest;
		if (niov < cap) {
			iov[niov].iov_base = s->host + (gpa - s->gpa);
			iov[niov].iov_len = chunk;
		}
		niov++;
		len -= chunk;
		gpa += chunk; /* wraps to 0 only when len just became 0 */
	}
	return niov > cap ? -ENOBUFS : (int)niov;
}

void *vqs_mem_gpa_to_host(const struct vqs_mem_table *t, uint64_t gpa, uint64_t len)
{
	unsigned hint = 0;
	const struct mem_slot *s = vqs_mem_find_gpa(t, gpa, &hint);
	if (!s || len > slot_rest(s, gpa, s->gpa))
		return NULL;
	return s->host + (gpa - s->gpa);
}

void *vqs_mem_uaddr_to_host(const struct vqs_mem_table *t, uint64_t uaddr, uint64_t len)
{
	const struct mem_slot *s = find_uaddr(t, uaddr);
	if (!s || len > slot_rest(s, uaddr, s->uaddr))
		return NULL;
	return s->host + (uaddr - s->uaddr);
}

int vqs_mem_uaddr_to_gpa(const struct vqs_mem_table *t, uint64_t uaddr, uint64_t len,
			 uint64_t *gpa)
{
	const struct mem_slot *s = find_uaddr(t, uaddr);
	if (!s || len > slot_rest(s, uaddr, s->uaddr))
		return -EFAULT;
	*gpa = s->gpa + (uaddr - s->uaddr);
	return 0;
}

int vqs_mem_copy_from(const struct vqs_mem_table *t, uint64_t gpa, void *dst, size_t len)
{
	if (range_wraps(gpa, len))
		return -EFAULT;
	unsigned hint = 0;
	uint8_t *out = dst;
	while (len) {
		const struct mem_slot *s = vqs_mem_find_gpa(t, gpa, &hint);
		if (!s)
			return -EFAULT;
		uint64_t rest = slot_rest(s, gpa, s->gpa);
		size_t chunk = len < rest ? len : (size_t)rest;
		memcpy(out, s->host + (gpa - s->gpa), chunk);
		out += chunk;
		len -= chunk;
		gpa += chunk;
	}
	return 0;
}

uint64_t vqs_mem_table_gen(const struct vqs_mem_table *t) { return t->gen; }
