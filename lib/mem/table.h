/* SPDX-License-Identifier: MIT */
/*
 * Inside the memory map: refcounted regions and the immutable tables that list them.
 * lib/mem/mem.c builds, publishes and retires tables (writer side, lifetimes);
 * lib/mem/lookup.c answers translations from one table (read side, no writes to shared state).
 */
#ifndef VQS_MEM_TABLE_H
#define VQS_MEM_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/uio.h>
#include <urcu-bp.h>
#include <vqsched/mem.h>

/* The replaceable map (mem.c is its writer). */
struct vqs_mem {
	pthread_mutex_t lock; /* serialises writers, guards `retiring`; readers never take it */
	pthread_cond_t retired; /* signalled when `retiring` drops to 0 */
	/* Replaced tables whose grace period has not ended yet. Counted here rather than waited
	 * for with urcu_bp_barrier(), whose internal hand-offs TSan cannot follow. */
	unsigned retiring;
	/* The published table; the release store in replace_locked() pairs with the acquire load in
	 * mem_current(), so a reader sees the table fully built. */
	_Atomic(struct vqs_mem_table *) cur;
	uint64_t gen; /* generation of the newest table; under lock */
	struct mem_log_obj *log; /* the installed dirty log (one reference), or NULL; under lock */
	bool log_on;             /* under lock */
	int log_fd;              /* eventfd signalled after marks (vqs_mem_set_log_fd), -1; lock */
};

/* vqs_mem_current, inline for the data path (the ring's readiness check and the scheduler's pin
 * test run it once a batch). */
static inline const struct vqs_mem_table *mem_current(struct vqs_mem *m)
{
	/* pairs with the release store in replace_locked() */
	return atomic_load_explicit(&m->cur, memory_order_acquire);
}

/* A region as the map owns it: shared by every table that lists it, released with the last. */
struct mem_region_obj {
	struct vqs_mem_region r;
	atomic_uint refs; /* tables listing this region */
};

/* What a lookup needs of a region, copied into the table so a search touches one array. */
struct mem_slot {
	uint64_t gpa;
	uint64_t size;
	uint64_t uaddr;
	uint8_t *host;
	struct mem_region_obj *obj;
};

/* The dirty log as the map owns it: shared by every table that carries it. */
struct mem_log_obj {
	struct vqs_mem_log l;
	atomic_uint refs; /* tables carrying it, plus one while it is the map's log */
};
void vqs_mem_log_put(struct mem_log_obj *o);

struct vqs_mem_table {
	struct rcu_head rcu;
	/* One reference for "readers may still reach it" (dropped after the grace period that
	 * follows its replacement) plus one per pin. Freed, and its regions' references dropped,
	 * at zero. */
	atomic_ulong refs;
	struct vqs_mem *owner; /* told when the grace period after this table's replacement ends */
	uint64_t gen;
	unsigned n;
	/* The bitmap writes are marked in while logging is on, else NULL (one test per batch). */
	uint8_t *log;
	uint64_t log_len;
	int log_fd; /* signalled after a batch's marks, -1 when none; used inside sections only */
	struct mem_log_obj *log_obj; /* referenced while this table carries it, even when off */
	unsigned *by_uaddr;     /* slot indices in uaddr order (points past slots[n]) */
	unsigned *by_host;      /* slot indices in host address order (past by_uaddr[n]) */
	struct mem_slot slots[]; /* in gpa order, non-overlapping */
};

/*
 * One slot's translation, copied out of the table for a batch of translations (the hinted region
 * of a ring's pops): the table is read once, and each buffer costs a subtraction and two
 * comparisons. An empty window (size 0) translates nothing.
 */
struct vqs_mem_win {
	uint64_t gpa, size;
	uint8_t *host;
};

static inline struct vqs_mem_win vqs_mem_win(const struct vqs_mem_table *t, unsigned hint)
{
	if (hint >= t->n)
		return (struct vqs_mem_win){0, 0, NULL};
	const struct mem_slot *s = &t->slots[hint];
	return (struct vqs_mem_win){s->gpa, s->size, s->host};
}

/* [gpa, gpa + len) with len > 0 wholly inside the window, as one iovec; false otherwise (len 0
 * too). off >= size covers gpa below the slot as well, since a slot never wraps; len - 1 wraps
 * for len 0. */
static inline bool vqs_mem_win_translate(const struct vqs_mem_win *w, uint64_t gpa, uint64_t len,
					 struct iovec *iov)
{
	uint64_t off = gpa - w->gpa;
	if (off >= w->size || len - 1 >= w->size - off)
		return false;
	iov->iov_base = w->host + off;
	iov->iov_len = len;
	return true;
}

/*
 * The translation most buffers need, inline: [gpa, gpa + len) lies wholly inside slot `hint` (the
 * region the previous buffer was in), as one iovec. false: take vqs_mem_translate (another slot,
 * several slots, or unmapped). len > 0; a slot never wraps, so neither does a range inside one.
 */
static inline bool vqs_mem_translate_hinted(const struct vqs_mem_table *t, uint64_t gpa,
					    uint64_t len, struct iovec *iov, unsigned hint)
{
	struct vqs_mem_win w = vqs_mem_win(t, hint);
	return vqs_mem_win_translate(&w, gpa, len, iov);
}

/* Slot holding gpa, or NULL; *hint is tried first and updated on a hit. */
const struct mem_slot *vqs_mem_find_gpa(const struct vqs_mem_table *t, uint64_t gpa,
					unsigned *hint);

/* A batch marked pages in t's log: signal the log's eventfd, if one is set (the kernel's
 * VHOST_SET_LOG_FD). Inside the read-side section t was read in. log.c. */
void vqs_mem_log_signal(const struct vqs_mem_table *t);

/* Mark the guest pages behind the first `bytes` bytes of iov[0..n) (host addresses inside t's
 * regions) in t's log; t must log. An iovec outside every region of t (its region was replaced
 * since the pop) is skipped. log.c. */
void vqs_mem_log_iov(const struct vqs_mem_table *t, const struct iovec *iov, unsigned n,
		     uint64_t bytes);

#endif
