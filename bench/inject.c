/* SPDX-License-Identifier: MIT */
#include "inject.h"

bool inject_sizing_done(unsigned target_pct, double achieved_pct, unsigned *agreed)
{
	double err = achieved_pct - target_pct;
	*agreed = (err < 0 ? -err : err) <= target_pct / 5.0 ? *agreed + 1 : 0;
	return *agreed >= 2;
}

uint32_t inject_amount(double turns)
{
	double q = turns * INJECT_ONE + 0.5;
	if (!(q >= 1)) /* also NaN */
		return 0;
	/* room for the carry: inject_turns adds one below INJECT_ONE */
	return q >= (double)(UINT32_MAX - INJECT_ONE) ? UINT32_MAX - INJECT_ONE : (uint32_t)q;
}

double inject_rescale_turns(unsigned pct, double turns, const double tpo[2], double step,
			    double *tpo_min, double ns_per_turn)
{
	double want = pct / 100.0;
	if (tpo[0] > 0 && (!*tpo_min || tpo[0] < *tpo_min))
		*tpo_min = tpo[0];
	double got = tpo[0] > 0 && tpo[1] > 0 ? tpo[1] / tpo[0] - 1 : 0, err = got - want;
	double most = tpo[0] > 0 ? 2 * turns * ns_per_turn / tpo[0] + want : 0;
	if ((err < 0 ? -err : err) > want / 5 && got >= -want && got <= most) {
		double next = got > want / 10 ? turns - err * tpo[0] / 2 / ns_per_turn : 2 * turns;
		double hi = turns * step, lo = turns / step;
		turns = next > hi ? hi : next < lo ? lo : next;
	}
	double cap = (1 + want) * (*tpo_min > 0 ? *tpo_min : 1000) / ns_per_turn + 1;
	double floor = want * *tpo_min / ns_per_turn / 4;
	if (floor < 1)
		floor = 1;
	return turns > cap ? cap : turns < floor ? floor : turns;
}

unsigned inject_slice_side(uint64_t seed, unsigned k)
{
	uint64_t pair = k / 2u;
	if (!pair)
		return k & 1u;
	/* splitmix64's finalizer: every bit of (seed, pair) moves the top one */
	uint64_t z = seed + pair * 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (k & 1u) ^ (unsigned)(z >> 63);
}
