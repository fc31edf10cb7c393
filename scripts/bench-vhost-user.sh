#!/usr/bin/env bash
# Side by side: vqs-switch versus dpdk-testpmd (io mode between two net_vhost ports), both
# forwarding 64-byte frames between the same virtio-user ports, the forwarder on CPU 1 and the
# traffic on CPU 0. Runs are interleaved; prints each run and the medians of: delivered Mpps
# (frames the traffic side received over the window, from its port counters), the forwarder's
# CPU use while forwarding, and in the 2 s after traffic stops (/proc/PID/stat; the traffic
# testpmds stop forwarding but stay connected, so this is the cost of idle, connected queues),
# and the forwarder's CPU time per delivered frame (ns; on a shared machine the forwarder gets a
# varying share of its CPU, which moves Mpps far more than this), and the share of the window the
# hypervisor gave CPU 1 (forwarder) and CPU 0 (traffic) to others (steal, /proc/stat); then the
# median of the per-run ratios.
#
#   MODE=loop  one testpmd (mac mode, tx_first) owns both virtio-user ports on one CPU and
#              sends each frame it receives back out of the other port: frames circle through the
#              forwarder, and the receiving side is never descheduled behind a second spinner
#              (default). BURST=N (default 512) frames per port are sent first and keep circling:
#              with testpmd's default of 32 the 64 frames in flight made the run measure
#              round-trip latency rather than forwarding rate (the forwarder sat idle part of the
#              time). The loop is closed: its rate is the frames circling over their round trip,
#              so with few of them it measures the forwarder's latency. QSIZE=N (default 256)
#              sizes the virtio-user rings and BURSTS=K (default 1) sends K bursts first: with
#              QSIZE=1024 BURSTS=2, 1024 frames per port circle and both forwarders are kept busy
#              (heavy load); with the defaults, 256 per port fit the rings (the rest of the first
#              burst is dropped once, at the start).
#   MODE=txrx  one testpmd transmits (txonly) into port 0, another receives (rxonly) from port 1.
#              On a 2-CPU machine both traffic testpmds spin on CPU 0 and take turns per
#              scheduler slice, so this measures that, more than the forwarder.
#
#   SWITCH_ARGS="--batch 64" adds options to vqs-switch's command line (its defaults otherwise).
#
#   CALLGRIND=DIR runs vqs-switch under valgrind's callgrind instead, and no testpmd forwarder:
#              its counts are zeroed when the window starts and dumped into DIR when it ends, and
#              each run prints the instructions per delivered frame (callgrind_annotate
#              DIR/switch-runN.* gives them per function). valgrind 3.19 does not know
#              epoll_pwait2, which the adaptive worker sleeps in: use POLICY=poll
#              SWITCH_ARGS="--poll-us 0". Under valgrind the switch is normally the bottleneck
#              and finds its rings rarely empty: the count is then the forwarding path's. Each
#              run also prints the worker's empty polls per frame over the window (the switch's
#              counters, SIGUSR1 at both ends): when the traffic side is starved (a loaded CPU 0)
#              they are not rare, and the count includes them.
#
#   RUNS=3 SECS=3 POLICY=adaptive VQS_BUILD_DIR=build/test-plain scripts/bench-vhost-user.sh
set -uo pipefail
cd "$(dirname "$0")/.."
. tests/interop/lib/common.sh
interop_init bench_vu
need_peer_packages dpdk dpdk-dev
RUNS=${RUNS:-3} SECS=${SECS:-3} POLICY=${POLICY:-adaptive} MODE=${MODE:-loop} BURST=${BURST:-512}
QSIZE=${QSIZE:-256} BURSTS=${BURSTS:-1}
SWITCH_ARGS=${SWITCH_ARGS:-}
CALLGRIND=${CALLGRIND:-} CG_PID=
[ -z "$CALLGRIND" ] || mkdir -p "$CALLGRIND" || fail "cannot create $CALLGRIND"
HZ=$(getconf CLK_TCK)
MAC0=02:00:00:00:00:01 MAC1=02:00:00:00:00:02

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# Ticks the hypervisor ran something else while CPU N wanted to run (steal, /proc/stat).
steal_ticks() { awk -v c="cpu$1" '$1 == c {print $9}' /proc/stat; }

# Start the traffic against sockets DIR/p0 and DIR/p1. The traffic testpmds are interactive
# (testpmd_ctl), so that traffic can stop while their ports stay connected: the forwarder's CPU
# "when traffic stops" is then that of connected, idle queues, not of a forwarder whose peers
# went away. Sets CTLS (their command fds), RXCTL and RXLOG (the one whose RX-packets count
# delivered frames), RXPORTS (its ports) and TRAFFIC (their pids).
traffic() {
  local dir=$1
  if [ "$MODE" = loop ]; then
    testpmd_ctl "$dir/loop.log" '0@0,1@0' \
      --vdev "net_virtio_user0,path=$dir/p0,queues=1,queue_size=$QSIZE,mac=$MAC0" \
      --vdev "net_virtio_user1,path=$dir/p1,queues=1,queue_size=$QSIZE,mac=$MAC1" \
      -- -i --forward-mode=mac --eth-peer=0,$MAC1 --eth-peer=1,$MAC0 --burst=$BURST \
      --rxd=$QSIZE --txd=$QSIZE --total-num-mbufs=16384
    CTLS=$CTL_FD RXCTL=$CTL_FD RXLOG=$dir/loop.log RXPORTS=2 TRAFFIC=$SPAWNED
    wait_for "grep -aqs 'testpmd>' $dir/loop.log" 30 || fail "traffic testpmd did not start"
    echo "start tx_first $BURSTS" >&"$RXCTL"
    return
  fi
  testpmd_ctl "$dir/rx.log" '0@0,1@0' --vdev "net_virtio_user0,path=$dir/p1,queues=1,mac=$MAC1" \
    -- -i --forward-mode=rxonly --total-num-mbufs=16384
  RXCTL=$CTL_FD RXLOG=$dir/rx.log RXPORTS=1 TRAFFIC=$SPAWNED
  wait_for "grep -aqs 'testpmd>' $dir/rx.log" 30 || fail "receiver did not start"
  echo start >&"$RXCTL"
  testpmd_ctl "$dir/tx.log" '0@0,1@0' --vdev "net_virtio_user0,path=$dir/p0,queues=1,mac=$MAC0" \
    -- -i --forward-mode=txonly --eth-peer=0,$MAC1 --txpkts=64 --total-num-mbufs=16384
  CTLS="$CTL_FD $RXCTL" TRAFFIC="$SPAWNED $TRAFFIC"
  wait_for "grep -aqs 'testpmd>' $dir/tx.log" 30 || fail "sender did not start"
  echo start >&"$CTL_FD"
}

# Frames received so far on the receiving testpmd's ports (asks it for its port stats).
rx_total() {
  local seen
  seen=$(grep -ac 'RX-packets' "$RXLOG")
  echo "show port stats all" >&"$RXCTL"
  wait_for "[ \$(grep -ac 'RX-packets' $RXLOG) -ge $((seen + RXPORTS)) ]" 10 ||
    fail "testpmd did not print its port stats"
  grep -a -oE 'RX-packets: *[0-9]+' "$RXLOG" | tail -n "$RXPORTS" | grep -oE '[0-9]+$' |
    awk '{ n += $1 } END { print n }'
}

median() { sort -n | awk '{a[NR] = $1} END {print NR ? a[int((NR + 1) / 2)] : 0}'; }

# The traffic testpmds were told to quit (measure); wait for them, or stop them.
stop_traffic() {
  local pid
  for pid in $TRAFFIC; do stop_pid "$pid" INT; done
}

measure() { # measure FWDPID: prints "mpps busy_cpu% idle_cpu% cpu_ns_per_frame steal1% steal0%"
  local fwd=$1 c0 c1 c1b c2 t0 t1 n0 n1 fd s0 s1 r0 r1
  sleep 1 # past the ramp
  [ -z "$CG_PID" ] || { callgrind_control -z "$CG_PID" >/dev/null 2>&1; kill -USR1 "$CG_PID"; }
  n0=$(rx_total); t0=$(date +%s.%N); c0=$(cpu_ticks "$fwd"); s0=$(steal_ticks 1); r0=$(steal_ticks 0)
  sleep "$SECS"
  c1=$(cpu_ticks "$fwd"); t1=$(date +%s.%N); n1=$(rx_total); s1=$(steal_ticks 1); r1=$(steal_ticks 0)
  [ -z "$CG_PID" ] || { kill -USR1 "$CG_PID"; callgrind_control -d "$CG_PID" >/dev/null 2>&1; }
  CG_FRAMES=$((n1 - n0))
  for fd in $CTLS; do echo stop >&"$fd"; done
  sleep 0.5
  c1b=$(cpu_ticks "$fwd")
  sleep 2
  c2=$(cpu_ticks "$fwd")
  for fd in $CTLS; do echo quit >&"$fd"; exec {fd}>&-; done
  awk -v n=$((n1 - n0)) -v b=$((c1 - c0)) -v i=$((c2 - c1b)) -v hz="$HZ" -v t0="$t0" -v t1="$t1" \
    -v s=$((s1 - s0)) -v r=$((r1 - r0)) \
    'BEGIN { pps = n / (t1 - t0); cpu = b / hz / (t1 - t0); w = hz * (t1 - t0)
             printf "%.3f %.0f %.1f %.0f %.0f %.0f\n", pps / 1e6, 100 * cpu, 100 * i / hz / 2,
                    pps ? 1e9 * cpu / pps : 0, 100 * s / w, 100 * r / w }'
}

run_switch() {
  local dir=$WORK/sw$1; mkdir -p "$dir"
  local wrap=()
  [ -z "$CALLGRIND" ] || wrap=(valgrind --tool=callgrind --callgrind-out-file="$CALLGRIND/switch-run$1.%p")
  spawn "$dir/switch.log" taskset -c 1 "${wrap[@]}" "$SWITCH" --socket "$dir/p0" \
    --socket "$dir/p1" --policy "$POLICY" --workers 1 $SWITCH_ARGS
  local sw=$SPAWNED
  wait_for "[ -S $dir/p0 ] && [ -S $dir/p1 ]" 60 || fail "switch sockets missing"
  [ -z "$CALLGRIND" ] || CG_PID=$sw
  traffic "$dir"
  measure "$sw"
  CG_PID=
  stop_traffic
  stop_pid "$sw" INT
}

# Instructions per delivered frame in run N's callgrind dump (the one the window ended with).
callgrind_per_frame() {
  local f
  f=$(ls "$CALLGRIND/switch-run$1".*.1 2>/dev/null | head -1)
  [ -n "$f" ] && [ "$CG_FRAMES" -gt 0 ] || { echo "no dump or no frames"; return; }
  local e
  # The worker's counters come first in each "sched {...}" line the switch printed.
  e=$(grep -a 'vqs-switch: sched {' "$WORK/sw$1/switch.log" | tail -2 |
    sed -E 's/.*"workers":\[\{[^}]*"empty_polls":([0-9]+).*/\1/' | tr '\n' ' ')
  awk -v n="$CG_FRAMES" -v e="$e" '/^(summary|totals):/ {
      split(e, x, " ")
      printf "%.1f instructions per delivered frame, %.3f empty polls per frame (%d frames, %s)\n",
             $2 / n, (x[2] - x[1]) / n, n, FILENAME; exit }' "$f"
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
  measure "$fwd"
  stop_traffic
  stop_pid "$fwd" INT
}

echo "bench-vhost-user: mode=$MODE burst=$BURST qsize=$QSIZE bursts=$BURSTS policy=$POLICY switch_args='$SWITCH_ARGS' runs=$RUNS secs=$SECS (Mpps busy% idle% ns/frame steal1% steal0%)"
: >"$WORK/sw.txt"; : >"$WORK/tp.txt"
for r in $(seq "$RUNS"); do
  # Not in $(...): the processes a run starts must be known to this shell's exit trap.
  run_switch "$r" >"$WORK/run"; echo "run $r vqs-switch: $(cat "$WORK/run")"; cat "$WORK/run" >>"$WORK/sw.txt"
  if [ -n "$CALLGRIND" ]; then
    echo "run $r vqs-switch callgrind: $(callgrind_per_frame "$r")"
    continue
  fi
  run_testpmd "$r" >"$WORK/run"; echo "run $r testpmd:    $(cat "$WORK/run")"; cat "$WORK/run" >>"$WORK/tp.txt"
done
for n in sw $([ -n "$CALLGRIND" ] || echo tp); do
  f=$WORK/$n.txt
  echo "median $n: Mpps=$(awk '{print $1}' "$f" | median) busy_cpu%=$(awk '{print $2}' "$f" | median) idle_cpu%=$(awk '{print $3}' "$f" | median) cpu_ns/frame=$(awk '{print $4}' "$f" | median) steal1%=$(awk '{print $5}' "$f" | median) steal0%=$(awk '{print $6}' "$f" | median)"
done
[ -z "$CALLGRIND" ] || exit 0
# Each run of one is next to a run of the other, so their ratio moves less with the machine's
# speed (which can change by 2x within minutes here) than the ratio of the two medians.
echo "median of per-run ratios vqs-switch/testpmd: Mpps=$(paste "$WORK/sw.txt" "$WORK/tp.txt" |
  awk '$7 > 0 {printf "%.3f\n", $1 / $7}' | median) cpu_ns/frame=$(paste "$WORK/sw.txt" "$WORK/tp.txt" |
  awk '$10 > 0 {printf "%.3f\n", $4 / $10}' | median)"
