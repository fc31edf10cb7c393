#!/usr/bin/env bash
# The regression guard (docs/bench.md, "compare: the regression guard").
#
#   scripts/guard.sh BASE_CMD NEW_CMD   interleaved rounds of the guard preset run by two
#                                       vqs-bench command prefixes (two builds, or one binary with
#                                       two LD_LIBRARY_PATHs); exit 1 on a regression
#   scripts/guard.sh --self-check       this build against itself with a calibrated 10% slowdown
#                                       (must be flagged, exit 1) and without (must not, exit 0)
#   scripts/guard.sh --seeds            the seed presets: each regression flagged (fixed b1 ->
#                                       4.13 b64 at 1 stream; kthread -> task mode), each variant
#                                       against itself in a second run not
#
# Environment: VQS_BENCH (default build/bench/bench/vqs-bench, built like scripts/bench.sh when
# missing), ROUNDS (default 10), GUARD_ARGS (flags for every guard run), COMPARE_ARGS (for compare).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${VQS_BENCH:-build/bench/bench/vqs-bench}
if [ ! -x "$B" ]; then
	cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build build/bench -j"$(nproc)" --target vqs-bench >/dev/null
fi
ROUNDS=${ROUNDS:-10}
GUARD="--preset guard --repeat 5 --duration-ms 60 --warmup-ms 20 --no-floors ${GUARD_ARGS:-}"
t0=$(date +%s)

ab() { # BASE_CMD NEW_CMD
	"$B" ab --a "$1 $GUARD" --b "$2 $GUARD" --rounds "$ROUNDS" ${COMPARE_ARGS:-}
}

case "${1:-}" in
--self-check)
	rc=0
	echo "== this build against itself with a calibrated 10% slowdown: must be flagged"
	ab "$B" "$B --inject-slowdown-pct 10" && { echo "guard: NOT flagged"; rc=1; }
	echo "== this build against itself: must not be flagged"
	ab "$B" "$B" || { echo "guard: flagged"; rc=1; }
	;;
--seeds)
	rc=0
	d=$(mktemp -d /tmp/vqs-guard-seeds-XXXXXX)
	for p in seed-2017 seed-2023; do
		"$B" --preset "$p" --no-floors --json "$d/$p-1.json" >"$d/$p-1.txt"
		"$B" --preset "$p" --no-floors --json "$d/$p-2.json" >"$d/$p-2.txt"
	done
	flag() { # FILE1 FILE2 BASE_GLOB NEW_GLOB WANT
		"$B" compare "$1" "$2" --pair "$3=$4" --metrics ops_per_s ${COMPARE_ARGS:-} && got=0 ||
			got=$?
		echo "== $3 -> $4: exit $got (want $5)"
		[ "$got" = "$5" ] || rc=1
	}
	s17=seed-2017/fixed-b1/stream/*/s1/* n17=seed-2017/4.13-b64/stream/*/s1/*
	flag "$d/seed-2017-1.json" "$d/seed-2017-1.json" "$s17" "$n17" 1
	flag "$d/seed-2017-1.json" "$d/seed-2017-2.json" "$s17" "$s17" 0
	flag "$d/seed-2017-1.json" "$d/seed-2017-2.json" "$n17" "$n17" 0
	for w in stream rr; do
		k=seed-2023/kthread/$w/* t=seed-2023/task/$w/*
		flag "$d/seed-2023-1.json" "$d/seed-2023-1.json" "$k" "$t" 1
		flag "$d/seed-2023-1.json" "$d/seed-2023-2.json" "$k" "$k" 0
		flag "$d/seed-2023-1.json" "$d/seed-2023-2.json" "$t" "$t" 0
	done
	echo "reports in $d"
	;;
-h | --help | "")
	sed -n '2,17p' "$0"
	exit 2
	;;
*)
	[ $# = 2 ] || { sed -n '2,17p' "$0"; exit 2; }
	ab "$1" "$2" && rc=0 || rc=$?
	;;
esac
echo "guard: $(($(date +%s) - t0)) s, exit $rc"
exit $rc
