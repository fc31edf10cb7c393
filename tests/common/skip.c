/* SPDX-License-Identifier: MIT */
#include "skip.h"

bool vqs_test_skipped;
