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
 * The data path is the ring session below (begin, pop, fill, end): one read-side section, one
 * check of the queue and one read of the driver's index per batch. Pops translate buffers through
 * the vq's memory map (mem.h), through the table current at begin (vqs_vq_session.table).
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
	/*
	 * Split, with VQS_F_IN_ORDER negotiated: answer a run of chains filled whole (written ==
	 * in_len) with one used entry, at the run's first position, naming its last chain (virtio
	 * 1.2 2.7.9: skipped buffers count as used completely); the used lines of the others are
	 * not written. Off by default: drivers that read every used entry's len in order (DPDK's
	 * virtio PMD, in-order receive) would read stale lengths for the skipped ones.
	 */
	bool in_order_fold;
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
	uint16_t ndescs;    /* ring slots the chain occupies (packed: fill and unpop step over
			     * the queue's own count; with an inflight region over this one) */
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
 * The ring session: the device's work on one queue for one batch, in one straight line.
 *
 *   vqs_vq_session_begin  enter the memory read-side section, check the queue once (configured,
 *                         not broken, ring areas resolved in the current table), read the
 *                         driver's avail index at most once: returns how many chains are
 *                         there;
 *   vqs_vq_session_pop    pop up to that many chains, each descriptor read once;
 *   (vqs_vq_session_pause leave the section while the chains are handled: see below)
 *   vqs_vq_session_fill   write their used entries;
 *   vqs_vq_session_end    publish them (one release store), decide whether the driver must be
 *                         called, leave the section.
 *
 * Every call takes the lock the same way: the session holds the read-side section from begin to
 * end, except between pause and the next fill or end, which enter it again and check the queue
 * again (a new memory table re-resolves the ring areas); inside the section the calls look only
 * for a break, since what was checked on entering holds until it is left. The iovecs of popped
 * chains lie in session.table: valid while the session is in its section, or beyond it while the
 * caller holds a pin on that table: vqs_mem_table_get inside the section, before pause, pins the
 * current table; when that is not session.table (replaced since begin), the map the chains were
 * translated through is out of date: give them back (vqs_vq_unpop) and pop again. A session is
 * on the stack of the queue's owner; it allocates nothing; a paused session may be dropped
 * without end (what it filled then waits for the next end or vqs_vq_flush), and one that only
 * completes needs no begin ({.vq = vq} is one). Threads: owner, for each call.
 */
struct vqs_vq_session {
	struct vqs_vq *vq;
	const struct vqs_mem_table *table; /* the table pops translate through */
	int err;         /* why begin failed (-EINVAL, -EIO); the session's calls return it */
	bool in_section; /* inside vqs_mem_read_lock() */
};
/* Chains available (>= 0), or -EINVAL (unconfigured) / -EIO (broken, possibly just now). Split:
 * the chains left of what the last read of the avail index saw, and when none are, what a read
 * now sees (the session pops no further): the index, which the driver writes for every chain,
 * is read only once those are popped, so a chain published meanwhile waits for the session
 * after them. Packed: one descriptor's flags are read, the next slot's: 0 when it is not
 * available, else the most chains there can be (the queue size less the descriptors popped and
 * not yet filled); the pops find how many there are, reading each descriptor once (the head's
 * flags are the ones begin read). Pair every begin with end or pause. */
VQS_API int vqs_vq_session_begin(struct vqs_vq *vq, struct vqs_vq_session *ss);
/* Look again, in a session begun before: as begin, without starting a new session, so that a
 * session still in its section does not check the queue again (a loop that polls rings keeps
 * one session per ring open across its looks and pauses them before it does anything that may
 * block). A paused session enters its section again, and checks, as fill does. Returns what
 * begin returns, or the session's error. Threads: owner. */
VQS_API int vqs_vq_session_look(struct vqs_vq_session *ss);
/*
 * Where a pop puts each chain: the element of index k at (char *)base + k * stride (0: side by
 * side, sizeof(struct vqs_elem)), k the chain's id when by_id (an array of vqs_vq_num()
 * elements, one per id: a request's state may hold its element, and the pop builds each chain
 * straight into it), else its place in this pop (max elements). Each element's iov/iov_cap are
 * the caller's storage, set before the pop (see vqs_elem). by_id: an element is written only
 * after its id was found not in flight, so a driver that offers an id again cannot overwrite the
 * element of the chain in flight (the queue breaks, VQS_VQ_ERR_BUFFER_ID). ids: where the popped
 * chains' ids go, in pop order (room for max; entries past the count returned may be written
 * too); NULL (only by place): nowhere.
 */
struct vqs_pop_to {
	void *base;
	size_t stride;
	bool by_id;
	uint16_t *ids;
};
/*
 * Pop up to max chains into the elements `to` names. Returns how many (0: none left of what
 * begin saw), or -EINVAL (by_id without ids), or -EIO when the queue is (or just became) broken
 * and nothing was popped, or -EBUSY when the first chain waits for the long-chain area (nothing
 * consumed; fill or give back long chains in flight first; see vqs_elem). A break or a wait after
 * some pops returns those pops; the next pop reports it. A split session pops no further than
 * the avail index begin read. Threads: owner (as every session call).
 */
VQS_API int vqs_vq_session_pop(struct vqs_vq_session *ss, const struct vqs_pop_to *to,
			       unsigned max);
/* Leave the read-side section (a handler that blocks then holds up no grace period). */
VQS_API void vqs_vq_session_pause(struct vqs_vq_session *ss);
/*
 * Used entries for elems[0..n) with written[0..n) bytes, in that order (not visible to the
 * driver until end). Returns how many were filled; fewer than n when elems[k] was refused (the
 * ones after it are not looked at), or the error of the first one when it was refused: -EINVAL
 * (written exceeds in_len, or the id is not in flight), -EIO (broken: a broken queue no longer
 * touches the ring). Completions may be out of order unless IN_ORDER was negotiated.
 */
VQS_API int vqs_vq_session_fill(struct vqs_vq_session *ss, const struct vqs_elem *const *elems,
				const uint32_t *written, unsigned n);
/*
 * Publish everything filled (on this queue, in this session or before), decide the call over
 * everything published since the previous decision (EVENT_IDX used_event, or
 * VRING_AVAIL_F_NO_INTERRUPT / packed driver event suppression), and leave the section.
 * Returns how many entries were published; *call: must the driver be interrupted.
 */
VQS_API unsigned vqs_vq_session_end(struct vqs_vq_session *ss, bool *call);

/*
 * One request at a time, for callers that pop one chain and complete it later (examples, tests):
 * thin wrappers of the session. vqs_vq_pop: a session of one pop, 0 or -EAGAIN when nothing is
 * available, else as vqs_vq_session_pop; called inside vqs_mem_read_lock() (the iovecs are valid
 * in that section). vqs_vq_fill: as vqs_vq_session_fill of one. vqs_vq_flush: publish what was
 * filled; returns how many. vqs_vq_need_call: the call decision of vqs_vq_session_end, after a
 * flush. Threads: owner.
 */
VQS_API int vqs_vq_pop(struct vqs_vq *vq, struct vqs_elem *e);
VQS_API int vqs_vq_fill(struct vqs_vq *vq, const struct vqs_elem *e, uint32_t written);
VQS_API unsigned vqs_vq_flush(struct vqs_vq *vq);
VQS_API bool vqs_vq_need_call(struct vqs_vq *vq);

/* Chains the driver has made available and not yet popped: what vqs_vq_session_begin returns
 * (0 on an error), in a session of its own; a malformed index breaks the queue as a pop would.
 * Packed: an estimate (see begin). Threads: owner. */
VQS_API unsigned vqs_vq_avail_count(struct vqs_vq *vq);
/*
 * Give back the n most recently popped chains, elems[0..n) in pop order, without completing them:
 * the next pops return them again. Used under backpressure, so nothing is ever dropped. Only
 * chains not yet filled may be given back (earlier chains may have been filled meanwhile).
 * -EINVAL if n exceeds what can be given back or an element is not in flight. Threads: owner.
 */
VQS_API int vqs_vq_unpop(struct vqs_vq *vq, const struct vqs_elem *elems, unsigned n);

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
