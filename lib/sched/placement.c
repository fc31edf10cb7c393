/* SPDX-License-Identifier: MIT */
/*
 * Where workers run. Every worker gets an explicit mask at creation (control.c passes it in the
 * thread attributes), so none ever runs with a mask inherited by accident:
 *   float   the CPUs the process may use: the mask the process started with (captured when the
 *           library was loaded) joined with the main thread's current mask; the kernel clamps it
 *           to the process's cpuset. Not the mask of the thread that happens to create the worker.
 *   inherit the mask of the thread that called vqs_sched_create (vhost_task's behaviour), also for
 *           dedicated workers started later by attach.
 *   pin     worker i gets the i-th CPU of `cpus` (round robin).
 *   auto    hwloc: candidates (`cpus`, or the float set) minus busy_cpus (all of them if that
 *           leaves nothing), narrowed to the CPUs of the preferred NUMA node (numa_node, or the
 *           node holding the ring memory) when that leaves any; worker i then gets the i-th core
 *           of what remains (round robin over cores, so workers do not share a core while there
 *           are enough), and prefers its node for its own allocations (libnuma).
 */
#include <errno.h>
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <numa.h>
#include <numaif.h>
#include <unistd.h>

#include "sched/internal.h"
#include "util/log.h"

static cpu_set_t process_start_mask;

__attribute__((constructor)) static void capture_process_mask(void)
{
	if (sched_getaffinity(0, sizeof(process_start_mask), &process_start_mask))
		CPU_ZERO(&process_start_mask);
}

static void float_mask(cpu_set_t *m)
{
	cpu_set_t main_thread;
	*m = process_start_mask;
	if (!sched_getaffinity(getpid(), sizeof(main_thread), &main_thread))
		CPU_OR(m, m, &main_thread);
}

/* The i-th set CPU of m (round robin), as a one-CPU mask. */
static void nth_cpu(const cpu_set_t *m, unsigned i, cpu_set_t *out)
{
	unsigned n = (unsigned)CPU_COUNT(m), want = i % n;
	CPU_ZERO(out);
	for (unsigned c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, m) && !want--) {
			CPU_SET(c, out);
			return;
		}
}

int sched_place_init(struct vqs_sched *s)
{
	if (s->o.placement != VQS_PLACE_AUTO)
		return 0;
	hwloc_topology_t t;
	if (hwloc_topology_init(&t))
		return -ENOMEM;
	if (hwloc_topology_load(t)) {
		hwloc_topology_destroy(t);
		return -ENODEV;
	}
	s->topo = t;
	return 0;
}

void sched_place_fini(struct vqs_sched *s)
{
	if (s->topo)
		hwloc_topology_destroy(s->topo);
	s->topo = NULL;
}

int sched_mem_node(const void *p)
{
	int node = -1;
	if (numa_available() < 0)
		return -1;
	if (get_mempolicy(&node, NULL, 0, (void *)p, MPOL_F_NODE | MPOL_F_ADDR))
		return -1;
	return node;
}

static void place_auto(struct vqs_sched *s, unsigned index, int node_hint, cpu_set_t *mask,
		       int *node)
{
	hwloc_topology_t t = s->topo;
	cpu_set_t allowed, cand;
	float_mask(&allowed);
	cand = allowed;
	if (CPU_COUNT(&s->o.cpus))
		CPU_AND(&cand, &cand, &s->o.cpus);
	cpu_set_t free_cpus = cand;
	for (unsigned c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &s->o.busy_cpus))
			CPU_CLR(c, &free_cpus);
	if (CPU_COUNT(&free_cpus))
		cand = free_cpus;
	else
		vqs_warn("sched: every candidate CPU is busy; placing workers among them");
	hwloc_bitmap_t set = hwloc_bitmap_alloc(), core = hwloc_bitmap_alloc();
	hwloc_cpuset_from_glibc_sched_affinity(t, set, &cand, sizeof(cand));
	int want = s->o.numa_node >= 0 ? s->o.numa_node : node_hint;
	hwloc_obj_t numa = want >= 0 ? hwloc_get_numanode_obj_by_os_index(t, (unsigned)want) : NULL;
	if (numa && hwloc_bitmap_intersects(numa->cpuset, set)) {
		hwloc_bitmap_and(set, set, numa->cpuset);
		*node = want;
	}
	/* Cores that have a candidate CPU, round robin by worker index. */
	int ncores = hwloc_get_nbobjs_inside_cpuset_by_type(t, set, HWLOC_OBJ_CORE);
	if (ncores > 0) {
		hwloc_obj_t o = hwloc_get_obj_inside_cpuset_by_type(t, set, HWLOC_OBJ_CORE,
								     index % (unsigned)ncores);
		hwloc_bitmap_and(core, o->cpuset, set);
	} else {
		hwloc_bitmap_copy(core, set);
	}
	hwloc_cpuset_to_glibc_sched_affinity(t, core, mask, sizeof(*mask));
	if (!CPU_COUNT(mask))
		*mask = cand;
	hwloc_bitmap_free(set);
	hwloc_bitmap_free(core);
}

int sched_place(struct vqs_sched *s, unsigned index, int node_hint, cpu_set_t *mask, int *node)
{
	*node = -1;
	switch (s->o.placement) {
	case VQS_PLACE_FLOAT:
		float_mask(mask);
		break;
	case VQS_PLACE_INHERIT:
		*mask = s->inherit_mask;
		break;
	case VQS_PLACE_PIN:
		nth_cpu(&s->o.cpus, index, mask);
		break;
	case VQS_PLACE_AUTO:
		place_auto(s, index, node_hint, mask, node);
		break;
	}
	return CPU_COUNT(mask) ? 0 : -EINVAL;
}

void sched_cost_cpus(struct vqs_sched *s, int cpu[2])
{
	/* A kick comes from the side of the thread that creates the scheduler (a VMM's owner
	 * thread, pinned with its vCPU where it is pinned): a CPU of worker 0's, off that thread's
	 * CPUs where the worker may run elsewhere (float, auto), and another CPU that thread may run
	 * on, or the same one when that is all it has */
	cpu_set_t w0, off;
	int node;
	cpu[0] = cpu[1] = -1;
	if (sched_place(s, 0, -1, &w0, &node))
		float_mask(&w0);
	CPU_XOR(&off, &w0, &s->inherit_mask);
	CPU_AND(&off, &off, &w0);
	if (!CPU_COUNT(&off))
		off = w0;
	for (int c = 0; c < CPU_SETSIZE && cpu[0] < 0; c++)
		if (CPU_ISSET(c, &off))
			cpu[0] = c;
	for (int c = 0; c < CPU_SETSIZE && cpu[1] < 0; c++)
		if (CPU_ISSET(c, &s->inherit_mask) && c != cpu[0])
			cpu[1] = c;
	if (cpu[1] < 0) /* the creator has only cpu[0] */
		cpu[1] = cpu[0];
}
