/* SPDX-License-Identifier: MIT */
/*
 * The switch's MAC table: learning, moving, aging, flushing a port, and removal from probe
 * chains (addresses that collide stay reachable after their neighbours leave), up to the fill
 * limit where new addresses are refused and counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>

#include <cmocka.h>

#include "mac_table.h"

static void mac_of(unsigned i, uint8_t *mac)
{
	mac[0] = 0x02;
	mac[1] = (uint8_t)(i >> 24);
	mac[2] = (uint8_t)(i >> 16);
	mac[3] = (uint8_t)(i >> 8);
	mac[4] = (uint8_t)i;
	mac[5] = 0x5a;
}

static struct sw_mac_table *table(void)
{
	struct sw_mac_table *t = malloc(sizeof(*t));
	assert_non_null(t);
	sw_mac_init(t);
	return t;
}

static void learn_move_lookup(void **st)
{
	struct sw_mac_table *t = table();
	uint8_t a[6], b[6];
	mac_of(1, a);
	mac_of(2, b);
	assert_int_equal(sw_mac_lookup(t, a), -1);
	sw_mac_learn(t, a, 3, 100);
	sw_mac_learn(t, b, 0, 100);
	assert_int_equal(sw_mac_lookup(t, a), 3);
	assert_int_equal(sw_mac_lookup(t, b), 0);
	sw_mac_learn(t, a, 5, 200); /* the address moved */
	assert_int_equal(sw_mac_lookup(t, a), 5);
	assert_int_equal(sw_mac_count(t), 2);
	sw_mac_fini(t);
	free(t);
}

/* Many addresses, then every other one aged out: the rest, including those whose probe chains
 * ran through removed slots, must still be found, and the removed ones must not. */
static void aging_keeps_chains_intact(void **st)
{
	struct sw_mac_table *t = table();
	const unsigned n = SW_MAC_SLOTS / 2;
	uint8_t m[6];
	for (unsigned i = 0; i < n; i++) {
		mac_of(i, m);
		sw_mac_learn(t, m, i % 7, (i % 2) ? 1000000000ull : 5000000000ull);
	}
	assert_int_equal(sw_mac_count(t), n);
	assert_int_equal(sw_mac_age(t, 2000000000ull), n / 2);
	for (unsigned i = 0; i < n; i++) {
		mac_of(i, m);
		assert_int_equal(sw_mac_lookup(t, m), (i % 2) ? -1 : (int)(i % 7));
	}
	assert_int_equal(sw_mac_count(t), n / 2);
	sw_mac_fini(t);
	free(t);
}

static void flush_port_forgets_only_that_port(void **st)
{
	struct sw_mac_table *t = table();
	uint8_t m[6];
	for (unsigned i = 0; i < 1000; i++) {
		mac_of(i, m);
		sw_mac_learn(t, m, i % 4, 1);
	}
	assert_int_equal(sw_mac_flush_port(t, 2), 250);
	for (unsigned i = 0; i < 1000; i++) {
		mac_of(i, m);
		assert_int_equal(sw_mac_lookup(t, m), i % 4 == 2 ? -1 : (int)(i % 4));
	}
	sw_mac_fini(t);
	free(t);
}

/* Past three quarters full, new addresses are refused (counted) and known ones still found. */
static void full_table_refuses_and_counts(void **st)
{
	struct sw_mac_table *t = table();
	uint8_t m[6];
	const unsigned limit = SW_MAC_SLOTS / 4 * 3;
	for (unsigned i = 0; i < limit + 10; i++) {
		mac_of(i, m);
		sw_mac_learn(t, m, 1, 1);
	}
	assert_int_equal(sw_mac_count(t), limit);
	assert_int_equal(atomic_load(&t->full_misses), 10);
	mac_of(limit - 1, m);
	assert_int_equal(sw_mac_lookup(t, m), 1);
	mac_of(limit, m);
	assert_int_equal(sw_mac_lookup(t, m), -1);
	sw_mac_fini(t);
	free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(learn_move_lookup),
		cmocka_unit_test(aging_keeps_chains_intact),
		cmocka_unit_test(flush_port_forgets_only_that_port),
		cmocka_unit_test(full_table_refuses_and_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
