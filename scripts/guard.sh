#!/usr/bin/env bash
# The regression guard (docs/bench.md, "compare: the regression guard").
#
#   scripts/guard.sh BASE_CMD NEW_CMD   interleaved rounds of the guard preset run by two
#                                       vqs-bench command prefixes (two builds, or one binary with
#                                       two LD_LIBRARY_PATHs); exit 1 on a regression
#   scripts/guard.sh --self-check       in one process, slices with a calibrated 10% slowdown
#                                       against slices without (must be flagged), and slices
#                                       without against slices without (must not); TRIALS (1)
#   scripts/guard.sh --seeds            the seed presets, RUNS (2) runs each: 4.12 -> 4.13 and
#                                       kthread -> task within each run flagged, each variant
#                                       against itself (half of its repeats against the other
#                                       half, compare --halves) not (SEED2017_ARGS,
#                                       SEED2023_ARGS: cells and repeats, see below)
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
	d=$(mktemp -d /tmp/vqs-guard-self-XXXXXX)
	IL="--preset guard --repeat 15 --duration-ms 60 --warmup-ms 20 --no-floors --interleave 64"
	for t in $(seq 1 "${TRIALS:-1}"); do
		for p in 10 0; do
			want=$([ $p = 10 ] && echo 1 || echo 0)
			"$B" $IL ${GUARD_ARGS:-} --inject-slowdown-pct $p --json "$d/new-$p-$t.json" \
				--json-base "$d/base-$p-$t.json" >"$d/run-$p-$t.txt" 2>&1
			"$B" compare "$d/base-$p-$t.json" "$d/new-$p-$t.json" ${COMPARE_ARGS:-} \
				>"$d/cmp-$p-$t.txt" && got=0 || got=$?
			grep -hE "achieved|REGRESSION|FAIL|UNDECIDED" "$d/run-$p-$t.txt" \
				"$d/cmp-$p-$t.txt" || true
			echo "== trial $t, ${p}% injected: exit $got (want $want)"
			[ "$got" = "$want" ] || rc=1
		done
	done
	echo "reports in $d"
	;;
--seeds)
	# Each seed run runs every column in each repeat; its report carries the regressed
	# variant's figures (goodput per stream count for seed-2017, TCP_STREAM and TCP_RR for
	# seed-2023) and --json-base the good one's, one sample per repeat: compare pairs them by
	# repeat (one process wrote both). Within each run: the regression, and each variant
	# against itself, half of its repeats against the other half (ABBA, paired as
	# neighbours). Not one run against another: two processes meet different loads, and the
	# repeats of two runs pair nothing.
	rc=0
	d=$(mktemp -d /tmp/vqs-guard-seeds-XXXXXX)
	# 32 repeats (ksim's most): 10 pairs cannot tell a 30% change from a model that other
	# programs leave half a CPU. Cells as short as the effect allows: 2017's light-load loss
	# is a leaked packet's retransmission, which a cell under 250 ms turns into a stall; only
	# its 1-stream row, the one the guard judges. 2023's task and kthread modes share one
	# world per repeat, the worker's mask switched every 8 packets or transactions: both
	# sides of a pair meet the same load.
	args2017=${SEED2017_ARGS---quick --duration-ms 250 --repeat 32 --streams 1}
	args2023=${SEED2023_ARGS---quick --duration-ms 100 --repeat 32 --interleave 8}
	run() { # NAME ARGS...: $d/NAME-new.json (regressed variant), $d/NAME-base.json (good one)
		local n=$1
		shift
		"$B" "$@" --no-floors --json "$d/$n-new.json" \
			--json-base "$d/$n-base.json" >"$d/$n.txt" 2>/dev/null
	}
	judge() { # BASE NEW WANT [COMPARE FLAGS]
		local out="$d/$1-$2${4:+-halves}.txt"
		"$B" compare "$d/$1.json" "$d/$2.json" ${4:-} ${COMPARE_ARGS:-} >"$out" && got=0 ||
			got=$?
		grep -E "REGRESSION|FAIL|UNDECIDED" "$out" || true
		echo "== $1 -> $2 ${4:-}: exit $got (want $3)"
		[ "$got" = "$3" ] || rc=1
	}
	for p in 2017 2023; do
		a=args$p
		for i in $(seq 1 "${RUNS:-2}"); do
			run s$p-$i --preset seed-$p ${!a}
			judge s$p-$i-base s$p-$i-new 1
			judge s$p-$i-base s$p-$i-base 0 --halves
			judge s$p-$i-new s$p-$i-new 0 --halves
		done
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
