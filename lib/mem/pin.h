/* SPDX-License-Identifier: MIT */
/*
 * Pinning a table already in hand, for the scheduler: it pops a batch through the current table
 * inside the read-side section, checks the table is still current, and pins that one table for
 * the whole batch (two atomic read-modify-writes per batch, not per request) so that its handler
 * runs outside the section.
 */
#ifndef VQS_MEM_PIN_H
#define VQS_MEM_PIN_H

#include <vqsched/mem.h>

/* Take a pin on t, released with vqs_mem_table_put. t must have been read with
 * vqs_mem_current() inside the read-side section the caller is still in: even if it has been
 * replaced since, the readers' reference keeps it until the section ends. */
void vqs_mem_table_pin(const struct vqs_mem_table *t);

#endif
