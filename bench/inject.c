/* SPDX-License-Identifier: MIT */
#include "inject.h"

bool inject_sizing_done(unsigned target_pct, double achieved_pct, unsigned *agreed)
{
	double err = achieved_pct - target_pct;
	*agreed = (err < 0 ? -err : err) <= target_pct / 5.0 ? *agreed + 1 : 0;
	return *agreed >= 2;
}
