/* SPDX-License-Identifier: MIT */
/*
 * The injected slowdown's arithmetic (bench/inject.c) and what a run of vqs-bench reports it
 * gave. Nothing here is timed: speed is the run's own "achieved" report.
 *
 * When the sizing may stop: a sizing window is timed on a shared machine, and a stall on one
 * side can make a window read the target with an amount far from it (issue 17: 33 ns sized for
 * rr, whose other trials sized 276-325 ns, and missed the 10% it was meant to inject). One
 * window within the target is therefore not enough.
 *
 * The amount: a stream's request needs 4-19 ns of work a side, a dozen turns of the busy loop;
 * kept in whole turns, a correction by a quarter could only shrink it below 4 turns, and one
 * loaded trial injected 0 ns and was missed (issue 17).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "inject.h"
#include "json.h"
#include "run.h"

/* The spoiled window: the first one reads 10.5% by chance; a sizing that accepted it would stop
 * there with an amount that really makes about 1%. */
static void test_one_window_on_target_is_not_enough(void **state)
{
	(void)state;
	unsigned agreed = 0;
	assert_false(inject_sizing_done(10, 10.5, &agreed));
}

static void test_two_consecutive_windows_on_target_settle_it(void **state)
{
	(void)state;
	unsigned agreed = 0;
	assert_false(inject_sizing_done(10, 10.5, &agreed)); /* spoiled, unchanged amount */
	assert_false(inject_sizing_done(10, 1.2, &agreed));  /* the amount's true effect: rescaled */
	assert_false(inject_sizing_done(10, 9.1, &agreed));  /* the rescaled amount, first look */
	assert_true(inject_sizing_done(10, 10.8, &agreed));  /* and again: settled */
}

static void test_a_window_off_target_starts_the_count_again(void **state)
{
	(void)state;
	unsigned agreed = 0;
	assert_false(inject_sizing_done(10, 8.5, &agreed));
	assert_false(inject_sizing_done(10, 13.0, &agreed)); /* off by more than a fifth */
	assert_false(inject_sizing_done(10, 11.9, &agreed));
	assert_true(inject_sizing_done(10, 8.1, &agreed));
	/* the bound is a fifth of the target either way, inclusive */
	agreed = 0;
	assert_false(inject_sizing_done(20, 24.0, &agreed));
	assert_true(inject_sizing_done(20, 16.0, &agreed));
}

/* Room for the spoiled window, the rescale it leads to and two agreeing windows after it. */
static void test_enough_windows_for_a_spoiled_one(void **state)
{
	(void)state;
	assert_true(INJECT_SIZING_WINDOWS >= 5);
}

/* Turns given to k requests of an amount, from a fresh carry. */
static uint64_t turns_over(uint32_t amount, unsigned k, uint32_t *carry)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < k; i++)
		sum += inject_turns(amount, 1, carry);
	return sum;
}

/* A fraction of a turn is given, carried from request to request: the mean is the amount. */
static void test_fraction_carried_between_requests(void **state)
{
	(void)state;
	const double amounts[] = {0.3, 1.5, 3.75, 12.7, 57.01};
	for (size_t i = 0; i < sizeof(amounts) / sizeof(amounts[0]); i++) {
		uint32_t a = inject_amount(amounts[i]), carry = 0;
		uint64_t sum = turns_over(a, 1000, &carry);
		/* exactly floor(k a / ONE), the rest in the carry */
		assert_int_equal(sum, (uint64_t)a * 1000 / INJECT_ONE);
		assert_int_equal(carry, (uint64_t)a * 1000 % INJECT_ONE);
		double mean = (double)sum / 1000;
		if (mean < amounts[i] - 0.01 || mean > amounts[i] + 0.01)
			fail_msg("%.2f turns a request gave %.4f on average", amounts[i], mean);
	}
	/* a request gets the whole turns of amount plus carry, never more than one extra */
	uint32_t carry = INJECT_ONE - 1;
	assert_int_equal(inject_turns(inject_amount(2.5), 1, &carry), 3);
	assert_int_equal(carry, INJECT_ONE / 2 - 1);
	/* a batch's requests in one call get what they would one by one */
	for (unsigned n = 0; n <= 256; n += 37) {
		uint32_t one = 5, all = 5, a = inject_amount(12.7);
		uint64_t sum = turns_over(a, n, &one);
		assert_int_equal(inject_turns(a, n, &all), sum);
		assert_int_equal(all, one);
	}
}

/* Nothing injected is nothing done: amount 0 gives no turns and leaves the carry alone. */
static void test_zero_injects_nothing(void **state)
{
	(void)state;
	assert_int_equal(inject_amount(0), 0);
	assert_int_equal(inject_amount(-3), 0);
	assert_int_equal(inject_amount(1.0 / INJECT_ONE / 4), 0);
	uint32_t carry = 0;
	assert_int_equal(turns_over(0, 100000, &carry), 0);
	assert_int_equal(carry, 0);
	carry = 17;
	assert_int_equal(turns_over(0, 10, &carry), 0);
	assert_int_equal(carry, 17);
}

/* A small amount corrected by at most a quarter per repeat, each repeat measuring half the
 * target, grows every time, as a large one does (kept in whole turns, 3 x 1.25 stayed 3); from
 * 5 turns, just over the floor (a quarter of 10% of the 65 ns request, 4.9 turns of 0.33 ns). */
static void test_small_amount_grows_by_the_quarter(void **state)
{
	(void)state;
	double tpo_min = 0, turns = 5;
	const double half[2] = {65, 65 * 1.05}; /* 5% measured, 10% wanted */
	uint32_t last = inject_amount(turns);
	for (int i = 0; i < 6; i++) {
		turns = inject_rescale_turns(10, turns, half, 1.25, &tpo_min, 0.33);
		assert_true(inject_amount(turns) > last);
		last = inject_amount(turns);
	}
	/* 5 x 1.25^6 turns, within the rounding of the fixed point */
	assert_true(last >= inject_amount(19.07) && last <= inject_amount(19.08));
	/* and shrinks without losing its fraction: 30 turns at 12.5% of 10% go by half the
	 * time missing, 0.025 x 65 / 2 / 0.33 */
	tpo_min = 0;
	const double over[2] = {65, 65 * 1.125};
	assert_int_equal(inject_amount(inject_rescale_turns(10, 30, over, 1.25, &tpo_min, 0.33)),
			 inject_amount(30 - 0.025 * 65 / 2 / 0.33));
}

/* Windows that each read the slowdown at the most the work could add (both sides' share on the
 * path, plus the target: noise the rescale must take as a measurement), one after another,
 * shrink the amount step by step, but not under a quarter of the target's share of the request
 * (1000 ns requests, 10% wanted, 1 ns a turn: 25 turns, where rr took about 100). The old
 * rescale went 100, 25, 6.25, 1.6, 1: a guard trial's rr ended at 3.5 ns on 1150 ns requests,
 * achieved -11%, and its 10% was not flagged. */
static void test_noise_cannot_shrink_the_amount_to_nothing(void **state)
{
	(void)state;
	double tpo_min = 0, turns = 100;
	for (int i = 0; i < 4; i++) {
		const double noisy[2] = {1000, 1000 * (1.1 + 2 * turns / 1000) - 0.01};
		turns = inject_rescale_turns(10, turns, noisy, 4, &tpo_min, 1);
	}
	assert_true(turns > 25 - 1e-9 && turns < 25 + 1e-9);
}

/* The rescale's bounds: within a fifth of the target or implausible (more than both sides'
 * work could add), unchanged; at least one turn; at most (1 + P) of the fastest request
 * measured without. */
static void test_rescale_bounds(void **state)
{
	(void)state;
	double tpo_min = 0;
	const double ok[2] = {100, 109}, stall[2] = {100, 300}, none[2] = {100, 100};
	assert_true(inject_rescale_turns(10, 20.5, ok, 4, &tpo_min, 0.5) == 20.5);
	assert_true(tpo_min == 100);
	assert_true(inject_rescale_turns(10, 20.5, stall, 4, &tpo_min, 0.5) == 20.5);
	/* nothing achieved: doubled, up to the cap 1.1 x 100 ns / 0.5 ns + 1 = 221 turns */
	assert_true(inject_rescale_turns(10, 20.5, none, 4, &tpo_min, 0.5) == 41);
	double capped = inject_rescale_turns(10, 150, none, 4, &tpo_min, 0.5);
	assert_true(capped > 221 - 1e-9 && capped < 221 + 1e-9);
	/* 50% from 0.1 ns a side on 50 ns requests: a stall, unchanged but for the floor, a
	 * quarter of 10% of the fastest request (2.5 turns of 0.5 ns; at least one turn); a faster
	 * request lowers the cap */
	const double slow[2] = {50, 50 * 1.5};
	assert_true(inject_rescale_turns(10, 0.2, slow, 4, &tpo_min, 0.5) == 2.5);
	assert_true(tpo_min == 50);
	tpo_min = 0;
	assert_true(inject_rescale_turns(10, 0.2, slow, 4, &tpo_min, 5) == 1);
}

/* A stream as measured: the work a side gets is absorbed until it fills that side's wait (a
 * knee at 22 ns of 48), then adds 1.3 ns per ns; below the knee the sides' race runs 2% faster. */
static void knee_tpo(double turns, double ns_per_turn, double tpo[2])
{
	double a = turns * ns_per_turn;
	tpo[0] = 48;
	tpo[1] = 48 * (1 + (a < 22 ? -0.02 : (a - 22) * 1.3 / 48));
}

/* Measured repeats (a step of 1.25) from either side of a stream's knee settle within a fifth
 * of the target and stay there. Scaling by wanted/achieved went from 13% to below the knee
 * (-2%) and back in every repeat, as a stream measured. */
static void test_a_stream_knee_is_approached_not_leapt(void **state)
{
	(void)state;
	const double start[] = {26.8 / 0.3, 15 / 0.3}; /* 13%; below the knee */
	for (unsigned k = 0; k < 2; k++) {
		double tpo_min = 0, turns = start[k], tpo[2];
		for (int i = 0; i < 12; i++) {
			knee_tpo(turns, 0.3, tpo);
			double got = (tpo[1] / tpo[0] - 1) * 100;
			if (i >= 5)
				assert_true(got >= 8 && got <= 12);
			turns = inject_rescale_turns(10, turns, tpo, 1.25, &tpo_min, 0.3);
		}
	}
}

/*
 * The interleaved slices' order: pairs of one slice each side, the first 0 then 1, and a
 * disturbance that recurs every p slices (p 2 to 16, at each phase) lands on each side in 30-70%
 * of its occurrences over 4096 slices, for several seeds. The fixed order A B B A A B B A ...
 * put one of period 4 (or 8, 12, 16) on one side every time: a stream's slices of ~1 ms against
 * the kernel's 4 ms tick.
 */
static void test_slice_order_is_paired_and_not_periodic(void **state)
{
	(void)state;
	const uint64_t seeds[] = {1, 2, 0x5eed, 1796535653000000000ull};
	unsigned differ = 0;
	for (unsigned si = 0; si < sizeof(seeds) / sizeof(seeds[0]); si++) {
		uint64_t seed = seeds[si];
		assert_int_equal(inject_slice_side(seed, 0), 0);
		assert_int_equal(inject_slice_side(seed, 1), 1);
		for (unsigned k = 0; k < 4096; k += 2) {
			unsigned a = inject_slice_side(seed, k), b = inject_slice_side(seed, k + 1);
			assert_true(a <= 1 && a + b == 1);
			differ += a != inject_slice_side(seeds[0], k);
		}
		for (unsigned p = 2; p <= 16; p++)
			for (unsigned phase = 0; phase < p; phase++) {
				unsigned hits = 0, on1 = 0;
				for (unsigned k = phase; k < 4096; k += p, hits++)
					on1 += inject_slice_side(seed, k);
				if (on1 * 10 < hits * 3 || on1 * 10 > hits * 7)
					print_message("seed %u, period %u, phase %u: %u of %u "
						      "on side 1\n",
						      si, p, phase, on1, hits);
				assert_true(on1 * 10 >= hits * 3 && on1 * 10 <= hits * 7);
			}
	}
	assert_true(differ > 0); /* each seed its own order */
}

/* The report of one run: the worker's and the driver's mean injected ns of its first run. */
static void injected_sides(const char *json, double side[2])
{
	struct json doc;
	assert_int_equal(json_parse_file(json, &doc), 0);
	const struct json *run = &json_get(&doc, "runs")->items[0];
	side[0] = json_num_or(run, "inject_ns_worker", -1);
	side[1] = json_num_or(run, "inject_ns_driver", -1);
	json_free(&doc);
}

static void assert_both_sides_alike(const double side[2], const char *what)
{
	if (!(side[0] > 0 && side[1] > 0) || side[0] > side[1] * 1.01 || side[1] > side[0] * 1.01)
		fail_msg("%s: the handler was given %.3f ns a request, the driver %.3f", what, side[0],
			 side[1]);
}

/* Both sides of every request get the same work (the window's mean per request, counted where
 * it is done: within a turn over thousands of requests), on a stream and on rr, separately and
 * interleaved (the side with the injection only); with P 0 neither gets any. */
static void test_both_sides_get_it(void **state)
{
	(void)state;
	const char *wl[] = {"stream", "rr"};
	for (int w = 0; w < 2; w++)
		for (int il = 0; il < 2; il++)
			for (int pct = 0; pct <= 10; pct += 10) {
				char p[8];
				snprintf(p, sizeof(p), "%d", pct);
				const char *args[] = {"--preset", "guard", "--workloads", wl[w],
						      "--repeat", "3", "--duration-ms", "30",
						      "--warmup-ms", "10", "--no-floors",
						      "--inject-slowdown-pct", p, "--json",
						      bench_path("b.json"), il ? "--interleave" : NULL,
						      "64", "--json-base", bench_path("a.json"), NULL};
				assert_int_equal(bench_run(NULL, args), 0);
				double side[2];
				injected_sides(bench_path("b.json"), side);
				char what[64];
				snprintf(what, sizeof(what), "%s%s %d%%", wl[w],
					 il ? " interleaved" : "", pct);
				if (pct) {
					assert_both_sides_alike(side, what);
				} else if (side[0] != 0 || side[1] != 0) {
					fail_msg("%s: given %.3f and %.3f ns", what, side[0], side[1]);
				}
				if (il) { /* the slices without it */
					injected_sides(bench_path("a.json"), side);
					assert_true(side[0] == 0 && side[1] == 0);
				}
			}
}

/*
 * The measured window takes no page fault of its own: a fault stalls the thread that takes it,
 * a driver with its requests in flight. The driver files an entry per reap into a calibration
 * ring of each side (512 KB each, allocated per run); first written in the window, their pages
 * faulted there, 18-37 times in a 60 ms stream window and 74-92 in rr's, and the two rings not
 * alike: a self-check flagged nothing injected as a p99 regression in 1 of 10 trials twice, and
 * side B's stream p99 stood above side A's in 174 repeats against 101 below (docs/bench.md).
 * Here, interleaved with nothing injected: at most 4 faults in any repeat's window.
 */
static void test_window_takes_no_page_faults(void **state)
{
	(void)state;
	const char *args[] = {"--preset", "guard", "--repeat", "3", "--duration-ms", "60",
			      "--warmup-ms", "20", "--no-floors", "--inject-slowdown-pct", "0",
			      "--interleave", "64", "--json", bench_path("b.json"), "--json-base",
			      bench_path("a.json"), NULL};
	assert_int_equal(bench_run(NULL, args), 0);
	struct json doc;
	assert_int_equal(json_parse_file(bench_path("b.json"), &doc), 0);
	const struct json *runs = json_get(&doc, "runs");
	assert_non_null(runs);
	assert_int_equal(runs->n, 2); /* stream and rr */
	for (size_t i = 0; i < runs->n; i++) {
		const struct json *f = json_get(&runs->items[i], "window_faults");
		assert_non_null(f);
		assert_int_equal(f->n, 3);
		for (size_t k = 0; k < f->n; k++)
			if (f->items[k].num > 4)
				fail_msg("%s, repeat %zu: %.0f page faults in the window",
					 json_str_or(&runs->items[i], "workload", "?"), k,
					 f->items[k].num);
	}
	json_free(&doc);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_window_on_target_is_not_enough),
		cmocka_unit_test(test_two_consecutive_windows_on_target_settle_it),
		cmocka_unit_test(test_a_window_off_target_starts_the_count_again),
		cmocka_unit_test(test_enough_windows_for_a_spoiled_one),
		cmocka_unit_test(test_fraction_carried_between_requests),
		cmocka_unit_test(test_zero_injects_nothing),
		cmocka_unit_test(test_small_amount_grows_by_the_quarter),
		cmocka_unit_test(test_noise_cannot_shrink_the_amount_to_nothing),
		cmocka_unit_test(test_rescale_bounds),
		cmocka_unit_test(test_a_stream_knee_is_approached_not_leapt),
		cmocka_unit_test(test_slice_order_is_paired_and_not_periodic),
		cmocka_unit_test(test_both_sides_get_it),
		cmocka_unit_test(test_window_takes_no_page_faults),
	};
	return cmocka_run_group_tests(tests, NULL, bench_cleanup);
}
