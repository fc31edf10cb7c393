/* SPDX-License-Identifier: MIT */
/*
 * Pinning a table already in hand, for the scheduler: it pops a batch through the current table
 * without a reference (the read-side section keeps the table alive), and pins it only when the
 * handler keeps some request beyond its call, which a polled request/response queue never does.
 * That keeps two atomic read-modify-writes (full barriers on x86) per batch off the way of every
 * request to its completion.
 */
#ifndef VQS_MEM_PIN_H
#define VQS_MEM_PIN_H

#include <vqsched/mem.h>

/* Take a pin on t, released with vqs_mem_table_put. t must have been read with
 * vqs_mem_current() inside the read-side section the caller is still in: even if it has been
 * replaced since, the readers' reference keeps it until the section ends. */
void vqs_mem_table_pin(const struct vqs_mem_table *t);

#endif
