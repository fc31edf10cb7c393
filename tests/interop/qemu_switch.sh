#!/usr/bin/env bash
# Two QEMU guests (virtio-net-pci, vhost-user, no other NIC) on vqs-switch: they ping each other
# and run iperf3 between them (guest 1 serves, guest 2 sends for 5 s). TCG unless KVM truly works
# (tests/interop/lib/guest.sh decides). Besides what the guests report, the switch's counters,
# read on SIGUSR1 while both guests are still up, must account for the traffic: guest 2's port
# took at least the bytes iperf3 says arrived and guest 1's port delivered them, drops stay
# under 1% of the frames, and each of the four queues (two per guest) completed requests, at
# least one per frame taken or delivered.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
. tests/interop/lib/guest.sh
interop_init qemu_switch
guest_setup iperf3

spawn "$WORK/switch.log" "$SWITCH" --socket "$WORK/g1" --socket "$WORK/g2" --policy adaptive
SW=$SPAWNED
wait_for "[ -S $WORK/g1 ] && [ -S $WORK/g2 ]" 10 || fail "switch sockets missing"

# Each guest waits for the other to answer, pings it 3 times; guest 1 serves one iperf3 test,
# guest 2 runs it. Marker lines (vqs-...) are what this script checks. Both stay up a while
# after the test, so that the switch's counters are read with their queues still attached.
wait_peer() { # the guest command that waits until PEER answers, then pings it 3 times
  echo "ping -c 1 -w 90 $1 >/dev/null; ping -c 3 $1 && echo vqs-ping-ok"
}
RUN1="iperf3 -s -1 >/tmp/iperf.log 2>&1 & $(wait_peer 169.254.0.2); wait; cat /tmp/iperf.log; sleep 10"
RUN2="$(wait_peer 169.254.0.1); sleep 1; iperf3 -c 169.254.0.1 -t 5 && echo vqs-iperf-ok; sleep 6"

GUEST_TIMEOUT_S=300 guest_net "$WORK/guest1.log" 1 "$WORK/g1" "$RUN1"; G1=$SPAWNED
GUEST_TIMEOUT_S=300 guest_net "$WORK/guest2.log" 2 "$WORK/g2" "$RUN2"; G2=$SPAWNED
wait_for "grep -aqE 'vqs-iperf-ok|vqs-guest: done' $WORK/guest2.log" 300
kill -USR1 "$SW"
wait_for "grep -aqs 'vqs-switch: sched {' $WORK/switch.log" 10
snap=$(grep -a 'vqs-switch: sched {' "$WORK/switch.log" | tail -1)
counters=$(grep -a -E '^vqs-switch: port=[01] ' "$WORK/switch.log" | tail -2)
wait "$G2"; rc2=$?
wait "$G1"; rc1=$?
stop_pid "$SW" INT || fail "switch did not stop on SIGINT"
for n in 1 2; do echo "--- guest $n"; grep -a -E 'vqs-|packets transmitted|sender|receiver|error' "$WORK/guest$n.log"; done
echo "$counters"
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || fail "a guest did not power off in time (rc $rc1 $rc2)"
grep -aq 'vqs-guest: eth0 up' "$WORK/guest1.log" || fail "guest 1 eth0 did not come up"
grep -aq 'vqs-ping-ok' "$WORK/guest1.log" || fail "guest 1 could not ping guest 2"
grep -aq 'vqs-ping-ok' "$WORK/guest2.log" || fail "guest 2 could not ping guest 1"
grep -aq 'vqs-iperf-ok' "$WORK/guest2.log" || fail "iperf3 from guest 2 to guest 1 failed"

[ -n "$snap" ] && [ -n "$counters" ] || fail "no counters from the switch on SIGUSR1"
get() { # get PORT KEY: from the SIGUSR1 printout
  grep "port=$1 " <<<"$counters" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
# iperf3's receiver line: "[  5]   0.00-5.04  sec   180 MBytes   300 Mbits/sec   receiver"
iperf_bytes=$(grep -a 'receiver' "$WORK/guest2.log" | tail -1 | awk '{
  for (i = 1; i < NF; i++) if ($(i + 1) ~ /Bytes$/) {
    m = $(i + 1) == "GBytes" ? 2^30 : $(i + 1) == "MBytes" ? 2^20 : $(i + 1) == "KBytes" ? 2^10 : 1
    printf "%d\n", $i * m * 0.99; exit } }') # 0.99: iperf3 rounds to 3 digits
[ -n "$iperf_bytes" ] || fail "no receiver line from iperf3"
frames=0 drops=0
for p in 0 1; do
  frames=$((frames + $(get $p rx_frames) + $(get $p tx_frames)))
  for d in $(grep "port=$p " <<<"$counters" | tr ' ' '\n' | sed -n 's/^drop_[a-z_]*=//p'); do
    drops=$((drops + d))
  done
done
reqs=$(grep -oE '"reqs":[0-9]+' <<<"$snap" | cut -d: -f2)
echo "qemu_switch: iperf3 received $iperf_bytes+ bytes; guest 2 sent $(get 1 rx_bytes)," \
  "guest 1 got $(get 0 tx_bytes); $frames frames, $drops dropped;" \
  "requests per queue:" $reqs
[ "$(get 1 rx_bytes)" -ge "$iperf_bytes" ] || fail "guest 2's port took fewer bytes than iperf3 moved"
[ "$(get 0 tx_bytes)" -ge "$iperf_bytes" ] || fail "guest 1's port delivered fewer bytes than iperf3 moved"
[ $((drops * 100)) -le "$frames" ] || fail "$drops of $frames frames dropped"
[ "$(wc -w <<<"$reqs")" -eq 4 ] || fail "expected 4 attached queues, the scheduler lists: $reqs"
total=0
for r in $reqs; do
  [ "$r" -gt 0 ] || fail "a queue completed no request: $reqs"
  total=$((total + r))
done
[ "$total" -ge "$frames" ] || fail "$total requests completed for $frames frames taken and delivered"
echo "qemu_switch: PASS in ${SECONDS}s"
