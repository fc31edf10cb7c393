#!/usr/bin/env bash
# Side by side: vqs-switch versus dpdk-testpmd (io mode between two net_vhost ports), both
# forwarding 64-byte frames between the same virtio-user ports, the forwarder on CPU 1 and the
# traffic on CPU 0. Runs are interleaved; prints each run and the medians of: delivered Mpps,
# the forwarder's CPU use while forwarding, and in the 2 s after traffic stops (/proc/PID/stat),
# and the forwarder's CPU time per delivered frame (ns; on a shared machine the forwarder gets a
# varying share of its CPU, which moves Mpps far more than this).
#
#   MODE=txrx  one testpmd transmits (txonly) into port 0, another receives (rxonly) from port 1
#              (default). On a 2-CPU machine both traffic testpmds spin on CPU 0 and take turns
#              per scheduler slice, so this measures that, more than the forwarder.
#   MODE=loop  one testpmd (mac mode, --tx-first) owns both virtio-user ports on one CPU and
#              sends each frame it receives back out of the other port: frames circle through the
#              forwarder, and the receiving side is never descheduled behind a second spinner.
#              BURST=N (default 512) frames per port are sent first and keep circling: with
#              testpmd's default of 32 the 64 frames in flight made the run measure round-trip
#              latency rather than forwarding rate (the forwarder sat idle part of the time).
#
#   SWITCH_ARGS="--batch 64" adds options to vqs-switch's command line (its defaults otherwise).
#
#   RUNS=3 SECS=3 POLICY=adaptive VQS_BUILD_DIR=build/test-plain scripts/bench-vhost-user.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/interop/lib/common.sh
interop_init bench_vu
need_peer_packages dpdk dpdk-dev
RUNS=${RUNS:-3} SECS=${SECS:-3} POLICY=${POLICY:-adaptive} MODE=${MODE:-loop} BURST=${BURST:-512}
SWITCH_ARGS=${SWITCH_ARGS:-}
HZ=$(getconf CLK_TCK)
MAC0=02:00:00:00:00:01 MAC1=02:00:00:00:00:02

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# Start the traffic against sockets DIR/p0 and DIR/p1; sets TRAFFIC (pids to stop when done)
# and RXLOG (the log whose Rx-pps lines count delivered frames).
traffic() {
  local dir=$1
  if [ "$MODE" = loop ]; then
    testpmd "$dir/loop.log" '0@0,1@0' \
      --vdev "net_virtio_user0,path=$dir/p0,queues=1,mac=$MAC0" \
      --vdev "net_virtio_user1,path=$dir/p1,queues=1,mac=$MAC1" \
      -- --forward-mode=mac --eth-peer=0,$MAC1 --eth-peer=1,$MAC0 --tx-first --burst=$BURST \
      --stats-period=1 --total-num-mbufs=16384 -a
    TRAFFIC=$SPAWNED RXLOG=$dir/loop.log
    wait_for "grep -aqs Rx-pps $dir/loop.log" 30 || fail "traffic testpmd did not start"
    return
  fi
  testpmd "$dir/rx.log" '0@0,1@0' --vdev "net_virtio_user0,path=$dir/p1,queues=1,mac=$MAC1" \
    -- --forward-mode=rxonly --stats-period=1 --total-num-mbufs=16384 -a
  local rx=$SPAWNED
  wait_for "grep -aqs Rx-pps $dir/rx.log" 30 || fail "receiver did not start"
  testpmd "$dir/tx.log" '0@0,1@0' --vdev "net_virtio_user0,path=$dir/p0,queues=1,mac=$MAC0" \
    -- --forward-mode=txonly --eth-peer=0,$MAC1 --txpkts=64 --stats-period=1 \
    --total-num-mbufs=16384 -a
  TRAFFIC="$SPAWNED $rx" RXLOG=$dir/rx.log
  wait_for "grep -aqs Tx-pps $dir/tx.log" 30 || fail "sender did not start"
}

# Median Rx-pps (per port and stats period) of the lines printed between line numbers $2 and $3.
rx_pps_median() {
  awk -v from="$2" -v to="$3" 'NR > from && NR <= to && /Rx-pps/ { print $2 }' "$1" | median
}

median() { sort -n | awk '{a[NR] = $1} END {print NR ? a[int((NR + 1) / 2)] : 0}'; }

measure() { # measure DIR FWDPID: prints "mpps busy_cpu% idle_cpu% cpu_ns_per_frame"
  local dir=$1 fwd=$2 c0 c1 c1b c2 t0 t1 l0 l1 pid
  sleep 1 # past the ramp
  t0=$(date +%s.%N); c0=$(cpu_ticks "$fwd"); l0=$(wc -l <"$RXLOG")
  sleep "$SECS"
  c1=$(cpu_ticks "$fwd"); t1=$(date +%s.%N); l1=$(wc -l <"$RXLOG")
  for pid in $TRAFFIC; do stop_pid "$pid" INT; done
  sleep 0.5
  c1b=$(cpu_ticks "$fwd")
  sleep 2
  c2=$(cpu_ticks "$fwd")
  local pps ports=1
  [ "$MODE" = loop ] && ports=2 # both ports receive; the median is per port
  pps=$(rx_pps_median "$RXLOG" "$l0" "$l1")
  awk -v r="$pps" -v p=$ports -v b=$((c1 - c0)) -v i=$((c2 - c1b)) -v hz="$HZ" -v t0="$t0" -v t1="$t1" \
    'BEGIN { pps = r * p; cpu = b / hz / (t1 - t0)
             printf "%.3f %.0f %.1f %.0f\n", pps / 1e6, 100 * cpu, 100 * i / hz / 2, pps ? 1e9 * cpu / pps : 0 }'
}

run_switch() {
  local dir=$WORK/sw$1; mkdir -p "$dir"
  spawn "$dir/switch.log" taskset -c 1 "$SWITCH" --socket "$dir/p0" --socket "$dir/p1" \
    --policy "$POLICY" --workers 1 $SWITCH_ARGS
  local sw=$SPAWNED
  wait_for "[ -S $dir/p0 ] && [ -S $dir/p1 ]" 10 || fail "switch sockets missing"
  traffic "$dir"
  measure "$dir" "$sw"
  stop_pid "$sw" INT
}

run_testpmd() {
  local dir=$WORK/tp$1; mkdir -p "$dir"
  testpmd "$dir/fwd.log" '0@1,1@1' --vdev "net_vhost0,iface=$dir/p0,queues=1" \
    --vdev "net_vhost1,iface=$dir/p1,queues=1" -- --forward-mode=io --stats-period=1 \
    --total-num-mbufs=16384 -a
  local fwd=$SPAWNED
  wait_for "[ -S $dir/p0 ] && [ -S $dir/p1 ] && grep -aqs Rx-pps $dir/fwd.log" 30 ||
    fail "net_vhost testpmd did not start"
  traffic "$dir"
  measure "$dir" "$fwd"
  stop_pid "$fwd" INT
}

echo "bench-vhost-user: mode=$MODE burst=$BURST policy=$POLICY switch_args='$SWITCH_ARGS' runs=$RUNS secs=$SECS (Mpps busy% idle% ns/frame)"
: >"$WORK/sw.txt"; : >"$WORK/tp.txt"
for r in $(seq "$RUNS"); do
  # Not in $(...): the processes a run starts must be known to this shell's exit trap.
  run_switch "$r" >"$WORK/run"; echo "run $r vqs-switch: $(cat "$WORK/run")"; cat "$WORK/run" >>"$WORK/sw.txt"
  run_testpmd "$r" >"$WORK/run"; echo "run $r testpmd:    $(cat "$WORK/run")"; cat "$WORK/run" >>"$WORK/tp.txt"
done
for n in sw tp; do
  f=$WORK/$n.txt
  echo "median $n: Mpps=$(awk '{print $1}' "$f" | median) busy_cpu%=$(awk '{print $2}' "$f" | median) idle_cpu%=$(awk '{print $3}' "$f" | median) cpu_ns/frame=$(awk '{print $4}' "$f" | median)"
done
