/* SPDX-License-Identifier: MIT */
/*
 * vqs_vq_session_look, on both layouts: a session looks at its ring again without starting over,
 * sees what the driver made available since, and pops it; inside its section it checks the queue
 * no more (the table it entered with stays the session's), after a pause it enters the section
 * again and takes the current table, and a queue broken meanwhile answers -EIO and touches the
 * ring no more. Public API only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <cmocka.h>

#include "layout_fixture.h"

#define NUM LFX_NUM

/* One writable descriptor chain with id (split: head) id, made available. */
static void offer(struct lfx *c, uint16_t id)
{
	if (c->packed)
		pfx_simple(&c->pk, id, 64, true);
	else
		fx_simple_chain(&c->split, id, 64, true);
}

/* A session and the one chain it pops. */
struct one {
	struct vqs_vq_session ss;
	struct vqs_elem e;
	struct iovec iov;
	bool call;
};

/* Begin a session on the empty ring: it finds nothing and stays in its section. */
static void begin_empty(struct lfx *c, struct one *o)
{
	assert_int_equal(vqs_vq_session_begin(c->vq, &o->ss), 0);
	assert_true(o->ss.in_section);
}

/* Pop one chain into o->e; returns the pop's result. */
static int pop_one(struct one *o)
{
	o->e = (struct vqs_elem){.iov = &o->iov, .iov_cap = 1};
	return vqs_vq_session_pop(&o->ss, &(struct vqs_pop_to){.base = &o->e}, 1);
}

/* A chain made available after begin found the ring empty is seen by the next look of the same
 * session, popped and completed; the look after it finds none. */
static void look_sees_what_came_after_begin(void **state)
{
	struct lfx *c = *state;
	struct one o;
	begin_empty(c, &o);
	offer(c, 3);
	assert_true(vqs_vq_session_look(&o.ss) >= 1);
	assert_int_equal(pop_one(&o), 1);
	assert_int_equal(o.e.id, 3);
	assert_int_equal(o.e.in_len, 64);
	assert_int_equal(vqs_vq_session_look(&o.ss), 0);
	uint32_t written = 8;
	const struct vqs_elem *pe = &o.e;
	assert_int_equal(vqs_vq_session_fill(&o.ss, &pe, &written, 1), 1);
	assert_int_equal(vqs_vq_session_end(&o.ss, &o.call), 1);
	assert_false(o.ss.in_section);
	assert_false(vqs_vq_is_broken(c->vq));
}

/* Replace the memory table with one of the same two regions (a new table object). */
static void replace_table(struct lfx *c)
{
	struct vqs_mem_region reg[2];
	vqs_gmem_region(c->m.gmem, &reg[0]);
	vqs_gmem_region(c->g2, &reg[1]);
	assert_int_equal(vqs_mem_set(c->m.mem, reg, 2), 0);
}

/* The current table, read inside a section of the caller's. */
static const struct vqs_mem_table *current(struct lfx *c)
{
	vqs_mem_read_lock();
	const struct vqs_mem_table *t = vqs_mem_current(c->m.mem);
	vqs_mem_read_unlock();
	return t;
}

/* A paused session's look enters the section again and checks the queue again: it translates
 * through the table current then, not the one it began with, and pops what came meanwhile. */
static void look_after_pause_takes_the_current_table(void **state)
{
	struct lfx *c = *state;
	struct one o;
	begin_empty(c, &o);
	const struct vqs_mem_table *before = o.ss.table;
	vqs_vq_session_pause(&o.ss);
	replace_table(c);
	offer(c, 5);
	assert_true(vqs_vq_session_look(&o.ss) >= 1);
	assert_true(o.ss.in_section);
	assert_ptr_equal(o.ss.table, current(c));
	assert_ptr_not_equal(o.ss.table, before);
	assert_int_equal(pop_one(&o), 1);
	assert_int_equal(o.e.id, 5);
	vqs_vq_session_end(&o.ss, &o.call);
	assert_false(vqs_vq_is_broken(c->vq));
}

/* A chain that breaks the queue (its id out of range), popped between two looks: the next look
 * answers -EIO, leaves the section, and every later call of the session answers it too. */
static void look_on_a_broken_queue_answers_its_error(void **state)
{
	struct lfx *c = *state;
	struct one o;
	begin_empty(c, &o);
	if (c->packed)
		pfx_raw(&c->pk, 0, FX_GPA_BASE + 0x100, 64, NUM + 1,
			(uint16_t)(pfx_avail_bits(true) | VQS_VRING_DESC_F_WRITE));
	else
		fx_publish(&c->split, NUM + 1);
	assert_true(vqs_vq_session_look(&o.ss) >= 1);
	assert_int_equal(pop_one(&o), -EIO);
	assert_true(vqs_vq_is_broken(c->vq));
	assert_int_equal(vqs_vq_session_look(&o.ss), -EIO);
	assert_false(o.ss.in_section);
	assert_int_equal(vqs_vq_session_look(&o.ss), -EIO);
	assert_int_equal(vqs_vq_session_end(&o.ss, &o.call), 0);
	assert_false(o.call);
}

#define ON(layout, f) {#f " (" #layout ")", f, lfx_setup_##layout, lfx_teardown, NULL}

int main(void)
{
	const struct CMUnitTest tests[] = {
		ON(split, look_sees_what_came_after_begin),
		ON(packed, look_sees_what_came_after_begin),
		ON(split, look_after_pause_takes_the_current_table),
		ON(packed, look_after_pause_takes_the_current_table),
		ON(split, look_on_a_broken_queue_answers_its_error),
		ON(packed, look_on_a_broken_queue_answers_its_error),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
