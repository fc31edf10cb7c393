/* SPDX-License-Identifier: MIT */
/*
 * Nested read-side sections: only the outermost vqs_mem_read_unlock ends the thread's section
 * (the depth is counted by vqs_mem, which enters and leaves liburcu's section once). A table
 * replaced while a reader sits in the outer section after leaving an inner one is not released
 * until the outer one ends, and then it is.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <cmocka.h>
#include <vqsched/vqsched.h>

/* A grace period with no reader takes milliseconds; a reader holding the section this long
 * keeps the release from running if the section is really held. */
#define HELD_MS 100
#define BOUND_NS 5000000000ull

static _Atomic bool released;
static uint8_t region_mem[4096] __attribute__((aligned(4096)));

static void on_release(void *opaque, const struct vqs_mem_region *r)
{
	(void)opaque;
	(void)r;
	atomic_store(&released, true);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
	nanosleep(&ts, NULL);
}

struct replacer {
	struct vqs_mem *m;
	_Atomic bool done;
};

static void *replace(void *arg)
{
	struct replacer *r = arg;
	struct vqs_mem_region plain = {.gpa = 0x1000, .uaddr = 0x1000, .size = sizeof(region_mem),
				       .host = region_mem};
	assert_int_equal(vqs_mem_set(r->m, &plain, 1), 0);
	vqs_mem_synchronize(r->m); /* waits for the reader's section */
	atomic_store(&r->done, true);
	return NULL;
}

static void test_inner_unlock_keeps_the_outer_section(void **state)
{
	(void)state;
	struct vqs_mem *m;
	assert_int_equal(vqs_mem_create(&m), 0);
	struct vqs_mem_region hooked = {.gpa = 0x1000, .uaddr = 0x1000, .size = sizeof(region_mem),
					.host = region_mem, .release = on_release};
	assert_int_equal(vqs_mem_set(m, &hooked, 1), 0);
	vqs_mem_synchronize(m);

	vqs_mem_read_lock();
	vqs_mem_read_lock();
	vqs_mem_read_lock();
	vqs_mem_read_unlock();
	vqs_mem_read_unlock(); /* two inner sections left; the outer one holds */
	static struct replacer r;
	r.m = m;
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, replace, &r), 0);
	sleep_ms(HELD_MS);
	bool early = atomic_load(&released) || atomic_load(&r.done);
	vqs_mem_read_unlock();
	assert_false(early);
	assert_int_equal(pthread_join(th, NULL), 0);
	assert_true(atomic_load(&r.done));
	assert_true(atomic_load(&released));
	vqs_mem_destroy(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inner_unlock_keeps_the_outer_section),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
