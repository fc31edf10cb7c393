/* SPDX-License-Identifier: MIT */
/*
 * Inflight I/O tracking for packed rings, in the region layout of QEMU's
 * docs/interop/vhost-user.rst ("Inflight I/O tracking", packed virtqueue): every popped chain's
 * descriptors are copied into entries taken from a free list; a chain's head entry carries its
 * length, its last entry, a pop counter and the inflight mark. Completing chains pushes their
 * entries back, and the "old_" fields commit each step so that a restarted backend can roll a
 * torn step back (or forward, when the used descriptors did reach the ring) and resubmit exactly
 * the chains that were popped and never completed, in pop order.
 *
 * The region outlives this process and is shared with the frontend: every field is read once
 * into a local and range-checked before use. A corrupt free list detaches the region (tracking
 * stops, the queue keeps running) instead of breaking the queue.
 *
 * Stores to the region only have to survive a crash of this process, not be seen by another
 * thread in order: compiler fences (atomic_signal_fence) keep each commit step in program order.
 */
#include "ring/vq_internal.h"

#include <errno.h>
#include <string.h>

#include "util/log.h"

struct desc_state {
	uint8_t inflight;
	uint8_t padding;
	uint16_t next;
	uint16_t last;
	uint16_t num;
	uint64_t counter;
	uint16_t id;
	uint16_t flags;
	uint32_t len;
	uint64_t addr;
};

struct vqs_packed_inflight {
	uint64_t features;
	uint16_t version;
	uint16_t desc_num;
	uint16_t free_head;
	uint16_t old_free_head;
	uint16_t used_idx;
	uint16_t old_used_idx;
	uint8_t used_wrap_counter;
	uint8_t old_used_wrap_counter;
	uint8_t padding[7];
	struct desc_state desc[];
};

_Static_assert(sizeof(struct desc_state) == 32, "DescStatePacked is 32 bytes");
_Static_assert(sizeof(struct vqs_packed_inflight) == 32, "QueueRegionPacked header is 32 bytes");

#define REGION_VERSION 1
#define REGION_ALIGN 64 /* queue regions are laid out at this alignment, as libvhost-user does */
#define NONE 0xffffu

static struct vqs_packed_ring *ring(struct vqs_vq *vq) { return &vq->u.packed; }

/* Keeps the region stores before it ahead of those after it (crash consistency only). */
static void step(void) { atomic_signal_fence(memory_order_seq_cst); }

size_t vqs_packed_inflight_size(unsigned num)
{
	size_t len = sizeof(struct vqs_packed_inflight) + (size_t)num * sizeof(struct desc_state);
	return (len + REGION_ALIGN - 1) & ~(size_t)(REGION_ALIGN - 1);
}

unsigned vqs_packed_inflight_pending(const struct vqs_vq *vq)
{
	return vq->u.packed.resubmit_pending;
}

static void detach(struct vqs_vq *vq, const char *why)
{
	vqs_warn("packed queue (num %u): inflight region %s; tracking stopped", vq->cfg.num, why);
	struct vqs_packed_ring *p = ring(vq);
	p->inflight = NULL;
	p->resubmit_pending = 0;
}

static void init_fresh(struct vqs_vq *vq, struct vqs_packed_inflight *r)
{
	struct vqs_packed_ring *p = ring(vq);
	unsigned num = vq->cfg.num;
	memset(r, 0, vqs_packed_inflight_size(num));
	for (unsigned i = 0; i < num; i++)
		r->desc[i].next = (uint16_t)(i + 1);
	r->free_head = r->old_free_head = 0;
	r->used_idx = r->old_used_idx = p->used_idx;
	r->used_wrap_counter = r->old_used_wrap_counter = p->used_wrap;
	r->desc_num = (uint16_t)num;
	step();
	r->version = REGION_VERSION;
}

/* Did the previous backend publish the used descriptor at slot idx (used wrap counter wrap)?
 * Then its flags no longer show the buffer available. */
static bool published(struct vqs_vq *vq, uint16_t idx, bool wrap)
{
	/* Acquire pairs with the driver's release store of the flags when it reused the slot. */
	uint16_t flags = vqs_packed_flags_acquire(&ring(vq)->desc[idx]);
	return !vqs_packed_desc_is_avail(flags, wrap);
}

/*
 * fill stores every used descriptor's flags but its batch's first, which flush stores last, so a
 * backend that died with a batch staged can leave descriptors on the ring that look used, in
 * slots the driver has not reached. Once the next backend publishes the slots before them, the
 * driver would take them for completions of chains that are about to be resubmitted, and reuse
 * their ids while they run. The `slots` slots from the used position (idx, wrap) on belong to
 * the chains in flight: those that look used get the flags of an available descriptor back.
 */
static void unpublish_stale(struct vqs_vq *vq, uint16_t idx, bool wrap, unsigned slots)
{
	struct vqs_vring_packed_desc *desc = ring(vq)->desc;
	for (unsigned k = 0; k < slots; k++) {
		uint16_t f = vqs_packed_flags_acquire(&desc[idx]);
		if (vqs_packed_desc_is_used(f, wrap))
			vqs_packed_flags_release(&desc[idx],
						 (uint16_t)((f & ~(VQS_PACKED_F_AVAIL | VQS_PACKED_F_USED)) |
							    (wrap ? VQS_PACKED_F_AVAIL : VQS_PACKED_F_USED)));
		vqs_packed_advance(&idx, &wrap, 1, vq->cfg.num);
	}
}

/*
 * Take over a previous backend's region (vhost-user.rst "When reconnecting"). vq.c resolved the
 * ring first, to tell whether a torn completion reached it. 0 or -EINVAL.
 */
static int restore(struct vqs_vq *vq, struct vqs_packed_inflight *r)
{
	struct vqs_packed_ring *p = ring(vq);
	unsigned num = vq->cfg.num;
	if (r->version != REGION_VERSION || r->desc_num != num)
		return -EINVAL;
	uint16_t used = r->used_idx, old_used = r->old_used_idx;
	uint16_t free_head = r->free_head, old_free = r->old_free_head;
	bool wrap = r->used_wrap_counter, old_wrap = r->old_used_wrap_counter;
	if (used >= num || old_used >= num || free_head > num || old_free > num)
		return -EINVAL;
	if (used != old_used && published(vq, old_used, old_wrap)) {
		/* The used descriptors reached the ring before the crash: commit that step. */
		old_free = free_head;
		old_used = used;
		old_wrap = wrap;
	}
	/* Roll anything else back. */
	r->free_head = r->old_free_head = old_free;
	r->used_idx = r->old_used_idx = old_used;
	r->used_wrap_counter = r->old_used_wrap_counter = old_wrap;

	/* Entries on the free list are not in flight, whatever their mark says. */
	uint16_t e = old_free;
	for (unsigned i = 0; e < num; i++) {
		if (i >= num)
			return -EINVAL; /* the free list loops */
		r->desc[e].inflight = 0;
		e = r->desc[e].next;
	}

	/* What is left marked is in flight: resubmit it, and resume the ring right after it
	 * (slots popped = slots used + slots of chains in flight). */
	unsigned pending = 0, slots = 0;
	uint64_t max_counter = 0;
	for (unsigned i = 0; i < num; i++) {
		if (!r->desc[i].inflight)
			continue;
		uint16_t n = r->desc[i].num;
		uint64_t counter = r->desc[i].counter;
		if (n == 0 || n > num || counter == 0)
			return -EINVAL;
		pending++;
		slots += n;
		if (counter > max_counter)
			max_counter = counter;
	}
	if (slots > num)
		return -EINVAL;
	p->used_idx = p->stage_idx = p->signalled_idx = old_used;
	p->used_wrap = p->stage_wrap = p->signalled_wrap = old_wrap;
	p->signalled_valid = false;
	p->last_avail_idx = old_used;
	p->avail_wrap = old_wrap;
	vqs_packed_advance(&p->last_avail_idx, &p->avail_wrap, slots, num);
	p->head_seen = false;
	unpublish_stale(vq, old_used, old_wrap, slots);
	p->resubmit_pending = pending;
	p->restored_counter = max_counter;
	p->resubmit_after = 0;
	p->inflight_counter = max_counter + 1;
	return 0;
}

int vqs_packed_set_inflight(struct vqs_vq *vq, void *region, size_t len, bool restore_it)
{
	struct vqs_packed_ring *p = ring(vq);
	if (!region) {
		p->inflight = NULL;
		p->resubmit_pending = 0;
		return 0;
	}
	if (len < vqs_packed_inflight_size(vq->cfg.num) || (uintptr_t)region % 8)
		return -EINVAL;
	/* Entries must be recorded from the first pop on; attaching mid-flight cannot be
	 * consistent. */
	if (p->unfilled_descs || p->staged)
		return -EBUSY;
	struct vqs_packed_inflight *r = region;
	p->rec_bad = false;
	p->inflight_counter = 1;
	p->restored_counter = p->resubmit_after = 0;
	p->resubmit_pending = 0;
	if (restore_it && r->version != 0) {
		int rc = restore(vq, r);
		if (rc)
			return rc;
	} else {
		init_fresh(vq, r);
	}
	p->inflight = r;
	return 0;
}

uint16_t vqs_packed_inflight_first(struct vqs_vq *vq)
{
	return ring(vq)->inflight->free_head;
}

uint16_t vqs_packed_inflight_record(struct vqs_vq *vq, uint16_t entry,
				    const struct vqs_vring_packed_desc *d)
{
	struct vqs_packed_ring *p = ring(vq);
	if (entry >= vq->cfg.num) {
		p->rec_bad = true;
		return NONE;
	}
	struct desc_state *s = &p->inflight->desc[entry];
	s->addr = d->addr;
	s->len = d->len;
	s->flags = d->flags;
	s->id = d->id;
	p->rec_last = entry;
	return s->next;
}

uint16_t vqs_packed_inflight_commit(struct vqs_vq *vq, unsigned ndescs)
{
	struct vqs_packed_ring *p = ring(vq);
	struct vqs_packed_inflight *r = p->inflight;
	uint16_t head = r->free_head;
	if (p->rec_bad || head >= vq->cfg.num) {
		detach(vq, "free list is corrupt");
		return 0;
	}
	struct desc_state *h = &r->desc[head];
	h->num = (uint16_t)ndescs;
	h->last = p->rec_last;
	h->counter = p->inflight_counter++;
	step();
	h->inflight = 1;
	step();
	r->free_head = r->desc[p->rec_last].next;
	r->old_free_head = r->free_head;
	return head;
}

static uint16_t chain_last(struct vqs_vq *vq, uint16_t head)
{
	uint16_t last = ring(vq)->inflight->desc[head].last;
	return last < vq->cfg.num ? last : head;
}

bool vqs_packed_inflight_unpop(struct vqs_vq *vq, uint16_t entry)
{
	struct vqs_packed_ring *p = ring(vq);
	struct vqs_packed_inflight *r = p->inflight;
	uint64_t counter = r->desc[entry].counter;
	if (counter <= p->restored_counter) {
		if (counter - 1 < p->resubmit_after)
			p->resubmit_after = counter - 1;
		p->resubmit_pending++;
		return true;
	}
	r->desc[chain_last(vq, entry)].next = r->free_head;
	r->free_head = entry;
	step();
	r->desc[entry].inflight = 0;
	step();
	r->old_free_head = r->free_head;
	return false;
}

void vqs_packed_inflight_stage(struct vqs_vq *vq, uint16_t entry, bool first)
{
	/* Staged chains are linked through their last entries' next (unused while in flight:
	 * a resubmission walks a chain by its length, never past its last entry). */
	struct vqs_packed_ring *p = ring(vq);
	if (first)
		p->staged_first = entry;
	else
		p->inflight->desc[p->staged_last].next = entry;
	p->staged_last = chain_last(vq, entry);
}

void vqs_packed_inflight_flush_begin(struct vqs_vq *vq)
{
	struct vqs_packed_ring *p = ring(vq);
	struct vqs_packed_inflight *r = p->inflight;
	r->desc[p->staged_last].next = r->free_head;
	r->free_head = p->staged_first;
	r->used_idx = p->stage_idx;
	r->used_wrap_counter = p->stage_wrap;
	step();
}

void vqs_packed_inflight_flush_end(struct vqs_vq *vq, unsigned count)
{
	struct vqs_packed_ring *p = ring(vq);
	struct vqs_packed_inflight *r = p->inflight;
	step();
	uint16_t head = p->staged_first;
	for (unsigned i = 0; i < count && head < vq->cfg.num; i++) {
		r->desc[head].inflight = 0;
		head = r->desc[chain_last(vq, head)].next;
	}
	step();
	r->old_free_head = r->free_head;
	r->old_used_idx = r->used_idx;
	r->old_used_wrap_counter = r->used_wrap_counter;
}

int vqs_packed_inflight_next(struct vqs_vq *vq, unsigned *ndescs)
{
	struct vqs_packed_ring *p = ring(vq);
	struct vqs_packed_inflight *r = p->inflight;
	int best = -1;
	uint64_t best_counter = 0;
	for (unsigned i = 0; r && i < vq->cfg.num; i++) {
		uint64_t c = r->desc[i].counter;
		if (!r->desc[i].inflight || c <= p->resubmit_after || c > p->restored_counter)
			continue;
		if (best < 0 || c < best_counter) {
			best = (int)i;
			best_counter = c;
		}
	}
	if (best < 0) {
		p->resubmit_pending = 0; /* the region changed under us: nothing left to trust */
		return -1;
	}
	uint16_t n = r->desc[best].num;
	if (n == 0 || n > vq->cfg.num) {
		detach(vq, "holds a chain of bad length");
		return -1;
	}
	*ndescs = n;
	return best;
}

int vqs_packed_inflight_desc(struct vqs_vq *vq, uint16_t entry, struct vqs_vring_packed_desc *d)
{
	if (entry >= vq->cfg.num)
		return -1;
	const struct desc_state *s = &ring(vq)->inflight->desc[entry];
	d->addr = s->addr;
	d->len = s->len;
	d->flags = s->flags;
	d->id = s->id;
	return s->next;
}

void vqs_packed_inflight_resubmitted(struct vqs_vq *vq, uint16_t head)
{
	struct vqs_packed_ring *p = ring(vq);
	p->resubmit_after = p->inflight->desc[head].counter;
	p->resubmit_pending--;
}
