/* SPDX-License-Identifier: MIT */
/*
 * A driver-side queue and a device-side queue over one guest-memory arena, in one process: the
 * fixture most ring, scheduler and benchmark tests start from. Public API only.
 */
#ifndef VQS_TEST_PAIR_H
#define VQS_TEST_PAIR_H

#include <vqsched/vqsched.h>

struct vqs_pair {
	struct vqs_gmem *gmem;
	struct vqs_mem *mem;
	struct vqs_drv_vq *drv;
	struct vqs_vq *dev;
	uint64_t features;
	unsigned num;
};

/* Build a pair of `num` entries with `features` in an arena of arena_size bytes at gpa_base.
 * 0 or -errno. */
int vqs_pair_init(struct vqs_pair *p, unsigned num, uint64_t features, uint64_t gpa_base,
		  size_t arena_size);
void vqs_pair_fini(struct vqs_pair *p);

/*
 * A pair whose device queue a scheduler serves: the pair, its kick and call eventfds, a scheduler
 * of `policy` (its defaults otherwise), and the device queue attached with the caller's options
 * `o`, vq and fds filled in (o->size as given, so callers built against an older struct can be
 * modelled). 0 or -errno, with nothing left allocated.
 */
struct vqs_served_pair {
	struct vqs_pair p;
	int kick, call;
	struct vqs_sched *sched;
	struct vqs_queue *q;
};
int vqs_served_pair_init(struct vqs_served_pair *s, unsigned num, uint64_t features,
			 uint64_t gpa_base, size_t arena_size, enum vqs_policy policy,
			 const struct vqs_queue_opts *o);
/* The same on a scheduler the caller owns (s->sched stays NULL: fini leaves it alone). */
int vqs_served_pair_attach(struct vqs_served_pair *s, struct vqs_sched *sched, unsigned num,
			   uint64_t features, uint64_t gpa_base, size_t arena_size,
			   const struct vqs_queue_opts *o);
/* Detach the queue (its return value), destroy the scheduler if it owns one, the pair, close the
 * fds. */
int vqs_served_pair_fini(struct vqs_served_pair *s);

/* Send one chain of `out` readable then `in` writable buffers (bufs[0..out+in)), kick kick_fd,
 * and wait up to 5 s for it to come back, sleeping on call_fd (reset after each call). Returns
 * the length the device reported, -1 when it did not come back, -errno when it could not be
 * sent. For a queue served by a scheduler with nothing else in flight. */
long vqs_pair_round_trip(struct vqs_pair *p, int kick_fd, int call_fd,
			 const struct vqs_drv_buf *bufs, unsigned out, unsigned in);

/* Add n chains of the one buffer *b (readable when `out`, else writable), chain i owned by
 * &tokens[i], publish them together and kick kick_fd once. 0 or -errno. */
int vqs_pair_post(struct vqs_pair *p, int kick_fd, const struct vqs_drv_buf *b, bool out,
		  unsigned n, int *tokens);

/* A queue handler that completes every request at once, writing nothing. */
unsigned vqs_test_complete_all(struct vqs_queue *q, struct vqs_req *const *reqs, unsigned n,
			       void *opaque);
/* Sleep ms milliseconds. */
void vqs_test_sleep_ms(long ms);
#endif
