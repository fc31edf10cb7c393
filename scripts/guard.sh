#!/usr/bin/env bash
# The regression guard (docs/bench.md, "compare: the regression guard").
#
#   scripts/guard.sh BASE_CMD NEW_CMD   interleaved rounds of the guard preset run by two
#                                       vqs-bench command prefixes (two builds, or one binary with
#                                       two LD_LIBRARY_PATHs); exit 1 on a regression
#   scripts/guard.sh --self-check       this build against itself with a calibrated 10% slowdown
#                                       (must be flagged, exit 1) and without (must not, exit 0)
#   scripts/guard.sh --seeds            the seed presets: each regression flagged (the 4.12 RX
#                                       path -> 4.13's; kthread -> task mode), each variant
#                                       against a second run of itself not (SEED_REPEAT, 10)
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
	# The seed presets' reports carry one variant's figures (goodput per stream count for
	# seed-2017, TCP_STREAM and TCP_RR for seed-2023), one sample per repeat: compare judges
	# those, by name. Base is the good variant, new the regressed one; each variant is also
	# compared with a second run of itself.
	rc=0
	d=$(mktemp -d /tmp/vqs-guard-seeds-XXXXXX)
	run() { # NAME ARGS...: a report in $d/NAME.json
		local n=$1
		shift
		"$B" "$@" --repeat "${SEED_REPEAT:-10}" --no-floors --json "$d/$n.json" >"$d/$n.txt"
	}
	run 412a --preset seed-2017 --variant 4.12
	run 413a --preset seed-2017 --variant 4.13
	run 412b --preset seed-2017 --variant 4.12
	run 413b --preset seed-2017 --variant 4.13
	run ktha --preset seed-2023 --worker kthread
	run taska --preset seed-2023 --worker task
	run kthb --preset seed-2023 --worker kthread
	run taskb --preset seed-2023 --worker task
	judge() { # BASE NEW WANT
		"$B" compare "$d/$1.json" "$d/$2.json" ${COMPARE_ARGS:-} >"$d/$1-$2.txt" && got=0 || got=$?
		grep -E "REGRESSION|FAIL|UNDECIDED" "$d/$1-$2.txt" || true
		echo "== $1 -> $2: exit $got (want $3)"
		[ "$got" = "$3" ] || rc=1
	}
	judge 412a 413a 1
	judge 412a 412b 0
	judge 413a 413b 0
	judge ktha taska 1
	judge ktha kthb 0
	judge taska taskb 0
	echo "reports in $d"
	;;
-h | --help | "")
	sed -n '2,18p' "$0"
	exit 2
	;;
*)
	[ $# = 2 ] || { sed -n '2,18p' "$0"; exit 2; }
	ab "$1" "$2" && rc=0 || rc=$?
	;;
esac
echo "guard: $(($(date +%s) - t0)) s, exit $rc"
exit $rc
