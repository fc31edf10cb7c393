/* SPDX-License-Identifier: MIT */
#include "ksim/wait.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* Two clock reads further apart than this mean the thread was not running in between. */
#define BURN_GAP_NS 2000u

void ksim_burn_ns(uint64_t ns)
{
	/* CPU time, not wall time: a thread preempted halfway must still do all of its work, or
	 * two threads sharing a CPU would each get their work done for free. The thread CPU clock
	 * is a system call (1.4 us on this VM, more under load): read at every burn it cost more
	 * than the small costs it measured and made them all alike. Spin on the cheap wall clock
	 * instead and count only the steps between consecutive reads that are too short to hide a
	 * preemption. */
	uint64_t done = 0, prev = vqs_now_ns();
	while (done < ns) {
		uint64_t now = vqs_now_ns();
		if (now - prev < BURN_GAP_NS)
			done += now - prev;
		prev = now;
	}
}

static bool fd_ready(int fd, const struct timespec *ts)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int n = ppoll(&p, 1, ts, NULL);
	return n > 0;
}

bool ksim_fd_wait(int fd, enum vqs_ksim_wait mode, uint64_t timeout_ns, uint32_t wake_ns)
{
	static const struct timespec zero = {0, 0};
	if (fd_ready(fd, &zero))
		return true;
	bool ready = false;
	if (mode == VQS_KSIM_WAIT_SPIN) {
		uint64_t end = timeout_ns == UINT64_MAX ? UINT64_MAX : vqs_now_ns() + timeout_ns;
		while (!(ready = fd_ready(fd, &zero)) && vqs_now_ns() < end)
			sched_yield();
	} else {
		struct timespec ts = {(time_t)(timeout_ns / 1000000000u),
				      (long)(timeout_ns % 1000000000u)};
		ready = fd_ready(fd, timeout_ns == UINT64_MAX ? NULL : &ts);
	}
	if (ready)
		ksim_burn_ns(wake_ns);
	return ready;
}

void ksim_efd_clear(int fd)
{
	uint64_t v;
	while (read(fd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
}

void ksim_efd_signal(int fd)
{
	uint64_t one = 1;
	while (write(fd, &one, sizeof(one)) < 0 && errno == EINTR)
		;
}

int ksim_park_init(struct ksim_park *p)
{
	atomic_init(&p->waiting, 0);
	p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	return p->efd < 0 ? -errno : 0;
}

void ksim_park_fini(struct ksim_park *p)
{
	if (p->efd >= 0)
		close(p->efd);
	p->efd = -1;
}

void ksim_park_prepare(struct ksim_park *p)
{
	/* seq_cst: the waiter's store of `waiting` and its re-check of the condition pair with the
	 * waker's publish of the condition and its load of `waiting` in ksim_unpark (Dekker). */
	atomic_store(&p->waiting, 1);
}

void ksim_park_wait(struct ksim_park *p, enum vqs_ksim_wait mode, uint64_t timeout_ns,
		    uint32_t wake_ns)
{
	ksim_fd_wait(p->efd, mode, timeout_ns, wake_ns);
	atomic_store(&p->waiting, 0);
	ksim_efd_clear(p->efd);
}

void ksim_park_cancel(struct ksim_park *p) { atomic_store(&p->waiting, 0); }

void ksim_unpark(struct ksim_park *p)
{
	/* seq_cst: pairs with ksim_park_prepare; the waker published its condition before. */
	if (atomic_load(&p->waiting) && atomic_exchange(&p->waiting, 0))
		ksim_efd_signal(p->efd);
}
