/* SPDX-License-Identifier: MIT */
/*
 * Writer side of the memory map and the lifetimes of its tables and regions.
 *
 * Writers (serialised by m->lock) build a fresh immutable table, publish it with one release
 * store, and hand the old one to call_rcu. After the grace period the old table loses its
 * "reachable" reference; pins keep it alive beyond that. When a table goes, it drops one reference
 * on each of its regions, and a region whose last table went runs its release hook.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>

#include "mem/pin.h"
#include "mem/table.h"
#include "util/log.h"
#include "util/tsan.h"

/* TSan stand-in for the grace period: readers and retiring writers release it, deferred frees
 * acquire it (see util/tsan.h). */
static char tsan_grace;

/*
 * The thread's depth of vqs_mem_read_lock sections: only the outermost enters and leaves
 * liburcu-bp's. Its calls reach their thread-local reader through __tls_get_addr (two in a lock,
 * one in an unlock: 22-24 ns a pair here), and the scheduler's light looks at a polled ring nest a
 * section in the worker's every time; this counter is a plain %fs-relative load and store
 * (initial-exec: one int of the static TLS surplus, as sched_running's pointer).
 */
static _Thread_local unsigned read_depth __attribute__((tls_model("initial-exec")));

void vqs_mem_read_lock(void)
{
	if (!read_depth++)
		urcu_bp_read_lock();
}

void vqs_mem_read_unlock(void)
{
	if (--read_depth)
		return;
	vqs_tsan_release(&tsan_grace);
	urcu_bp_read_unlock();
}

const struct vqs_mem_table *vqs_mem_current(struct vqs_mem *m) { return mem_current(m); }

/* ---- lifetimes ---- */

static void region_put(struct mem_region_obj *o)
{
	/* acq_rel: the last dropper sees every use made under the other references. */
	if (atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) != 1)
		return;
	if (o->r.release)
		o->r.release(o->r.release_opaque, &o->r);
	free(o);
}

static void table_put(struct vqs_mem_table *t)
{
	/* acq_rel pairs with the other pin holders' drops, as in region_put. */
	if (atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
		return;
	for (unsigned i = 0; i < t->n; i++)
		region_put(t->slots[i].obj);
	if (t->log_obj)
		vqs_mem_log_put(t->log_obj);
	free(t);
}

static void table_retired(struct rcu_head *head)
{
	vqs_tsan_acquire(&tsan_grace);
	struct vqs_mem_table *t = caa_container_of(head, struct vqs_mem_table, rcu);
	struct vqs_mem *m = t->owner; /* alive: destroy waits for `retiring` to reach 0 */
	table_put(t);
	pthread_mutex_lock(&m->lock);
	if (--m->retiring == 0)
		pthread_cond_broadcast(&m->retired);
	pthread_mutex_unlock(&m->lock);
}

/* After the next grace period no reader can reach t; drop the reference that stood for them.
 * Caller holds m->lock. */
static void table_retire(struct vqs_mem *m, struct vqs_mem_table *t)
{
	m->retiring++;
	vqs_tsan_release(&tsan_grace);
	urcu_bp_call_rcu(&t->rcu, table_retired);
}

void vqs_mem_table_pin(const struct vqs_mem_table *t)
{
	/* Relaxed is enough: inside the read-side section the readers' reference cannot go. */
	atomic_fetch_add_explicit(&((struct vqs_mem_table *)t)->refs, 1, memory_order_relaxed);
}

const struct vqs_mem_table *vqs_mem_table_get(struct vqs_mem *m)
{
	const struct vqs_mem_table *t = vqs_mem_current(m);
	vqs_mem_table_pin(t);
	return t;
}

void vqs_mem_table_put(const struct vqs_mem_table *t) { table_put((struct vqs_mem_table *)t); }

/* ---- building tables ---- */

static bool wraps(uint64_t start, uint64_t size) { return size - 1 > UINT64_MAX - start; }

/* Rejections are logged at INFO: the reason is worth having when debugging a frontend, but a
 * peer must not be able to flood the default (WARN) log with them. */
static int check_region(const struct vqs_mem_region *r)
{
	const char *why = !r->size ? "size 0"
			  : !r->host ? "no host mapping"
			  : wraps(r->gpa, r->size) ? "gpa + size wraps"
			  : wraps(r->uaddr, r->size) ? "uaddr + size wraps"
			  : wraps((uintptr_t)r->host, r->size) ? "host + size wraps"
			  : NULL;
	if (!why)
		return 0;
	vqs_info("memory region at gpa 0x%" PRIx64 " rejected: %s", r->gpa, why);
	return -EINVAL;
}

static int cmp_gpa(const void *a, const void *b)
{
	const struct mem_slot *x = a, *y = b;
	return x->gpa < y->gpa ? -1 : x->gpa > y->gpa;
}

static int cmp_uaddr(const void *a, const void *b, void *slots)
{
	const struct mem_slot *s = slots;
	uint64_t x = s[*(const unsigned *)a].uaddr, y = s[*(const unsigned *)b].uaddr;
	return x < y ? -1 : x > y;
}

static int cmp_host(const void *a, const void *b, void *slots)
{
	const struct mem_slot *s = slots;
	uintptr_t x = (uintptr_t)s[*(const unsigned *)a].host;
	uintptr_t y = (uintptr_t)s[*(const unsigned *)b].host;
	return x < y ? -1 : x > y;
}

/* Neighbours in sorted order overlap when the later one (at b) starts inside the earlier one. */
static bool neighbours_overlap(const char *space, uint64_t a, uint64_t a_size, uint64_t b)
{
	if (b - a >= a_size)
		return false;
	vqs_info("memory regions overlap in %s: 0x%" PRIx64 " (0x%" PRIx64 " bytes) and 0x%" PRIx64,
		 space, a, a_size, b);
	return true;
}

/* A table of the n regions objs (checked one by one already), or -EINVAL when two overlap. The
 * table holds no region references yet: replace_locked() takes them once it publishes it. */
static int table_build(struct mem_region_obj *const *objs, unsigned n,
		       struct vqs_mem_table **out)
{
	if (n > VQS_MEM_MAX_REGIONS)
		return -E2BIG;
	struct vqs_mem_table *t =
		calloc(1, sizeof(*t) + n * (sizeof(struct mem_slot) + 2 * sizeof(unsigned)));
	if (!t)
		return -ENOMEM;
	t->n = n;
	t->by_uaddr = (unsigned *)&t->slots[n];
	t->by_host = t->by_uaddr + n;
	atomic_init(&t->refs, 1);
	for (unsigned i = 0; i < n; i++) {
		const struct vqs_mem_region *r = &objs[i]->r;
		t->slots[i] = (struct mem_slot){.gpa = r->gpa, .size = r->size, .uaddr = r->uaddr,
						.host = r->host, .obj = objs[i]};
		t->by_uaddr[i] = i;
	}
	qsort(t->slots, n, sizeof(t->slots[0]), cmp_gpa);
	for (unsigned i = 0; i < n; i++)
		t->by_host[i] = i;
	qsort_r(t->by_uaddr, n, sizeof(unsigned), cmp_uaddr, t->slots);
	qsort_r(t->by_host, n, sizeof(unsigned), cmp_host, t->slots);
	for (unsigned i = 1; i < n; i++) {
		const struct mem_slot *a = &t->slots[i - 1], *b = &t->slots[i];
		const struct mem_slot *ua = &t->slots[t->by_uaddr[i - 1]];
		const struct mem_slot *ub = &t->slots[t->by_uaddr[i]];
		if (neighbours_overlap("gpa", a->gpa, a->size, b->gpa) ||
		    neighbours_overlap("uaddr", ua->uaddr, ua->size, ub->uaddr)) {
			free(t);
			return -EINVAL;
		}
	}
	*out = t;
	return 0;
}

/* Build a table of objs and make it current. Caller holds m->lock. On error nothing changed and
 * objs keep their references. */
static int replace_locked(struct vqs_mem *m, struct mem_region_obj *const *objs, unsigned n)
{
	struct vqs_mem_table *t;
	int rc = table_build(objs, n, &t);
	if (rc)
		return rc;
	for (unsigned i = 0; i < n; i++)
		atomic_fetch_add_explicit(&objs[i]->refs, 1, memory_order_relaxed);
	t->gen = ++m->gen;
	t->owner = m;
	t->log_fd = m->log_fd;
	if ((t->log_obj = m->log)) {
		atomic_fetch_add_explicit(&m->log->refs, 1, memory_order_relaxed);
		if (m->log_on) {
			t->log = m->log->l.bitmap;
			t->log_len = m->log->l.len;
		}
	}
	struct vqs_mem_table *old = atomic_load_explicit(&m->cur, memory_order_relaxed);
	atomic_store_explicit(&m->cur, t, memory_order_release); /* pairs with mem_current() */
	if (old)
		table_retire(m, old);
	return 0;
}

static struct mem_region_obj *region_new(const struct vqs_mem_region *r)
{
	struct mem_region_obj *o = malloc(sizeof(*o));
	if (o) {
		o->r = *r;
		atomic_init(&o->refs, 0);
	}
	return o;
}

/* Region objects of the current table, plus room for `extra` more. Caller holds m->lock. */
static struct mem_region_obj **current_objs(struct vqs_mem *m, unsigned extra, unsigned *n)
{
	const struct vqs_mem_table *t = atomic_load_explicit(&m->cur, memory_order_relaxed);
	/* + 1: never a zero-sized allocation, whose NULL would read as -ENOMEM. */
	struct mem_region_obj **objs = calloc(t->n + extra + 1, sizeof(*objs));
	if (objs)
		for (unsigned i = 0; i < t->n; i++)
			objs[i] = t->slots[i].obj;
	*n = t->n;
	return objs;
}

/* ---- public writer side ---- */

int vqs_mem_create(struct vqs_mem **out)
{
	struct vqs_mem *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->lock, NULL);
	pthread_cond_init(&m->retired, NULL);
	m->log_fd = -1;
	int rc = replace_locked(m, NULL, 0); /* m is not shared yet */
	if (rc) {
		pthread_cond_destroy(&m->retired);
		pthread_mutex_destroy(&m->lock);
		free(m);
		return rc;
	}
	*out = m;
	return 0;
}

void vqs_mem_destroy(struct vqs_mem *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	if (m->log)
		vqs_mem_log_put(m->log);
	m->log = NULL;
	table_retire(m, atomic_load_explicit(&m->cur, memory_order_relaxed));
	pthread_mutex_unlock(&m->lock);
	vqs_mem_synchronize(m);
	pthread_cond_destroy(&m->retired);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

void vqs_mem_synchronize(struct vqs_mem *m)
{
	pthread_mutex_lock(&m->lock);
	while (m->retiring)
		pthread_cond_wait(&m->retired, &m->lock);
	pthread_mutex_unlock(&m->lock);
}

int vqs_mem_set(struct vqs_mem *m, const struct vqs_mem_region *regions, unsigned n)
{
	if (n > VQS_MEM_MAX_REGIONS)
		return -E2BIG;
	if (n && !regions)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if (check_region(&regions[i]))
			return -EINVAL;
	struct mem_region_obj **objs = calloc(n + 1, sizeof(*objs)); /* + 1: as current_objs() */
	if (!objs)
		return -ENOMEM;
	int rc = 0;
	for (unsigned i = 0; i < n && !rc; i++)
		if (!(objs[i] = region_new(&regions[i])))
			rc = -ENOMEM;
	if (!rc) {
		pthread_mutex_lock(&m->lock);
		rc = replace_locked(m, objs, n);
		pthread_mutex_unlock(&m->lock);
	}
	if (rc)
		for (unsigned i = 0; i < n; i++)
			free(objs[i]); /* never referenced: the caller keeps the regions */
	free(objs);
	return rc;
}

int vqs_mem_add(struct vqs_mem *m, const struct vqs_mem_region *r)
{
	if (!r || check_region(r))
		return -EINVAL;
	struct mem_region_obj *o = region_new(r);
	if (!o)
		return -ENOMEM;
	pthread_mutex_lock(&m->lock);
	unsigned n;
	struct mem_region_obj **objs = current_objs(m, 1, &n);
	int rc = -ENOMEM;
	if (objs) {
		objs[n] = o;
		rc = replace_locked(m, objs, n + 1);
	}
	pthread_mutex_unlock(&m->lock);
	free(objs);
	if (rc)
		free(o);
	return rc;
}

int vqs_mem_remove(struct vqs_mem *m, uint64_t gpa, uint64_t size)
{
	pthread_mutex_lock(&m->lock);
	unsigned n, kept = 0;
	struct mem_region_obj **objs = current_objs(m, 0, &n);
	int rc = -ENOMEM;
	if (objs) {
		for (unsigned i = 0; i < n; i++)
			if (objs[i]->r.gpa != gpa || objs[i]->r.size != size)
				objs[kept++] = objs[i];
		rc = kept == n ? -ENOENT : replace_locked(m, objs, kept);
	}
	pthread_mutex_unlock(&m->lock);
	free(objs);
	return rc;
}

/* Publish the current regions again, with the log state m now has. Caller holds m->lock. */
static int republish_locked(struct vqs_mem *m)
{
	unsigned n;
	struct mem_region_obj **objs = current_objs(m, 0, &n);
	int rc = objs ? replace_locked(m, objs, n) : -ENOMEM;
	free(objs);
	return rc;
}

int vqs_mem_set_log(struct vqs_mem *m, const struct vqs_mem_log *log)
{
	struct mem_log_obj *o = NULL;
	if (log && (!log->bitmap || !log->len))
		return -EINVAL;
	if (log && !(o = malloc(sizeof(*o))))
		return -ENOMEM;
	if (o) {
		o->l = *log;
		atomic_init(&o->refs, 1);
	}
	pthread_mutex_lock(&m->lock);
	struct mem_log_obj *old = m->log;
	m->log = o;
	int rc = republish_locked(m);
	if (rc)
		m->log = old;
	pthread_mutex_unlock(&m->lock);
	if (rc)
		free(o);
	else if (old)
		vqs_mem_log_put(old); /* the retired tables still hold theirs */
	return rc;
}

/* Set whether the map logs (on) and the eventfd it signals (fd), each unless NULL, and publish
 * the result; nothing changes on failure. */
static int log_update(struct vqs_mem *m, const bool *on, const int *fd)
{
	pthread_mutex_lock(&m->lock);
	bool was_on = m->log_on;
	int was_fd = m->log_fd;
	m->log_on = on ? *on : was_on;
	m->log_fd = fd ? *fd : was_fd;
	int rc = m->log_on == was_on && m->log_fd == was_fd ? 0 : republish_locked(m);
	if (rc) {
		m->log_on = was_on;
		m->log_fd = was_fd;
	}
	pthread_mutex_unlock(&m->lock);
	return rc;
}

int vqs_mem_log_enable(struct vqs_mem *m, bool on) { return log_update(m, &on, NULL); }

int vqs_mem_set_log_fd(struct vqs_mem *m, int fd)
{
	return fd < -1 ? -EINVAL : log_update(m, NULL, &fd);
}

unsigned vqs_mem_nregions(struct vqs_mem *m)
{
	vqs_mem_read_lock();
	unsigned n = vqs_mem_current(m)->n;
	vqs_mem_read_unlock();
	return n;
}
