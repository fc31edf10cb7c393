/* SPDX-License-Identifier: MIT */
#include "pair.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

int vqs_pair_init(struct vqs_pair *p, unsigned num, uint64_t features, uint64_t gpa_base,
		  size_t arena_size)
{
	memset(p, 0, sizeof(*p));
	p->features = features;
	p->num = num;
	int rc = vqs_gmem_create(&p->gmem, gpa_base, arena_size);
	if (rc)
		return rc;
	struct vqs_mem_region r;
	vqs_gmem_region(p->gmem, &r);
	if ((rc = vqs_mem_create(&p->mem)) || (rc = vqs_mem_set(p->mem, &r, 1)))
		goto fail;
	struct vqs_drv_vq_config dc = {
		.size = sizeof(dc), .num = num, .features = features, .gmem = p->gmem};
	if ((rc = vqs_drv_vq_create(&p->drv, &dc)))
		goto fail;
	struct vqs_vq_config vc = {.size = sizeof(vc), .num = num, .features = features,
				   .addr_space = VQS_ADDR_GPA, .mem = p->mem};
	vqs_drv_vq_addrs(p->drv, &vc.desc_addr, &vc.driver_addr, &vc.device_addr);
	if ((rc = vqs_vq_create(&p->dev)) || (rc = vqs_vq_configure(p->dev, &vc)))
		goto fail;
	return 0;
fail:
	vqs_pair_fini(p);
	return rc;
}

void vqs_pair_fini(struct vqs_pair *p)
{
	if (p->dev)
		vqs_vq_destroy(p->dev);
	if (p->drv)
		vqs_drv_vq_destroy(p->drv);
	if (p->mem)
		vqs_mem_destroy(p->mem);
	if (p->gmem)
		vqs_gmem_destroy(p->gmem);
	memset(p, 0, sizeof(*p));
}

long vqs_pair_round_trip(struct vqs_pair *p, int kick_fd, int call_fd,
			 const struct vqs_drv_buf *bufs, unsigned out, unsigned in)
{
	static int token;
	int rc = vqs_drv_add(p->drv, bufs, out, in, &token, false);
	if (rc)
		return rc;
	vqs_drv_kick_prepare(p->drv);
	uint64_t one = 1, v;
	if (write(kick_fd, &one, sizeof(one)) != sizeof(one))
		return -errno;
	for (int i = 0; i < 500; i++) {
		uint32_t len;
		if (vqs_drv_get_used(p->drv, &len) == &token)
			return len;
		/* Wait for a call (or 10 ms), and reset the eventfd so the next wait waits. */
		struct pollfd pfd = {.fd = call_fd, .events = POLLIN};
		if (poll(&pfd, 1, 10) > 0 && read(call_fd, &v, sizeof(v)) < 0)
			return -errno;
	}
	return -1;
}

int vqs_pair_post(struct vqs_pair *p, int kick_fd, const struct vqs_drv_buf *b, bool out,
		  unsigned n, int *tokens)
{
	for (unsigned i = 0; i < n; i++) {
		int rc = vqs_drv_add(p->drv, b, out, !out, &tokens[i], false);
		if (rc)
			return rc;
	}
	vqs_drv_kick_prepare(p->drv);
	uint64_t one = 1;
	return write(kick_fd, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

int vqs_served_pair_attach(struct vqs_served_pair *s, struct vqs_sched *sched, unsigned num,
			   uint64_t features, uint64_t gpa_base, size_t arena_size,
			   const struct vqs_queue_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->kick = s->call = -1;
	int rc = vqs_pair_init(&s->p, num, features, gpa_base, arena_size);
	if (rc)
		return rc;
	s->kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->call = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->kick < 0 || s->call < 0) {
		rc = -errno;
	} else {
		struct vqs_queue_opts qo = *o;
		qo.vq = s->p.dev;
		qo.kick_fd = s->kick;
		qo.call_fd = s->call;
		rc = vqs_sched_attach(sched, &qo, &s->q);
	}
	if (rc)
		vqs_served_pair_fini(s);
	return rc;
}

int vqs_served_pair_init(struct vqs_served_pair *s, unsigned num, uint64_t features,
			 uint64_t gpa_base, size_t arena_size, enum vqs_policy policy,
			 const struct vqs_queue_opts *o)
{
	struct vqs_sched_opts so;
	vqs_sched_opts_init(&so);
	so.policy = policy;
	struct vqs_sched *sched;
	int rc = vqs_sched_create(&sched, &so);
	if (rc) {
		memset(s, 0, sizeof(*s));
		return rc;
	}
	rc = vqs_served_pair_attach(s, sched, num, features, gpa_base, arena_size, o);
	if (rc)
		vqs_sched_destroy(sched);
	else
		s->sched = sched;
	return rc;
}

int vqs_served_pair_fini(struct vqs_served_pair *s)
{
	int rc = s->q ? vqs_sched_detach(s->q) : 0;
	if (s->sched)
		vqs_sched_destroy(s->sched);
	vqs_pair_fini(&s->p);
	if (s->kick >= 0)
		close(s->kick);
	if (s->call >= 0)
		close(s->call);
	memset(s, 0, sizeof(*s));
	s->kick = s->call = -1;
	return rc;
}

unsigned vqs_test_complete_all(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			       void *opaque)
{
	for (unsigned i = 0; i < n; i++)
		vqs_req_complete(reqs[i], 0);
	return n;
}

void vqs_test_sleep_ms(long ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}
