/* SPDX-License-Identifier: MIT */
#ifndef VQSCHED_VHOST_USER_H
#define VQSCHED_VHOST_USER_H
#include <vqsched/common.h>
#endif
