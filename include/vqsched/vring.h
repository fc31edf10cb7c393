/* SPDX-License-Identifier: MIT */
/*
 * Virtqueues, device side: the wire formats of split and packed rings (virtio 1.x, little-endian)
 * and the device's half of the protocol: pop chains, give them back, fill and flush used entries,
 * suppress notifications, save and restore ring state.
 *
 * One struct vqs_vq serves both layouts (VQS_F_RING_PACKED in the negotiated features selects).
 * A vq has one owner thread at a time: every vqs_vq_* call on it, except the predicates marked
 * "any", comes from the thread that currently owns it (a scheduler worker, or the caller's thread
 * when used directly). The ring itself is shared with the driver, which is hostile: every
 * descriptor, avail entry and index is read once into a local copy and only the copy is used.
 * A ring that breaks a rule marks this vq broken with a reason (vqs_vq_error); every later pop
 * fails with -EIO. Other queues are unaffected.
 *
 * Pops translate buffers through the vq's memory map (mem.h), through the table current at the
 * pop. The iovecs stay valid while the caller stays inside the vqs_mem_read_lock() section it
 * popped in, or while it holds a pin on that table: taken in the same section (vqs_mem_table_get
 * there returns the table the pop used), or taken before and handed to vqs_vq_pop_pinned, which
 * refuses a table that is no longer current.
 */
#ifndef VQSCHED_VRING_H
#define VQSCHED_VRING_H

#include <stddef.h>
#include <sys/uio.h>
#include <vqsched/common.h>
#include <vqsched/mem.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- feature bits (virtio 1.x, 6 "Reserved Feature Bits") ---- */
#define VQS_F_NOTIFY_ON_EMPTY 24
#define VQS_F_ANY_LAYOUT 27
#define VQS_F_INDIRECT_DESC 28
#define VQS_F_EVENT_IDX 29
#define VQS_F_VERSION_1 32
#define VQS_F_ACCESS_PLATFORM 33
#define VQS_F_RING_PACKED 34
#define VQS_F_IN_ORDER 35
#define VQS_BIT(f) (1ULL << (f))

#define VQS_VQ_MAX_SIZE 32768u

/* ---- split ring wire format (2.7) ---- */
#define VQS_VRING_DESC_F_NEXT 1
#define VQS_VRING_DESC_F_WRITE 2
#define VQS_VRING_DESC_F_INDIRECT 4
#define VQS_VRING_AVAIL_F_NO_INTERRUPT 1
#define VQS_VRING_USED_F_NO_NOTIFY 1

struct vqs_vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};
struct vqs_vring_avail {
	uint16_t flags;
	uint16_t idx;
	uint16_t ring[]; /* num entries, then used_event when EVENT_IDX */
};
struct vqs_vring_used_elem {
	uint32_t id;
	uint32_t len;
};
struct vqs_vring_used {
	uint16_t flags;
	uint16_t idx;
	struct vqs_vring_used_elem ring[]; /* num entries, then avail_event when EVENT_IDX */
};
/* Sizes in bytes of the three split areas (with the EVENT_IDX trailers) and their alignments. */
static inline size_t vqs_vring_desc_size(unsigned num) { return 16u * (size_t)num; }
static inline size_t vqs_vring_avail_size(unsigned num) { return 6u + 2u * (size_t)num; }
static inline size_t vqs_vring_used_size(unsigned num) { return 6u + 8u * (size_t)num; }
#define VQS_VRING_DESC_ALIGN 16
#define VQS_VRING_AVAIL_ALIGN 2
#define VQS_VRING_USED_ALIGN 4

/* "Is new_idx past event, seen from old?" (2.7.10): the EVENT_IDX test both sides use. */
static inline bool vqs_vring_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

/* ---- packed ring wire format (2.8) ---- */
#define VQS_VRING_PACKED_DESC_F_AVAIL 7
#define VQS_VRING_PACKED_DESC_F_USED 15
#define VQS_VRING_PACKED_EVENT_F_WRAP_CTR 15
#define VQS_RING_EVENT_FLAGS_ENABLE 0x0
#define VQS_RING_EVENT_FLAGS_DISABLE 0x1
#define VQS_RING_EVENT_FLAGS_DESC 0x2

struct vqs_vring_packed_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t id;
	uint16_t flags;
};
struct vqs_vring_packed_event {
	uint16_t off_wrap;
	uint16_t flags;
};
static inline size_t vqs_vring_packed_desc_size(unsigned num) { return 16u * (size_t)num; }
#define VQS_VRING_PACKED_DESC_ALIGN 16
#define VQS_VRING_PACKED_EVENT_ALIGN 4

/* ---- device-side queue ---- */

/* Why a queue broke. Stable numbers: they appear in logs and JSON. */
enum vqs_vq_err {
	VQS_VQ_OK = 0,
	VQS_VQ_ERR_RING_UNMAPPED = 1,   /* a ring area is not wholly inside one mapped region */
	VQS_VQ_ERR_AVAIL_IDX = 2,       /* avail idx moved ahead by more than the queue size */
	VQS_VQ_ERR_HEAD_RANGE = 3,      /* head index (split) >= queue size */
	VQS_VQ_ERR_NEXT_RANGE = 4,      /* next >= queue size, or past the indirect table */
	VQS_VQ_ERR_LOOP = 5,            /* chain revisits a descriptor */
	VQS_VQ_ERR_CHAIN_LEN = 6,       /* chain longer than the queue size (or indirect table) */
	VQS_VQ_ERR_NESTED_INDIRECT = 7, /* INDIRECT inside an indirect table */
	VQS_VQ_ERR_INDIRECT_NEXT = 8,   /* INDIRECT together with NEXT (split) */
	VQS_VQ_ERR_INDIRECT_LEN = 9,    /* indirect table length 0, not a multiple of 16, too big */
	VQS_VQ_ERR_WRITE_ORDER = 10,    /* a readable descriptor after a writable one */
	VQS_VQ_ERR_ADDR = 11,           /* buffer outside the memory map, or addr+len overflows */
	VQS_VQ_ERR_CHAIN_BYTES = 12,    /* total chain length above 2^32 - 1 */
	VQS_VQ_ERR_BUFFER_ID = 13,      /* packed: buffer id >= queue size, or id already in flight;
					 * split: head offered again while still in flight */
	VQS_VQ_ERR_WRAP = 14,           /* packed: avail/used flags inconsistent with wrap counter */
	VQS_VQ_ERR_INDIRECT_FLAGS = 15, /* packed: flags other than WRITE inside an indirect table */
	VQS_VQ_ERR_INDIRECT_FEATURE = 16, /* INDIRECT used while VQS_F_INDIRECT_DESC not negotiated */
	VQS_VQ_ERR_IOV_LIMIT = 17,      /* chain needs more iovecs than the device supports */
	VQS_VQ_ERR__COUNT
};
/* Short stable name ("loop", "head-range", ...). Threads: any. */
VQS_API const char *vqs_vq_err_name(enum vqs_vq_err err);

/* Which address space the ring area addresses are in. */
enum vqs_addr_space {
	VQS_ADDR_GPA = 0,   /* guest physical addresses (virtio-pci, tests) */
	VQS_ADDR_UADDR = 1, /* frontend virtual addresses (vhost-user SET_VRING_ADDR) */
};

struct vqs_vq_config {
	uint32_t size;     /* sizeof(struct vqs_vq_config) */
	uint32_t num;      /* queue size; split: power of two; both: 1..32768 */
	uint64_t features; /* negotiated VQS_BIT(VQS_F_*) set; RING_PACKED selects the layout */
	enum vqs_addr_space addr_space;
	/* split: descriptor table, avail ring, used ring. packed: descriptor ring, driver event
	 * suppression, device event suppression. */
	uint64_t desc_addr, driver_addr, device_addr;
	struct vqs_mem *mem; /* the map buffers and ring areas are translated through; not owned */
	/*
	 * Most iovecs one chain may translate to (the device's limit). 0: room for the longest
	 * legal chain, num descriptors at four iovecs each (a buffer may cross into adjacent
	 * memory regions), at least 1024 (QEMU's VIRTQUEUE_MAX_SIZE); capped at 65535. A chain
	 * beyond it breaks the queue (VQS_VQ_ERR_IOV_LIMIT). It also sizes the queue's long-chain
	 * area (max_iov iovecs, allocated at configure), where chains that outgrow their element's
	 * storage are built (see vqs_elem.iov).
	 */
	uint32_t max_iov;
	/*
	 * Dirty logging of the ring itself (vhost-user VRING_F_LOG): while the memory map logs
	 * (vqs_mem_log_enable), flush marks the used entries and index it wrote, as guest physical
	 * addresses from log_addr, the gpa of the area the device writes (split: the used ring;
	 * packed: the descriptor ring). Buffers are logged whatever this says. The notification
	 * fields the device writes are marked too: split used flags or avail_event (in the used
	 * ring, so from log_addr), packed device event suppression area (at log_event_addr).
	 */
	bool log_ring;
	uint64_t log_addr;
	uint64_t log_event_addr; /* packed: gpa of the device event suppression area */
};

/*
 * One popped chain. The caller sets iov/iov_cap before every pop; pop fills the rest. Readable
 * (driver->device) iovecs come first, then the writable ones. id is what fill() hands back to the
 * driver. A chain that needs more than iov_cap iovecs (legal up to the device's limit,
 * vqs_vq_config.max_iov) is built in the queue's long-chain area instead, and pop points iov
 * there: it stays the chain's until the chain is filled or given back (so never pop into an
 * element whose iov still points there). While chains in flight hold so much of the area that
 * the next chain does not fit beside them, that chain waits: pop returns -EBUSY until some are
 * filled or given back.
 */
struct vqs_elem {
	struct iovec *iov;  /* caller storage in; where the iovecs are out */
	uint16_t iov_cap;   /* caller: entries in its storage */
	uint16_t id;        /* split: head index; packed: buffer id */
	uint16_t ndescs;    /* ring slots the chain occupies (packed: to skip on fill/unpop) */
	uint16_t out_num;   /* readable iovecs */
	uint16_t in_num;    /* writable iovecs */
	uint32_t out_len;   /* readable bytes */
	uint32_t in_len;    /* writable bytes */
};

struct vqs_vq;

/* Allocate an unconfigured queue. Threads: any. */
VQS_API int vqs_vq_create(struct vqs_vq **out);
VQS_API void vqs_vq_destroy(struct vqs_vq *vq);
/*
 * Configure from size, features and ring addresses; resets the ring state to zero (call
 * vqs_vq_set_state afterwards for reconnect). -EINVAL for a bad size or misaligned address;
 * a ring area not mapped is not an error here (vhost-user may map memory later): the first pop
 * resolves the areas and breaks the queue with VQS_VQ_ERR_RING_UNMAPPED if they are still not
 * mapped. Ring areas are re-resolved whenever the memory table changes. Threads: owner.
 */
VQS_API int vqs_vq_configure(struct vqs_vq *vq, const struct vqs_vq_config *cfg);
/* Back to unconfigured and not broken. Threads: owner. */
VQS_API void vqs_vq_reset(struct vqs_vq *vq);
VQS_API bool vqs_vq_is_configured(const struct vqs_vq *vq);
VQS_API bool vqs_vq_is_packed(const struct vqs_vq *vq);
VQS_API unsigned vqs_vq_num(const struct vqs_vq *vq);
/* Copy of the configuration last given to vqs_vq_configure (cfg->size set). -EINVAL when
 * unconfigured. Threads: owner, or any thread while the owner does not reconfigure. */
VQS_API int vqs_vq_get_config(const struct vqs_vq *vq, struct vqs_vq_config *cfg);

/*
 * Pop the next available chain into *e. Returns 0, -EAGAIN when nothing is available, -EIO when
 * the queue is (or just became) broken, -EBUSY when the chain waits for the long-chain area
 * (nothing consumed: fill or give back long chains in flight first; see vqs_elem). Must be
 * called inside vqs_mem_read_lock() (a pin alone is not
 * enough: see vqs_vq_pop_pinned). Threads: owner.
 */
VQS_API int vqs_vq_pop(struct vqs_vq *vq, struct vqs_elem *e);
/*
 * Pop up to max chains into elems[0..max). Returns how many (0 when none), or -EIO when the queue
 * is broken and nothing was popped, or -EBUSY when the first chain waits for the long-chain area.
 * A break (or a chain that waits) after some pops returns those pops; the next call reports it. Inside vqs_mem_read_lock(), as vqs_vq_pop. Threads: owner.
 */
VQS_API int vqs_vq_pop_batch(struct vqs_vq *vq, struct vqs_elem *elems, unsigned max);
/* vqs_vq_pop_batch into elements that are not side by side (each inside the caller's own request
 * structure, say): *elems[0..max). Same returns; like every pop, inside vqs_mem_read_lock().
 * Threads: owner. */
VQS_API int vqs_vq_pop_into(struct vqs_vq *vq, struct vqs_elem *const *elems, unsigned max);
/*
 * vqs_vq_pop_into for a caller outside any read-side section that holds a pin on t (from
 * vqs_mem_table_get): buffers are translated through t, so the iovecs stay valid until the pin is
 * dropped, whatever replaces the table meanwhile. -ESTALE, nothing popped, when t is no longer
 * the current table (its map is out of date: pin the current one and pop again). Other returns
 * as vqs_vq_pop_into. Threads: owner.
 */
VQS_API int vqs_vq_pop_pinned(struct vqs_vq *vq, const struct vqs_mem_table *t,
			      struct vqs_elem *const *elems, unsigned max);
/* Chains the driver has made available and not yet popped (an estimate, never trusted for
 * bounds). Threads: owner. */
VQS_API unsigned vqs_vq_avail_count(struct vqs_vq *vq);
/*
 * Give back the n most recently popped chains, elems[0..n) in pop order, without completing them:
 * the next pops return them again. Used under backpressure, so nothing is ever dropped. Only
 * chains not yet filled may be given back (earlier chains may have been filled meanwhile).
 * -EINVAL if n exceeds what can be given back or an element is not in flight. Threads: owner.
 */
VQS_API int vqs_vq_unpop(struct vqs_vq *vq, const struct vqs_elem *elems, unsigned n);

/*
 * Stage a used entry for e with `written` bytes written into its writable buffers. Not visible to
 * the driver until vqs_vq_flush. Completions may be out of order unless IN_ORDER was negotiated.
 * -EINVAL when written exceeds e->in_len or the id is not in flight; -EIO when the queue is
 * broken (a broken queue no longer touches the ring). Fill, flush and the notification calls
 * take the memory read lock themselves. Threads: owner.
 */
VQS_API int vqs_vq_fill(struct vqs_vq *vq, const struct vqs_elem *e, uint32_t written);
/*
 * Stage used entries for elems[0..n) with written[0..n) bytes, in that order: what n vqs_vq_fill
 * calls do, with the checks of the queue and the lock taken once. Returns how many were staged;
 * fewer than n when elems[k] was refused (the ones after it are not looked at; vqs_vq_fill on
 * elems[k] says why), or the error of the first one when it was refused (-EINVAL, -EIO).
 * Threads: owner.
 */
VQS_API int vqs_vq_fill_batch(struct vqs_vq *vq, const struct vqs_elem *const *elems,
			      const uint32_t *written, unsigned n);
/* Publish everything staged (one release store of the used index / first used flags). Returns
 * how many entries were published. Threads: owner. */
VQS_API unsigned vqs_vq_flush(struct vqs_vq *vq);
/*
 * After a flush: must the driver be interrupted? Applies EVENT_IDX (used_event) or
 * VRING_AVAIL_F_NO_INTERRUPT / packed driver event suppression, over everything published since
 * the previous call. Threads: owner.
 */
VQS_API bool vqs_vq_need_call(struct vqs_vq *vq);

/* Ask the driver not to kick (NO_NOTIFY / device event DISABLE). Threads: owner. */
VQS_API void vqs_vq_disable_notify(struct vqs_vq *vq);
/*
 * Ask the driver to kick again (avail_event / flags), then re-check: true when chains arrived
 * meanwhile, in which case the caller must keep draining instead of sleeping (the race where a
 * kick is skipped because notifications were still disabled). Threads: owner.
 */
VQS_API bool vqs_vq_enable_notify(struct vqs_vq *vq);

/* Ring position, for GET/SET_VRING_BASE and reconnect. */
struct vqs_vq_state {
	uint16_t last_avail_idx; /* split: next avail index to pop; packed: next descriptor slot */
	uint16_t used_idx;       /* split: used idx; packed: next used slot */
	bool avail_wrap;         /* packed only */
	bool used_wrap;          /* packed only */
};
/* Threads: owner (or any thread while the queue is paused/detached). */
VQS_API void vqs_vq_get_state(const struct vqs_vq *vq, struct vqs_vq_state *st);
/* -EINVAL when a packed index is >= num. Threads: owner. */
VQS_API int vqs_vq_set_state(struct vqs_vq *vq, const struct vqs_vq_state *st);

/*
 * Inflight tracking (vhost-user INFLIGHT_SHMFD, layout as QEMU's docs/interop/vhost-user.rst
 * "Inflight I/O tracking"): a shared region where the ring records which chains were popped and
 * not yet completed, so that a restarted backend resubmits them, none lost and none twice.
 * vqs_vq_inflight_size: bytes one queue of this size and layout needs.
 * vqs_vq_set_inflight: attach the region (after configure and set_state); when it already holds
 * a previous backend's records (`restore`), the next pops return those chains first, in their
 * original order, and the used index recorded there repairs a completion torn by a crash.
 * Restoring reads the used ring, so the ring must be mapped (else -EIO: the queue breaks with
 * VQS_VQ_ERR_RING_UNMAPPED); it continues from the ring's used idx, and (split) avail entries
 * resume after the chains popped before the crash: last_avail_idx = used idx + chains in flight,
 * whatever set_state said. A region whose version is 0 (never initialised) restores nothing.
 * region == NULL detaches. -EINVAL for a region too small, misaligned or malformed.
 * Threads: owner.
 */
VQS_API size_t vqs_vq_inflight_size(unsigned num, bool packed);
VQS_API int vqs_vq_set_inflight(struct vqs_vq *vq, void *region, size_t len, bool restore);
/* Chains the region says are in flight and not yet popped again. Threads: owner. */
VQS_API unsigned vqs_vq_inflight_pending(const struct vqs_vq *vq);

/* Why the queue broke (VQS_VQ_OK when it did not). Threads: any (relaxed read). */
VQS_API enum vqs_vq_err vqs_vq_error(const struct vqs_vq *vq);
VQS_API bool vqs_vq_is_broken(const struct vqs_vq *vq);

#ifdef __cplusplus
}
#endif
#endif
