#!/usr/bin/env bash
# Side by side: vqs-switch versus dpdk-testpmd (io mode between two net_vhost ports) forwarding
# 64-byte frames from a virtio-user txonly testpmd to a virtio-user rxonly testpmd. The forwarder
# runs on CPU 1, the traffic testpmds on CPU 0. Runs are interleaved; prints each run and the
# medians: delivered Mpps (receiver's RX-packets / seconds) and the forwarder's CPU use while
# forwarding and in the 2 s after traffic stops (from /proc/PID/stat).
#   RUNS=3 SECS=3 POLICY=adaptive VQS_BUILD_DIR=build/test-plain scripts/bench-vhost-user.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/interop/lib/common.sh
interop_init bench_vu
need_peer_packages dpdk dpdk-dev
RUNS=${RUNS:-3} SECS=${SECS:-3} POLICY=${POLICY:-adaptive}
HZ=$(getconf CLK_TCK)

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

traffic() { # traffic DIR: receiver on p1, then sender on p0 (both CPU 0)
  local dir=$1
  testpmd "$dir/rx.log" '0@0,1@0' --vdev "net_virtio_user0,path=$dir/p1,queues=1,mac=02:00:00:00:00:02" \
    -- --forward-mode=rxonly --stats-period=1 --total-num-mbufs=16384 -a
  RXPID=$SPAWNED
  wait_for "grep -aqs Rx-pps $dir/rx.log" 30 || fail "receiver did not start"
  testpmd "$dir/tx.log" '0@0,1@0' --vdev "net_virtio_user0,path=$dir/p0,queues=1,mac=02:00:00:00:00:01" \
    -- --forward-mode=txonly --eth-peer=0,02:00:00:00:00:02 --txpkts=64 --stats-period=1 \
    --total-num-mbufs=16384 -a
  TXPID=$SPAWNED
  wait_for "grep -aqs Tx-pps $dir/tx.log" 30 || fail "sender did not start"
}

measure() { # measure DIR FWDPID: prints "mpps busy_cpu% idle_cpu%"
  local dir=$1 fwd=$2 c0 c1 c2 t0 t1
  t0=$(date +%s.%N); c0=$(cpu_ticks "$fwd")
  sleep "$SECS"
  c1=$(cpu_ticks "$fwd"); t1=$(date +%s.%N)
  stop_pid "$TXPID" INT
  sleep 0.5
  c1b=$(cpu_ticks "$fwd")
  sleep 2
  c2=$(cpu_ticks "$fwd")
  stop_pid "$RXPID" INT
  local rcvd
  rcvd=$(grep -a 'Rx-pps' "$dir/rx.log" | awk '{print $2}' | sort -n | tail -"$SECS" | head -1)
  awk -v r="$rcvd" -v b=$((c1 - c0)) -v i=$((c2 - c1b)) -v hz="$HZ" -v dt="$(echo "$t1 - $t0" | bc)" \
    'BEGIN { printf "%.2f %.0f %.1f\n", r / 1e6, 100 * b / hz / dt, 100 * i / hz / 2 }'
}

run_switch() {
  local dir=$WORK/sw$1; mkdir -p "$dir"
  spawn "$dir/switch.log" taskset -c 1 "$SWITCH" --socket "$dir/p0" --socket "$dir/p1" \
    --policy "$POLICY" --workers 1
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
  wait_for "[ -S $dir/p0 ] && [ -S $dir/p1 ] && grep -aqs 'Port statistics\|Rx-pps' $dir/fwd.log" 30 ||
    fail "net_vhost testpmd did not start"
  traffic "$dir"
  measure "$dir" "$fwd"
  stop_pid "$fwd" INT
}

median() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }

: >"$WORK/sw.txt"; : >"$WORK/tp.txt"
for r in $(seq "$RUNS"); do
  s=$(run_switch "$r"); echo "run $r vqs-switch($POLICY): Mpps busy% idle% = $s"; echo "$s" >>"$WORK/sw.txt"
  t=$(run_testpmd "$r"); echo "run $r testpmd io:        Mpps busy% idle% = $t"; echo "$t" >>"$WORK/tp.txt"
done
for n in sw tp; do
  f=$WORK/$n.txt
  echo "median $n: Mpps=$(awk '{print $1}' "$f" | median) busy_cpu%=$(awk '{print $2}' "$f" | median) idle_cpu%=$(awk '{print $3}' "$f" | median)"
done
