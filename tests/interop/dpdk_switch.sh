#!/usr/bin/env bash
# DPDK virtio-user through vqs-switch: one testpmd transmits (txonly) on port 0, another receives
# (rxonly) on port 1: split rings, packed rings (packed_vq=1), and split rings with the switch
# connecting to listening testpmds (--client, server=1) under the pool policy. Passes when frames
# arrive and the counts reconcile: the switch took every frame testpmd sent except at most one
# ring (256) still queued when the sender closed (a backpressured sender's ring is full, and
# testpmd closes without waiting for it to drain); every frame the switch took was delivered or
# counted as dropped, and drops stay under 1% (the receiver polls without pause: the sender waits
# for room rather than lose frames); the receiver saw exactly what was delivered, byte for byte
# in count (64 per frame).
# testpmd does not show what it received, so the bytes themselves are checked by a last case:
# tests/interop/vu_peer.c (the library's frontend) on port 0 sends numbered frames with a
# payload derived from their number, a testpmd in macswap mode on port 1 returns them, and
# vu_peer checks that every one comes back, in order, with every byte as sent.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
interop_init dpdk_switch
need_peer_packages dpdk dpdk-dev
command -v dpdk-testpmd >/dev/null || interop_skip "dpdk-testpmd not installed"

run_case() { # run_case NAME VDEV-EXTRA SWITCH-EXTRA: --client in SWITCH-EXTRA makes testpmd listen
  local name=$1 vdev=$2 swopt=$3 dir=$WORK/$1 sw
  mkdir -p "$dir"
  start_switch() {
    spawn "$dir/switch.log" "$SWITCH" --socket "$dir/p0" --socket "$dir/p1" $swopt
    sw=$SPAWNED
  }
  case $swopt in
    *--client*) vdev="$vdev,server=1" ;;
    *) start_switch
       wait_for "[ -S $dir/p0 ] && [ -S $dir/p1 ]" 10 || fail "$name: switch sockets missing" ;;
  esac
  testpmd "$dir/rx.log" '0@0,1@1' \
    --vdev "net_virtio_user0,path=$dir/p1,queues=1,mac=02:00:00:00:00:02$vdev" \
    -- --forward-mode=rxonly --stats-period=1 --total-num-mbufs=8192 -a
  local rx=$SPAWNED
  case $swopt in
    *--client*) wait_for "[ -S $dir/p1 ]" 30 || fail "$name: receiving testpmd did not listen"
                start_switch ;;
  esac
  wait_for "grep -aqs 'Rx-pps' $dir/rx.log" 30 || fail "$name: receiving testpmd did not start"
  testpmd "$dir/tx.log" '0@0,1@1' \
    --vdev "net_virtio_user0,path=$dir/p0,queues=1,mac=02:00:00:00:00:01$vdev" \
    -- --forward-mode=txonly --eth-peer=0,02:00:00:00:00:02 --txpkts=64 --stats-period=1 \
    --total-num-mbufs=8192 -a
  local tx=$SPAWNED
  wait_for "grep -aqs 'Tx-pps' $dir/tx.log" 30 || fail "$name: sending testpmd did not start"
  sleep 4
  stop_pid "$tx" INT || fail "$name: sending testpmd hung"
  sleep 1 # the switch drains what is staged into the receiver
  kill -USR1 "$sw"
  wait_for "grep -aqs 'port=1 ' $dir/switch.log" 5 || fail "$name: no counters from the switch"
  stop_pid "$rx" INT || fail "$name: receiving testpmd hung"
  stop_pid "$sw" INT || fail "$name: switch did not stop on SIGINT"
  local log=$dir/switch.log
  local sent rcvd in0 out1 drops1 packed
  sent=$(testpmd_total "$dir/tx.log" TX)
  rcvd=$(testpmd_total "$dir/rx.log" RX)
  in0=$(switch_counter "$log" 0 rx_frames)
  out1=$(switch_counter "$log" 1 tx_frames)
  drops1=0
  local k why=""
  for k in link_down no_buffers rx_small; do
    drops1=$((drops1 + $(switch_counter "$log" 1 drop_$k)))
    why="$why $k=$(switch_counter "$log" 1 drop_$k)"
  done
  packed=$(grep -a 'port 0 features' "$log" | grep -oE 'packed=[01]' | tail -1)
  echo "$name: testpmd sent $sent, switch took $in0, delivered $out1 (+$drops1 dropped:$why), testpmd received $rcvd, $packed"
  grep -a 'final port=' "$log"
  [ -n "$sent" ] && [ -n "$rcvd" ] && [ -n "$in0" ] && [ -n "$out1" ] || fail "$name: missing counters"
  [ "$sent" -gt 1000 ] || fail "$name: too few frames sent ($sent)"
  [ "$in0" -le "$sent" ] && [ $((sent - in0)) -le 256 ] ||
    fail "$name: switch took $in0 frames of $sent sent"
  [ $((out1 + drops1)) -eq "$in0" ] || fail "$name: $in0 taken but $out1 delivered + $drops1 dropped"
  [ $((drops1 * 100)) -le "$in0" ] || fail "$name: $drops1 of $in0 frames dropped"
  [ "$rcvd" -eq "$out1" ] || fail "$name: switch delivered $out1, testpmd received $rcvd"
  # testpmd prints bytes only in its periodic port statistics ("RX-packets: N RX-missed: M
  # RX-bytes: B", the last one up to a second before the end), not in its final totals: the
  # frames it had counted by then must have come with 64 bytes each.
  local bytes1 line rpk rbytes
  bytes1=$(switch_counter "$log" 1 tx_bytes)
  line=$(grep -a -E "RX-packets: *[0-9]+ .*RX-bytes: *[0-9]+" "$dir/rx.log" | tail -1)
  rpk=$(grep -oE "RX-packets: *[0-9]+" <<<"$line" | grep -oE '[0-9]+$')
  rbytes=$(grep -oE "RX-bytes: *[0-9]+" <<<"$line" | grep -oE '[0-9]+$')
  [ "$bytes1" -eq $((out1 * 64)) ] ||
    fail "$name: $out1 frames of 64 bytes delivered as $bytes1 bytes"
  [ -n "$rpk" ] && [ "$rpk" -gt 0 ] && [ "$rbytes" -eq $((rpk * 64)) ] ||
    fail "$name: testpmd's last statistics: ${rpk:-no} frames received as ${rbytes:-no} bytes"
  [ "$rcvd" -gt 0 ] || fail "$name: nothing arrived"
  case $vdev in *packed_vq=1*) [ "$packed" = packed=1 ] || fail "$name: packed ring not negotiated" ;; esac
  # The scheduler's counters, printed with the ports' on SIGUSR1 as one JSON line, account for
  # what the ports' counters of the same printout say was delivered: the sender had disconnected
  # by then (its queues left the scheduler, and their counters with them), the receiver's queues
  # are still attached, and every frame delivered took at least one completed receive request.
  local snap reqs gave
  snap=$(grep -a 'vqs-switch: sched {' "$log" | tail -1)
  [ -n "$snap" ] || fail "$name: no scheduler counters on SIGUSR1"
  reqs=$(echo "$snap" | grep -oE '"reqs":[0-9]+' | awk -F: '{ n += $2 } END { print n + 0 }')
  gave=$(grep -a 'vqs-switch: port=1 ' "$log" | tail -1 | tr ' ' '\n' | sed -n 's/^tx_frames=//p')
  echo "$name: scheduler completed $reqs requests on attached queues, $gave frames delivered"
  [ -n "$gave" ] && [ "$gave" -gt 0 ] && [ "$reqs" -ge "$gave" ] ||
    fail "$name: scheduler counters ($reqs requests) short of the frames delivered ($gave)"
}

payload_case() { # vu_peer on port 0, testpmd macswap on port 1
  local dir=$WORK/payload sw
  mkdir -p "$dir"
  build_vu_peer
  spawn "$dir/switch.log" "$SWITCH" --socket "$dir/p0" --socket "$dir/p1" --policy adaptive
  sw=$SPAWNED
  wait_for "[ -S $dir/p0 ] && [ -S $dir/p1 ]" 10 || fail "payload: switch sockets missing"
  testpmd "$dir/pmd.log" '0@0,1@1' --vdev "net_virtio_user0,path=$dir/p1,queues=1" \
    -- --forward-mode=macswap --stats-period=1 --total-num-mbufs=8192 -a
  local pmd=$SPAWNED
  wait_for "grep -aqs 'Rx-pps' $dir/pmd.log" 30 || fail "payload: macswap testpmd did not start"
  timeout 60 "$WORK/vu_peer" "$dir/p0" 20000 || fail "payload: frames did not all come back intact"
  kill -USR1 "$sw"
  wait_for "grep -aqs 'port=1 ' $dir/switch.log" 5 || fail "payload: no counters from the switch"
  grep -a 'vqs-switch: port=' "$dir/switch.log"
  stop_pid "$pmd" INT || fail "payload: testpmd hung"
  stop_pid "$sw" INT || fail "payload: switch did not stop on SIGINT"
}

run_case split ",packed_vq=0" "--policy adaptive"
run_case packed ",packed_vq=1" "--policy adaptive --packed"
run_case split-client-pool ",packed_vq=0" "--policy pool --workers 2 --client"
payload_case
echo "dpdk_switch: PASS in ${SECONDS}s"
