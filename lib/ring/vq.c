/* SPDX-License-Identifier: MIT */
/*
 * The public vqs_vq_* entry points: configuration, the memory-table generation check that keeps
 * the cached ring pointers valid, the broken state, and dispatch to the layout's ops table.
 */
#include "ring/vq_internal.h"
#include "util/log.h"
#include "util/alloc.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/*
 * The device's iovec limit when the configuration leaves it to us: the longest legal chain (the
 * queue size in descriptors, 2.7.5.3.1 / 2.8.18) with room for buffers that cross into adjacent
 * memory regions, four iovecs a descriptor; never below QEMU's 1024 (VIRTQUEUE_MAX_SIZE), never
 * above what the element's 16-bit counts hold.
 */
static unsigned default_max_iov(unsigned num)
{
	unsigned n = 4 * num;
	return n < 1024 ? 1024 : n > UINT16_MAX ? UINT16_MAX : n;
}

static const char *const err_names[VQS_VQ_ERR__COUNT] = {
	[VQS_VQ_OK] = "ok",
	[VQS_VQ_ERR_RING_UNMAPPED] = "ring-unmapped",
	[VQS_VQ_ERR_AVAIL_IDX] = "avail-idx",
	[VQS_VQ_ERR_HEAD_RANGE] = "head-range",
	[VQS_VQ_ERR_NEXT_RANGE] = "next-range",
	[VQS_VQ_ERR_LOOP] = "loop",
	[VQS_VQ_ERR_CHAIN_LEN] = "chain-len",
	[VQS_VQ_ERR_NESTED_INDIRECT] = "nested-indirect",
	[VQS_VQ_ERR_INDIRECT_NEXT] = "indirect-next",
	[VQS_VQ_ERR_INDIRECT_LEN] = "indirect-len",
	[VQS_VQ_ERR_WRITE_ORDER] = "write-order",
	[VQS_VQ_ERR_ADDR] = "addr",
	[VQS_VQ_ERR_CHAIN_BYTES] = "chain-bytes",
	[VQS_VQ_ERR_BUFFER_ID] = "buffer-id",
	[VQS_VQ_ERR_WRAP] = "wrap",
	[VQS_VQ_ERR_INDIRECT_FLAGS] = "indirect-flags",
	[VQS_VQ_ERR_INDIRECT_FEATURE] = "indirect-feature",
	[VQS_VQ_ERR_IOV_LIMIT] = "iov-limit",
};

const char *vqs_vq_err_name(enum vqs_vq_err err)
{
	if ((unsigned)err >= VQS_VQ_ERR__COUNT)
		return "unknown";
	return err_names[err];
}

/* The layout's ops table for a feature set. */
static const struct vqs_ring_ops *layout_ops(uint64_t features)
{
	if (features & VQS_BIT(VQS_F_RING_PACKED))
		return &vqs_packed_ops;
	return &vqs_split_ops;
}

int vqs_vq_create(struct vqs_vq **out)
{
	struct vqs_vq *vq = vqs_alloc_lines(1, sizeof(*vq));
	if (!vq)
		return -ENOMEM;
	*out = vq;
	return 0;
}

static void unconfigure(struct vqs_vq *vq)
{
	if (vq->ops)
		vq->ops->set_inflight(vq, NULL, 0, false);
	vq->ops = NULL;
	free(vq->indirect_buf);
	vq->indirect_buf = NULL;
	free(vq->id_state);
	vq->id_state = NULL;
	free(vq->lg.iov);
	free(vq->lg.held);
	vq->lg = (struct vqs_long_area){0};
	vq->resolved = false;
	vq->hint = 0;
	atomic_store_explicit(&vq->err, VQS_VQ_OK, memory_order_relaxed);
}

void vqs_vq_destroy(struct vqs_vq *vq)
{
	if (!vq)
		return;
	unconfigure(vq);
	free(vq);
}

void vqs_vq_reset(struct vqs_vq *vq)
{
	unconfigure(vq);
	memset(&vq->cfg, 0, sizeof(vq->cfg));
}

static bool aligned(uint64_t addr, uint64_t align) { return (addr & (align - 1)) == 0; }

int vqs_vq_configure(struct vqs_vq *vq, const struct vqs_vq_config *cfg)
{
	/* Everything before max_iov is mandatory; later fields take their defaults. */
	if (!vq || !cfg || cfg->size < offsetof(struct vqs_vq_config, max_iov) || !cfg->mem)
		return -EINVAL;
	struct vqs_vq_config c = {0};
	memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	c.size = sizeof(c);
	bool packed = c.features & VQS_BIT(VQS_F_RING_PACKED);
	if (c.num < 1 || c.num > VQS_VQ_MAX_SIZE || (!packed && (c.num & (c.num - 1))))
		return -EINVAL;
	if (c.addr_space != VQS_ADDR_GPA && c.addr_space != VQS_ADDR_UADDR)
		return -EINVAL;
	/* 2.7 / 2.8 alignment of the three areas. */
	if (!aligned(c.desc_addr, VQS_VRING_DESC_ALIGN) ||
	    !aligned(c.driver_addr, packed ? VQS_VRING_PACKED_EVENT_ALIGN : VQS_VRING_AVAIL_ALIGN) ||
	    !aligned(c.device_addr, packed ? VQS_VRING_PACKED_EVENT_ALIGN : VQS_VRING_USED_ALIGN))
		return -EINVAL;
	if (c.max_iov == 0)
		c.max_iov = default_max_iov(c.num);
	if (c.max_iov > UINT16_MAX)
		c.max_iov = UINT16_MAX;
	const struct vqs_ring_ops *ops = layout_ops(c.features);
	void *indirect = NULL;
	struct vqs_long_area lg = {.iov = malloc(sizeof(struct iovec) * c.max_iov),
				   .held = calloc(c.num, 1)};
	void *id_state = calloc(c.num, ops->id_state_size);
	bool ind = c.features & VQS_BIT(VQS_F_INDIRECT_DESC);
	if ((ind && !(indirect = malloc(sizeof(struct vqs_vring_desc) * (size_t)c.num))) ||
	    !lg.iov || !lg.held || !id_state) {
		free(indirect);
		free(lg.iov);
		free(lg.held);
		free(id_state);
		return -ENOMEM;
	}
	unconfigure(vq);
	vq->cfg = c;
	vq->indirect_buf = indirect;
	vq->id_state = id_state;
	vq->lg = lg;
	vq->ops = ops;
	ops->reset_state(vq);
	return 0;
}

bool vqs_vq_is_configured(const struct vqs_vq *vq) { return vq->ops != NULL; }

bool vqs_vq_is_packed(const struct vqs_vq *vq)
{
	return vq->ops && (vq->cfg.features & VQS_BIT(VQS_F_RING_PACKED));
}

unsigned vqs_vq_num(const struct vqs_vq *vq) { return vq->ops ? vq->cfg.num : 0; }

int vqs_vq_get_config(const struct vqs_vq *vq, struct vqs_vq_config *cfg)
{
	if (!vq->ops)
		return -EINVAL;
	*cfg = vq->cfg;
	cfg->size = sizeof(*cfg);
	return 0;
}

enum vqs_vq_err vqs_vq_error(const struct vqs_vq *vq)
{
	return (enum vqs_vq_err)atomic_load_explicit(&vq->err, memory_order_relaxed);
}

bool vqs_vq_is_broken(const struct vqs_vq *vq) { return vqs_vq_error(vq) != VQS_VQ_OK; }

int vqs_vq_break(struct vqs_vq *vq, enum vqs_vq_err err)
{
	int none = VQS_VQ_OK;
	/* Relaxed: the reason is informational for other threads; the owner reads its own write. */
	if (atomic_compare_exchange_strong_explicit(&vq->err, &none, (int)err, memory_order_relaxed,
						    memory_order_relaxed))
		vqs_warn("virtqueue (num %u, desc 0x%llx) broken: %s", vq->cfg.num,
			 (unsigned long long)vq->cfg.desc_addr, vqs_vq_err_name(err));
	return -EIO;
}

void *vqs_vq_ring_area(const struct vqs_vq *vq, const struct vqs_mem_table *t, uint64_t addr,
		       uint64_t len)
{
	return vq->cfg.addr_space == VQS_ADDR_UADDR ? vqs_mem_uaddr_to_host(t, addr, len)
						    : vqs_mem_gpa_to_host(t, addr, len);
}

/*
 * The ring pointers cached in the layout state are valid for one table generation: re-resolve
 * them whenever the table was replaced (the old mappings may go away after the grace period).
 */
static enum vqs_vq_err ensure_resolved(struct vqs_vq *vq, const struct vqs_mem_table *t)
{
	uint64_t gen = t->gen;
	if (vq->resolved && vq->resolved_gen == gen)
		return VQS_VQ_OK;
	vq->resolved = false;
	enum vqs_vq_err err = vq->ops->resolve(vq, t);
	if (err != VQS_VQ_OK)
		return err;
	vq->resolved_gen = gen;
	vq->resolved = true;
	return VQS_VQ_OK;
}

/* Configured, not broken, ring areas resolved in the current table: ready for ring access.
 * Caller is inside vqs_mem_read_lock(). */
static int ring_ready(struct vqs_vq *vq, const struct vqs_mem_table **tp)
{
	if (!vq->ops)
		return -EINVAL;
	if (atomic_load_explicit(&vq->err, memory_order_relaxed) != VQS_VQ_OK)
		return -EIO;
	const struct vqs_mem_table *t = mem_current(vq->cfg.mem);
	enum vqs_vq_err err = ensure_resolved(vq, t);
	if (err != VQS_VQ_OK)
		return vqs_vq_break(vq, err);
	if (tp)
		*tp = t;
	return 0;
}

/* Enter the read-side section and check the queue: 0 with ss->table current, or the error,
 * with the section left (session_enter's way when the session is out of its section, or the
 * queue broke). */
static __attribute__((noinline)) int session_enter_check(struct vqs_vq_session *ss)
{
	int rc = -EIO;
	if (!ss->in_section) {
		vqs_mem_read_lock();
		ss->in_section = true;
		rc = ring_ready(ss->vq, &ss->table);
		if (!rc)
			return 0;
	}
	ss->err = rc;
	vqs_vq_session_pause(ss);
	return rc;
}

/* Be in the session's section with the queue checked: a session already in its section was
 * checked when it entered, and the table and the ring areas resolved in it stay valid until it
 * leaves, so only a break since then is looked for (one readiness check per section, not the
 * ~40 instructions of one more in each of look, fill and end). Inline, the test of a session in
 * its section; the rest out of line. */
static inline int session_enter(struct vqs_vq_session *ss)
{
	if (ss->in_section &&
	    atomic_load_explicit(&ss->vq->err, memory_order_relaxed) == VQS_VQ_OK)
		return 0;
	return session_enter_check(ss);
}

int vqs_vq_session_look(struct vqs_vq_session *ss)
{
	if (ss->err || session_enter(ss))
		return ss->err;
	int rc = ss->vq->ops->begin(ss->vq);
	if (rc < 0) {
		ss->err = rc;
		vqs_vq_session_pause(ss);
	}
	return rc;
}

int vqs_vq_session_begin(struct vqs_vq *vq, struct vqs_vq_session *ss)
{
	*ss = (struct vqs_vq_session){.vq = vq};
	return vqs_vq_session_look(ss);
}

int vqs_vq_session_pop(struct vqs_vq_session *ss, const struct vqs_pop_to *to, unsigned max)
{
	if (ss->err)
		return ss->err;
	if (!ss->in_section && session_enter(ss))
		return ss->err;
	if (max == 0)
		return 0;
	if (to->by_id && !to->ids)
		return -EINVAL;
	struct vqs_pop_to side = *to;
	if (!side.stride)
		side.stride = sizeof(struct vqs_elem);
	int rc = ss->vq->ops->pop(ss->vq, ss->table, &side, max);
	return rc == -EAGAIN ? 0 : rc;
}

void vqs_vq_session_pause(struct vqs_vq_session *ss)
{
	if (ss->in_section)
		vqs_mem_read_unlock();
	ss->in_section = false;
}

/*
 * While the map logs, the buffers of filled chains are marked dirty up to the bytes written: the
 * handler wrote them before completing, so the marks follow the data. Inside the session's
 * section, so one test of the table per batch while logging is off.
 */
static void log_filled(const struct vqs_mem_table *t, const struct vqs_elem *const *elems,
		       const uint32_t *written, unsigned n)
{
	if (__builtin_expect(t->log != NULL, 0)) {
		for (unsigned k = 0; k < n; k++)
			vqs_mem_log_iov(t, elems[k]->iov + elems[k]->out_num, elems[k]->in_num,
					written[k]);
		vqs_mem_log_signal(t);
	}
}

/* Mark ring bytes [off, off + len) of the device-written area, wrapping at `size` bytes. */
static void log_ring_bytes(struct vqs_vq *vq, const struct vqs_mem_table *t, uint64_t base,
			   uint64_t off, uint64_t len, uint64_t size)
{
	uint64_t first = len < size - off ? len : size - off;
	vqs_mem_log_write(t, vq->cfg.log_addr + base + off, first);
	if (len > first)
		vqs_mem_log_write(t, vq->cfg.log_addr + base, len - first);
}

/* After a flush that published n entries from position `before`: mark what it wrote in the
 * ring. Split: the entries and the used index; packed: the descriptor slots it went over. */
static void log_flushed(struct vqs_vq *vq, const struct vqs_mem_table *t,
			const struct vqs_vq_state *before, unsigned n)
{
	uint64_t num = vq->cfg.num;
	if (!(vq->cfg.features & VQS_BIT(VQS_F_RING_PACKED))) {
		const uint64_t ent = sizeof(struct vqs_vring_used_elem);
		vqs_mem_log_write(t, vq->cfg.log_addr + offsetof(struct vqs_vring_used, idx), 2);
		log_ring_bytes(vq, t, offsetof(struct vqs_vring_used, ring),
			       (before->used_idx & (num - 1)) * ent, n * ent, num * ent);
		return;
	}
	struct vqs_vq_state after;
	vq->ops->get_state(vq, &after);
	uint64_t slots = (after.used_idx + num - before->used_idx) % num;
	if (slots == 0) /* went round the whole ring */
		slots = num;
	const uint64_t d = sizeof(struct vqs_vring_packed_desc);
	log_ring_bytes(vq, t, 0, before->used_idx * d, slots * d, num * d);
}

int vqs_vq_session_fill(struct vqs_vq_session *ss, const struct vqs_elem *const *elems,
			const uint32_t *written, unsigned n)
{
	if (ss->err || session_enter(ss))
		return ss->err;
	int rc = n ? ss->vq->ops->fill(ss->vq, elems, written, n) : 0;
	if (rc > 0)
		log_filled(ss->table, elems, written, (unsigned)rc);
	return rc;
}

/* Publish what was filled. Inside the section, queue checked. */
static unsigned flush(struct vqs_vq *vq, const struct vqs_mem_table *t)
{
	bool log = __builtin_expect(t->log != NULL, 0) && vq->cfg.log_ring;
	struct vqs_vq_state before;
	if (log)
		vq->ops->get_state(vq, &before);
	unsigned n = vq->ops->flush(vq);
	if (log && n) {
		log_flushed(vq, t, &before, n);
		vqs_mem_log_signal(t);
	}
	return n;
}

unsigned vqs_vq_session_end(struct vqs_vq_session *ss, bool *call)
{
	unsigned n = 0;
	*call = false;
	if (!ss->err && !session_enter(ss)) {
		n = flush(ss->vq, ss->table);
		*call = ss->vq->ops->need_call(ss->vq);
	}
	vqs_vq_session_pause(ss);
	return n;
}

/* A session on vq for one call that does not look at the avail index; false when the queue is
 * not ready (its error in ss->err, section left). */
static bool session_start(struct vqs_vq *vq, struct vqs_vq_session *ss)
{
	*ss = (struct vqs_vq_session){.vq = vq};
	return session_enter(ss) == 0;
}

int vqs_vq_pop(struct vqs_vq *vq, struct vqs_elem *e)
{
	struct vqs_vq_session ss;
	int rc = vqs_vq_session_begin(vq, &ss);
	if (rc > 0)
		rc = vqs_vq_session_pop(&ss, &(struct vqs_pop_to){.base = e}, 1);
	vqs_vq_session_pause(&ss);
	return rc < 0 ? rc : rc == 0 ? -EAGAIN : 0;
}

int vqs_vq_fill(struct vqs_vq *vq, const struct vqs_elem *e, uint32_t written)
{
	struct vqs_vq_session ss = {.vq = vq};
	int rc = vqs_vq_session_fill(&ss, &e, &written, 1);
	vqs_vq_session_pause(&ss);
	return rc < 0 ? rc : 0;
}

unsigned vqs_vq_flush(struct vqs_vq *vq)
{
	struct vqs_vq_session ss;
	unsigned n = session_start(vq, &ss) ? flush(vq, ss.table) : 0;
	vqs_vq_session_pause(&ss);
	return n;
}

bool vqs_vq_need_call(struct vqs_vq *vq)
{
	struct vqs_vq_session ss;
	bool call = session_start(vq, &ss) && vq->ops->need_call(vq);
	vqs_vq_session_pause(&ss);
	return call;
}

/* After a notification switch: mark the field it wrote and signal the log's eventfd, as flush
 * does for the used ring (the destination's driver reads it as this one left it). One test when
 * not logging. */
static void log_notify(struct vqs_vq *vq, const struct vqs_mem_table *t, bool enable)
{
	uint64_t off;
	uint32_t len;
	if (__builtin_expect(t->log == NULL, 1) || !vq->cfg.log_ring ||
	    !vq->ops->notify_written(vq, enable, &off, &len))
		return;
	bool packed = vq->cfg.features & VQS_BIT(VQS_F_RING_PACKED);
	vqs_mem_log_write(t, (packed ? vq->cfg.log_event_addr : vq->cfg.log_addr) + off, len);
	vqs_mem_log_signal(t);
}

unsigned vqs_vq_avail_count(struct vqs_vq *vq)
{
	struct vqs_vq_session ss;
	int n = vqs_vq_session_begin(vq, &ss);
	vqs_vq_session_pause(&ss);
	return n > 0 ? (unsigned)n : 0;
}

int vqs_vq_unpop(struct vqs_vq *vq, const struct vqs_elem *elems, unsigned n)
{
	if (!vq->ops)
		return -EINVAL;
	return vq->ops->unpop(vq, elems, n);
}

void vqs_vq_disable_notify(struct vqs_vq *vq)
{
	struct vqs_vq_session ss;
	if (session_start(vq, &ss)) {
		vq->ops->disable_notify(vq);
		log_notify(vq, ss.table, false);
	}
	vqs_vq_session_pause(&ss);
}

bool vqs_vq_enable_notify(struct vqs_vq *vq)
{
	struct vqs_vq_session ss;
	bool more = false;
	if (session_start(vq, &ss)) {
		more = vq->ops->enable_notify(vq);
		log_notify(vq, ss.table, true);
	}
	vqs_vq_session_pause(&ss);
	return more;
}

void vqs_vq_get_state(const struct vqs_vq *vq, struct vqs_vq_state *st)
{
	memset(st, 0, sizeof(*st));
	if (vq->ops)
		vq->ops->get_state(vq, st);
}

int vqs_vq_set_state(struct vqs_vq *vq, const struct vqs_vq_state *st)
{
	if (!vq->ops)
		return -EINVAL;
	int rc = vq->ops->set_state(vq, st);
	if (rc)
		return rc;
	/* Nothing is in flight any more, so nothing holds the long-chain area. */
	memset(vq->lg.held, 0, vq->cfg.num);
	vq->lg.used = vq->lg.holders = 0;
	return 0;
}

size_t vqs_vq_inflight_size(unsigned num, bool packed)
{
	if (num < 1 || num > VQS_VQ_MAX_SIZE)
		return 0;
	return layout_ops(packed ? VQS_BIT(VQS_F_RING_PACKED) : 0)->inflight_size(num);
}

int vqs_vq_set_inflight(struct vqs_vq *vq, void *region, size_t len, bool restore)
{
	if (!vq->ops)
		return -EINVAL;
	if (!region || !restore)
		return vq->ops->set_inflight(vq, region, len, restore);
	/* Restoring repairs a torn completion from the used ring: it needs the ring resolved. */
	vqs_mem_read_lock();
	int rc = ring_ready(vq, NULL);
	if (!rc)
		rc = vq->ops->set_inflight(vq, region, len, restore);
	vqs_mem_read_unlock();
	return rc;
}

unsigned vqs_vq_inflight_pending(const struct vqs_vq *vq)
{
	return vq->ops ? vq->ops->inflight_pending(vq) : 0;
}
