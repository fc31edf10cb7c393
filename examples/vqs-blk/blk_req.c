/* SPDX-License-Identifier: MIT */
#include "blk_req.h"

#include <errno.h>
#include <string.h>

#include "blk_spec.h"

#define MAX_SEGS 1024 /* the ring's own cap on iovecs per chain */
#define MAX_DISCARD_SEGS 256

/* dst = the bytes [skip, skip+len) of src[0..n). Returns the iovec count (len must fit). */
static unsigned iov_slice(const struct iovec *src, unsigned n, size_t skip, size_t len,
			  struct iovec *dst)
{
	unsigned k = 0;
	for (unsigned i = 0; i < n && len; i++) {
		size_t l = src[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t c = l - skip < len ? l - skip : len;
		dst[k++] = (struct iovec){ (char *)src[i].iov_base + skip, c };
		len -= c;
		skip = 0;
	}
	return k;
}

/* Copy len bytes at offset skip of src[0..n) into buf: the one read of guest bytes. */
static void iov_copy_out(const struct iovec *src, unsigned n, size_t skip, void *buf, size_t len)
{
	struct iovec part[MAX_SEGS];
	unsigned k = iov_slice(src, n, skip, len, part);
	char *p = buf;
	for (unsigned i = 0; i < k; i++) {
		memcpy(p, part[i].iov_base, part[i].iov_len);
		p += part[i].iov_len;
	}
}

static void iov_copy_in(const struct iovec *dst, unsigned n, size_t skip, const void *buf,
			size_t len)
{
	struct iovec part[MAX_SEGS];
	unsigned k = iov_slice(dst, n, skip, len, part);
	const char *p = buf;
	for (unsigned i = 0; i < k; i++) {
		memcpy(part[i].iov_base, p, part[i].iov_len);
		p += part[i].iov_len;
	}
}

static bool range_ok(const struct blk_disk *d, uint64_t sector, uint64_t nsectors)
{
	return sector <= d->sectors && nsectors <= d->sectors - sector;
}

/* IN and OUT: len data bytes at `data` (readable for OUT, writable for IN). */
static uint8_t do_rw(const struct blk_disk *d, bool write, uint64_t sector,
		     const struct iovec *iov, unsigned n, size_t skip, uint64_t len)
{
	if (len % BLK_SECTOR_SIZE || !range_ok(d, sector, len >> BLK_SECTOR_SHIFT))
		return BLK_S_IOERR;
	struct iovec part[MAX_SEGS];
	unsigned k = iov_slice(iov, n, skip, len, part);
	return blk_disk_rw(d, write, sector << BLK_SECTOR_SHIFT, part, k) ? BLK_S_IOERR : BLK_S_OK;
}

static uint8_t do_discard(const struct blk_disk *d, const struct blk_limits *lim, uint32_t type,
			  const struct vqs_elem *e)
{
	uint32_t len = e->out_len - (uint32_t)sizeof(struct blk_outhdr);
	size_t nseg = len / sizeof(struct blk_discard_seg);
	if (len == 0 || len % sizeof(struct blk_discard_seg) || nseg > lim->max_discard_seg ||
	    nseg > MAX_DISCARD_SEGS)
		return BLK_S_IOERR;
	struct blk_discard_seg seg[MAX_DISCARD_SEGS];
	iov_copy_out(e->iov, e->out_num, sizeof(struct blk_outhdr), seg, len);
	/* Every segment is checked before any is applied: a bad one fails the request whole. */
	uint32_t allowed = type == BLK_T_WRITE_ZEROES ? BLK_WZ_F_UNMAP : 0;
	for (size_t i = 0; i < nseg; i++) {
		if (seg[i].flags & ~allowed)
			return BLK_S_UNSUPP;
		if (seg[i].num_sectors > lim->max_discard_sectors ||
		    !range_ok(d, seg[i].sector, seg[i].num_sectors))
			return BLK_S_IOERR;
	}
	for (size_t i = 0; i < nseg; i++)
		if (seg[i].num_sectors &&
		    blk_disk_punch(d, seg[i].sector << BLK_SECTOR_SHIFT,
				   (uint64_t)seg[i].num_sectors << BLK_SECTOR_SHIFT))
			return BLK_S_IOERR;
	return BLK_S_OK;
}

static uint8_t do_get_id(const struct blk_limits *lim, const struct vqs_elem *e, uint32_t room)
{
	const struct iovec *in = e->iov + e->out_num;
	iov_copy_in(in, e->in_num, 0, lim->id, room < BLK_ID_BYTES ? room : BLK_ID_BYTES);
	return BLK_S_OK;
}

static uint8_t dispatch(const struct blk_disk *d, const struct blk_limits *lim,
			const struct vqs_elem *e, const struct blk_outhdr *h)
{
	const struct iovec *in = e->iov + e->out_num;
	uint32_t room = e->in_len - 1; /* writable bytes before the status byte */
	uint32_t extra_out = e->out_len - (uint32_t)sizeof(*h);
	switch (h->type) {
	case BLK_T_IN:
		return extra_out ? BLK_S_IOERR : do_rw(d, false, h->sector, in, e->in_num, 0, room);
	case BLK_T_OUT:
		return room ? BLK_S_IOERR
			    : do_rw(d, true, h->sector, e->iov, e->out_num, sizeof(*h), extra_out);
	case BLK_T_FLUSH:
		return extra_out || room ? BLK_S_IOERR : blk_disk_flush(d) ? BLK_S_IOERR : BLK_S_OK;
	case BLK_T_GET_ID:
		return extra_out ? BLK_S_IOERR : do_get_id(lim, e, room);
	case BLK_T_DISCARD:
	case BLK_T_WRITE_ZEROES:
		return room ? BLK_S_IOERR : do_discard(d, lim, h->type, e);
	default:
		return BLK_S_UNSUPP;
	}
}

uint32_t blk_req_run(const struct blk_disk *d, const struct blk_limits *lim,
		     const struct vqs_elem *e)
{
	if (e->in_len == 0)
		return 0; /* no room for a status byte: nothing can be reported */
	struct blk_outhdr h;
	uint8_t status = BLK_S_IOERR;
	if (e->out_len >= sizeof(h)) {
		iov_copy_out(e->iov, e->out_num, 0, &h, sizeof(h));
		status = dispatch(d, lim, e, &h);
	}
	iov_copy_in(e->iov + e->out_num, e->in_num, e->in_len - 1, &status, 1);
	return e->in_len;
}
