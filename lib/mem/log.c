/* SPDX-License-Identifier: MIT */
/*
 * Read side of the dirty log: marking the pages the device wrote in the bitmap a table carries.
 * Writers of the log are the queues' owners (any number of threads) and the frontend, which
 * clears bytes as it syncs: every change is an atomic or. A byte is loaded first and or-ed only
 * when it lacks a bit, so a page written again and again costs a load, not a locked operation
 * on a line the frontend also writes.
 */
#include <stdlib.h>
#include <unistd.h>

#include "mem/table.h"

void vqs_mem_log_put(struct mem_log_obj *o)
{
	/* acq_rel: the last dropper sees every mark made under the other references. */
	if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (o->l.release)
		o->l.release(o->l.release_opaque, o->l.bitmap, o->l.len);
	free(o);
}

bool vqs_mem_logging(const struct vqs_mem_table *t) { return t->log != NULL; }

void vqs_mem_log_signal(const struct vqs_mem_table *t)
{
	if (t->log_fd < 0)
		return;
	/* After the marks (each released). A full counter (EAGAIN: the fd is non-blocking,
	 * vqs_mem_set_log_fd) has a signal pending already. */
	uint64_t one = 1;
	ssize_t r = write(t->log_fd, &one, sizeof(one));
	(void)r;
}

/* Set `bits` in byte i of the log. */
static void mark_byte(uint8_t *log, uint64_t i, uint8_t bits)
{
	_Atomic uint8_t *b = (_Atomic uint8_t *)&log[i];
	/* Release pairs with the frontend's exchange of this byte when it syncs the log: the
	 * guest memory written before the mark is visible once the mark is. */
	if ((atomic_load_explicit(b, memory_order_relaxed) & bits) != bits)
		atomic_fetch_or_explicit(b, bits, memory_order_release);
}

/* Mark pages [first, last] (both inside or past the log: clipped here). */
static void mark_pages(const struct vqs_mem_table *t, uint64_t first, uint64_t last)
{
	uint64_t npages = t->log_len * 8;
	if (first >= npages)
		return;
	if (last >= npages)
		last = npages - 1;
	while (first <= last) {
		uint64_t byte = first / 8;
		unsigned lo = (unsigned)(first % 8);
		unsigned hi = byte == last / 8 ? (unsigned)(last % 8) : 7;
		mark_byte(t->log, byte, (uint8_t)((0xffu >> (7 - hi)) & (0xffu << lo)));
		first = byte * 8 + 8;
	}
}

void vqs_mem_log_write(const struct vqs_mem_table *t, uint64_t gpa, uint64_t len)
{
	if (!t->log || !len)
		return;
	uint64_t last = len - 1 > UINT64_MAX - gpa ? UINT64_MAX : gpa + len - 1;
	mark_pages(t, gpa / VQS_MEM_LOG_PAGE, last / VQS_MEM_LOG_PAGE);
}

/* Slot whose host mapping holds p, or NULL; *hint is tried first and updated on a hit. */
static const struct mem_slot *find_host(const struct vqs_mem_table *t, uintptr_t p,
					unsigned *hint)
{
	const struct mem_slot *s;
	if (*hint < t->n) {
		s = &t->slots[*hint];
		if (p >= (uintptr_t)s->host && p - (uintptr_t)s->host < s->size)
			return s;
	}
	unsigned lo = 0, hi = t->n;
	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if ((uintptr_t)t->slots[t->by_host[mid]].host <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	s = &t->slots[t->by_host[lo - 1]];
	if (p - (uintptr_t)s->host >= s->size)
		return NULL;
	*hint = t->by_host[lo - 1];
	return s;
}

/*
 * Buffers are known by their host iovecs; the log wants guest physical pages. Each iovec lies
 * inside one region (translation splits at region ends), so one lookup by host address gives the
 * gpa of its first byte, and the rest follows (Linux vhost logs IOTLB buffers the same way).
 * Keeping gpas beside the iovecs instead would cost every pop a store per buffer while logging
 * is off, which is nearly always.
 */
void vqs_mem_log_iov(const struct vqs_mem_table *t, const struct iovec *iov, unsigned n,
		     uint64_t bytes)
{
	unsigned hint = 0;
	for (unsigned i = 0; i < n && bytes; i++) {
		uint64_t len = iov[i].iov_len < bytes ? iov[i].iov_len : bytes;
		bytes -= len;
		uintptr_t p = (uintptr_t)iov[i].iov_base;
		const struct mem_slot *s = find_host(t, p, &hint);
		if (!s || !len)
			continue;
		uint64_t off = p - (uintptr_t)s->host;
		if (len > s->size - off)
			len = s->size - off;
		vqs_mem_log_write(t, s->gpa + off, len);
	}
}
