/* SPDX-License-Identifier: MIT */
#ifndef VQSCHED_KSIM_H
#define VQSCHED_KSIM_H
#include <vqsched/common.h>
#endif
