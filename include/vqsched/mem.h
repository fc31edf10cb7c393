/* SPDX-License-Identifier: MIT */
/*
 * The guest memory map: which guest physical addresses (gpa) and frontend virtual addresses
 * (uaddr, as vhost-user ring addresses are given) map to which host memory.
 *
 * Readers (ring code on worker threads) translate inside an RCU read-side critical section
 * (liburcu "bp" flavour: no thread registration needed). Writers replace the whole table; the
 * old table, and each region that left the map, are released only after a grace period and after
 * every pin taken on them (vqs_mem_table_get) was dropped. So a worker translating while the
 * frontend swaps the table never sees an unmapped address.
 *
 * Guest memory is hostile: every gpa/len pair is checked for overflow and must lie wholly inside
 * mapped regions; a range may span adjacent regions (translation then yields several iovecs).
 */
#ifndef VQSCHED_MEM_H
#define VQSCHED_MEM_H

#include <stddef.h>
#include <sys/uio.h>
#include <vqsched/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/* At most this many regions in one table (vhost-user's VHOST_USER_MAX_RAM_SLOTS is 32..512). */
#define VQS_MEM_MAX_REGIONS 512

struct vqs_mem_region {
	uint64_t gpa;   /* guest physical address of the first byte */
	uint64_t size;  /* bytes; > 0 */
	uint64_t uaddr; /* frontend's virtual address of the first byte (vhost-user); else = gpa */
	void *host;     /* where the region is mapped in this process */
	/*
	 * Called once, after the region has left the map and no reader can still use it (grace
	 * period passed, pins dropped). Typically munmap + close. May be NULL. Runs on the thread
	 * that dropped the last reference or on liburcu's call_rcu thread, so it must not wait for
	 * RCU itself (vqs_mem_synchronize, vqs_mem_destroy).
	 */
	void (*release)(void *opaque, const struct vqs_mem_region *r);
	void *release_opaque;
};

struct vqs_mem;       /* the replaceable map; opaque */
struct vqs_mem_table; /* one immutable version of it; opaque */

/* Create an empty map. Threads: any. */
VQS_API int vqs_mem_create(struct vqs_mem **out);
/*
 * Release every region (calling their release hooks) and the map. Waits for a grace period and
 * for every deferred release, so no release hook runs after it returns. Threads: any, once no
 * reader can use the map any more (queues using it stopped, every pin dropped), outside
 * vqs_mem_read_lock() and not from a release hook.
 */
VQS_API void vqs_mem_destroy(struct vqs_mem *m);
/*
 * Wait until every table replaced before this call is unreachable and its released regions'
 * hooks have run (unless a pin still holds them: they then run at the last vqs_mem_table_put).
 * For a backend that must stop touching removed memory before acknowledging (vhost-user
 * REM_MEM_REG, SET_MEM_TABLE with REPLY_ACK). Threads: as vqs_mem_destroy.
 */
VQS_API void vqs_mem_synchronize(struct vqs_mem *m);

/*
 * Replace the whole table with n regions (n may be 0). The regions are validated first: size > 0,
 * gpa + size and uaddr + size without overflow, host != NULL, no two regions overlapping in gpa or
 * in uaddr, n <= VQS_MEM_MAX_REGIONS. On error (-EINVAL, -E2BIG, -ENOMEM) the map is unchanged and
 * the release hooks of the rejected regions are NOT called (the caller still owns them).
 * On success the map owns the new regions; the old ones are released as described above.
 * Threads: any; writers are serialised internally. Does not wait for a grace period.
 */
VQS_API int vqs_mem_set(struct vqs_mem *m, const struct vqs_mem_region *regions, unsigned n);
/* Add one region (vhost-user ADD_MEM_REG); same checks against the current table.
 * Threads: as vqs_mem_set. */
VQS_API int vqs_mem_add(struct vqs_mem *m, const struct vqs_mem_region *r);
/*
 * Remove the region with exactly this gpa and size (vhost-user REM_MEM_REG). -ENOENT if absent.
 * Its release hook runs after the grace period and pins, as for vqs_mem_set.
 * Threads: as vqs_mem_set.
 */
VQS_API int vqs_mem_remove(struct vqs_mem *m, uint64_t gpa, uint64_t size);
/* Number of regions in the current table. Threads: any. */
VQS_API unsigned vqs_mem_nregions(struct vqs_mem *m);

/* ---- read side ---- */

/* RCU read-side critical section around any use of a table. Nests. Threads: any. */
VQS_API void vqs_mem_read_lock(void);
VQS_API void vqs_mem_read_unlock(void);

/* The current table. Only valid inside vqs_mem_read_lock(), or while pinned. Never NULL.
 * Threads: any. */
VQS_API const struct vqs_mem_table *vqs_mem_current(struct vqs_mem *m);
/* Version of a table: increases with every replacement, so a cached translation can be checked.
 * Starts at 1 (0 never names a table). Threads: any, with t pinned or inside the section. */
VQS_API uint64_t vqs_mem_table_gen(const struct vqs_mem_table *t);

/*
 * Pin the current table (and so its mappings) beyond the read-side section, e.g. for requests that
 * complete asynchronously. Must be called inside vqs_mem_read_lock(). Pairs with vqs_mem_table_put.
 * Threads: any (get and put may be on different threads).
 */
VQS_API const struct vqs_mem_table *vqs_mem_table_get(struct vqs_mem *m);
VQS_API void vqs_mem_table_put(const struct vqs_mem_table *t);

/*
 * Translate [gpa, gpa+len) to host iovecs, at most `cap` of them. Returns the number of iovecs
 * (0 when len == 0), -EFAULT when any byte is unmapped or the range overflows, -ENOBUFS when more
 * than `cap` iovecs would be needed. *hint is a per-caller last-hit region cache (start with 0).
 * Threads: any, with t pinned or inside the read-side section.
 */
VQS_API int vqs_mem_translate(const struct vqs_mem_table *t, uint64_t gpa, uint64_t len,
			      struct iovec *iov, unsigned cap, unsigned *hint);
/*
 * Host pointer for a range that must be contiguous in one region (ring areas); NULL when any
 * byte is unmapped, the range overflows, or it spans regions. uaddr variant for vhost-user ring
 * addresses. Threads: as vqs_mem_translate.
 */
VQS_API void *vqs_mem_gpa_to_host(const struct vqs_mem_table *t, uint64_t gpa, uint64_t len);
VQS_API void *vqs_mem_uaddr_to_host(const struct vqs_mem_table *t, uint64_t uaddr, uint64_t len);
/* Convert a frontend virtual address to a gpa; -EFAULT if [uaddr, uaddr+len) is not mapped
 * within one region. */
VQS_API int vqs_mem_uaddr_to_gpa(const struct vqs_mem_table *t, uint64_t uaddr, uint64_t len,
				 uint64_t *gpa);
/*
 * Copy [gpa, gpa+len) out of guest memory into dst (which may span regions). 0 or -EFAULT.
 * Reads each guest byte once (the copy is the snapshot). Threads: as vqs_mem_translate.
 */
VQS_API int vqs_mem_copy_from(const struct vqs_mem_table *t, uint64_t gpa, void *dst, size_t len);

/* ---- dirty page log (live migration) ---- */

/*
 * The dirty log vhost-user's SET_LOG_BASE shares (vhost-user.rst "Migration"): a bitmap with one
 * bit per VQS_MEM_LOG_PAGE bytes of guest physical memory, page p = gpa / VQS_MEM_LOG_PAGE at bit
 * p % 8 of byte p / 8, set with an atomic or (the frontend clears bytes as it syncs). While the
 * map logs, everything the device writes into guest memory through a vqs_vq is marked: the
 * buffers it filled (vqs_vq_fill) and, for queues configured with log_ring, the used entries and
 * index flush publishes. Pages past the end of the bitmap are never written (CVE-2019-14835).
 */
#define VQS_MEM_LOG_PAGE 4096u

struct vqs_mem_log {
	void *bitmap; /* len bytes, shared with the frontend */
	uint64_t len;
	/* Called once, after the log was replaced or the map destroyed and no reader can still use
	 * it (as a region's release hook). May be NULL. */
	void (*release)(void *opaque, void *bitmap, uint64_t len);
	void *release_opaque;
};
/*
 * Replace the dirty log (NULL: none); the old one is released after the grace period. On
 * success the map owns the log. Does not switch logging on or off. -EINVAL (len 0 or bitmap
 * NULL), -ENOMEM. Threads: as vqs_mem_set.
 */
VQS_API int vqs_mem_set_log(struct vqs_mem *m, const struct vqs_mem_log *log);
/* Log (on) or stop logging. Readers see the change at their next table read (every queue's next
 * batch); a write whose batch began before it may still be logged, or not. 0, or -ENOMEM.
 * Threads: as vqs_mem_set. */
VQS_API int vqs_mem_log_enable(struct vqs_mem *m, bool on);
/*
 * An eventfd to signal after each batch of marks while logging (vhost-user SET_LOG_FD, whose
 * equivalent is the kernel's VHOST_SET_LOG_FD), or -1 for none. The queue that marked writes 1
 * to it once its marks are made, inside a read-side section; fd must be non-blocking, so that
 * a counter the reader let fill up never stalls a queue (the signal is then pending anyway).
 * The map does not own fd: the caller closes a replaced one after vqs_mem_synchronize(). 0,
 * -EINVAL, -ENOMEM. Threads: as vqs_mem_set.
 */
VQS_API int vqs_mem_set_log_fd(struct vqs_mem *m, int fd);
/* Does table t log (a log installed and logging on)? Threads: as vqs_mem_translate. */
VQS_API bool vqs_mem_logging(const struct vqs_mem_table *t);
/* Mark the pages of [gpa, gpa + len) in t's log, if t logs; pages past the log are skipped.
 * Threads: as vqs_mem_translate. */
VQS_API void vqs_mem_log_write(const struct vqs_mem_table *t, uint64_t gpa, uint64_t len);

#ifdef __cplusplus
}
#endif
#endif
