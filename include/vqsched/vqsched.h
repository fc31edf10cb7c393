/* SPDX-License-Identifier: MIT */
/* Umbrella header: everything vqsched exports. */
#ifndef VQSCHED_VQSCHED_H
#define VQSCHED_VQSCHED_H

#include <vqsched/common.h>
#include <vqsched/version.h>
#include <vqsched/mem.h>
#include <vqsched/vring.h>
#include <vqsched/driver.h>
#include <vqsched/sched.h>
#include <vqsched/stats.h>
#include <vqsched/vhost_user.h>
#include <vqsched/ksim.h>

#endif
