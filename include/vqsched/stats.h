/* SPDX-License-Identifier: MIT */
#ifndef VQSCHED_STATS_H
#define VQSCHED_STATS_H
#include <vqsched/common.h>
#endif
