/* SPDX-License-Identifier: MIT */
/*
 * How modelled threads spend explicit costs and wait for events (enum vqs_ksim_wait), and a
 * parking spot that a waker signals only when someone is actually waiting.
 */
#ifndef VQS_KSIM_WAIT_H
#define VQS_KSIM_WAIT_H

#include <stdatomic.h>
#include <vqsched/ksim.h>

/* Consume ns nanoseconds of this thread's CPU time (a modelled cost). */
void ksim_burn_ns(uint64_t ns);

/*
 * Wait until fd is readable or timeout_ns passed (UINT64_MAX: no timeout), the way `mode` says;
 * charge wake_ns when the thread really had to wait. Does not read fd. Returns true when readable.
 */
bool ksim_fd_wait(int fd, enum vqs_ksim_wait mode, uint64_t timeout_ns, uint32_t wake_ns);

/* Read an eventfd (non-blocking) to clear it. */
void ksim_efd_clear(int fd);
/* Signal an eventfd. */
void ksim_efd_signal(int fd);

/*
 * Parking: the waiter announces itself (ksim_park_prepare), re-checks its condition, then waits;
 * wakers call ksim_unpark, which writes the eventfd only when a waiter announced itself.
 */
struct ksim_park {
	atomic_int waiting;
	int efd; /* non-blocking eventfd; may also be written directly (e.g. as a call fd) */
};
int ksim_park_init(struct ksim_park *p);
void ksim_park_fini(struct ksim_park *p);
void ksim_park_prepare(struct ksim_park *p);
/* Wait (after prepare and a re-check that found nothing); clears the announcement and the fd. */
void ksim_park_wait(struct ksim_park *p, enum vqs_ksim_wait mode, uint64_t timeout_ns,
		    uint32_t wake_ns);
/* Give up after prepare because the re-check found work. */
void ksim_park_cancel(struct ksim_park *p);
void ksim_unpark(struct ksim_park *p);

#endif
