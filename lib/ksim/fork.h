/* SPDX-License-Identifier: MIT */
/* Creating modelled kernel threads: kthread mode (from a kthreadd-like helper) or task mode
 * (vhost_task: from the calling thread, under its RLIMIT_NPROC). */
#ifndef VQS_KSIM_FORK_H
#define VQS_KSIM_FORK_H

#include <pthread.h>
#include <vqsched/ksim.h>

/* Start fn(arg) on a new thread created the way `mode` says. 0, -EAGAIN (task mode over
 * RLIMIT_NPROC, or the system refused a thread), -errno. */
int ksim_fork(enum vqs_ksim_fork mode, void *(*fn)(void *), void *arg, pthread_t *th);
/* The mask a kthread-mode thread gets: kthreadd's, every CPU. */
void ksim_kthread_cpus(cpu_set_t *all);

#endif
