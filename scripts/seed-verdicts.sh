#!/bin/bash
# Run the seed-2017 and seed-2023 presets (non-quick) N times with this machine's costs and with
# --bare-metal costs, interleaved so that load from elsewhere hits both alike, and count each
# verdict line: how often it came out REPRODUCED (YES / no drop), and how often the preset said
# the effect is not expected with those costs or could not be judged under that run's load. Each
# run's load average goes to OUT_DIR/load.txt. WHICH `heavy` runs only seed-2017's 1- and 50-stream
# rows (the heavy-load gain needs a light row beside it; both are judged interleaved) and counts
# their verdicts; `2023` runs only seed-2023. The runs are not niced: the model's kthread-mode
# workers reset their nice to 0, as kthreadd's children do, and would outrank the niced vCPU
# threads they serve.
#   scripts/seed-verdicts.sh [N] [BUILD_DIR] [OUT_DIR] [all|heavy|2023]
set -eu
n=${1:-10}
bench=${2:-build/dev}/bench/vqs-bench
out=${3:-$(mktemp -d)}
which=${4:-all}
presets="seed-2017 seed-2023" rows=
case $which in
all) ;;
heavy) presets=seed-2017 rows="--streams 1,50" ;;
2023) presets=seed-2023 ;;
*) echo "usage: $0 [N] [BUILD_DIR] [OUT_DIR] [all|heavy|2023]" >&2; exit 2 ;;
esac
mkdir -p "$out"
for i in $(seq 1 "$n"); do
	for p in $presets; do
		for m in vm bare; do
			flag=; [ $m = bare ] && flag=--bare-metal
			[ $p = seed-2017 ] && flag="$flag $rows"
			echo "$p $m $i $(uptime)" >>"$out/load.txt"
			"$bench" --preset $p --no-floors $flag --json "$out/$p-$m-$i.json" \
				>"$out/$p-$m-$i.txt" 2>/dev/null || echo "run $p $m $i failed: $?" >&2
		done
	done
done
count() { # file glob, label, pattern of the verdict line, of its pass[, of not judged]
	local lines yes skip unjudged
	lines=$(cat $1 2>/dev/null | grep -E "$3" || true)
	yes=$(grep -cE "$4" <<<"$lines" || true)
	skip=$(grep -c 'not expected here' <<<"$lines" || true)
	unjudged=0
	[ -n "${5:-}" ] && unjudged=$(grep -cE "$5" <<<"$lines" || true)
	echo "  $yes/$n  $2$([ "$skip" -gt 0 ] && echo " (the preset said not expected: $skip)")$(
		[ "$unjudged" -gt 0 ] && echo " (not judged here: $unjudged)")"
}
for m in vm bare; do
	if [ "$which" != 2023 ]; then
		f="$out/seed-2017-$m-*.txt"
		echo "seed-2017, $m costs:"
		count "$f" "4.13 drops, fixed and vqsched keep" "drops what the fixed" ": REPRODUCED"
		count "$f" "light-load loss" "light-load loss" ": REPRODUCED" "path\): not judged"
		count "$f" "heavy-load gain" "heavy-load batching gain" ": REPRODUCED" "b1\): not judged"
		count "$f" "vqsched within 10% of the best kernel column" "adaptive loses nothing" ": YES" \
			": not judged"
	fi
	[ "$which" = heavy ] && continue
	f="$out/seed-2023-$m-*.txt"
	echo "seed-2023, $m costs:"
	count "$f" "task-mode worker carries the vCPU's mask" "inherits the vCPU's pin" ": REPRODUCED"
	count "$f" "TCP_STREAM task-mode drop" "TCP_STREAM task-mode drop" "drop: REPRODUCED" \
		"drop: not judged"
	count "$f" "TCP_RR task-mode drop" "TCP_RR task-mode drop" "drop: REPRODUCED" "drop: not judged"
	count "$f" "TCP_STREAM vqsched auto no drop" "TCP_STREAM task-mode drop" "kthread: no drop" \
		"auto: not judged"
	count "$f" "TCP_RR vqsched auto no drop" "TCP_RR task-mode drop" "kthread: no drop" \
		"auto: not judged"
done
echo "reports in $out; load averages in $out/load.txt"
