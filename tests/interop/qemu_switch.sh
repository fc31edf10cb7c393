#!/usr/bin/env bash
# Two QEMU guests (virtio-net-pci, vhost-user, no other NIC) on vqs-switch: they ping each other
# and run iperf3 between them (guest 1 serves, guest 2 sends for 5 s). TCG unless KVM truly works
# (tests/interop/lib/guest.sh decides); the kernel and initramfs are built once and cached.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
. tests/interop/lib/guest.sh
interop_init qemu_switch
need_peer_packages qemu-system-x86 busybox-static iperf3 xz-utils zstd cpio
command -v qemu-system-x86_64 >/dev/null || interop_skip "qemu-system-x86_64 not installed"
CACHE=${VQS_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vqsched/guest}
guest_build "$CACHE" || interop_skip "cannot build the guest kernel and initramfs"
ACCEL=$(guest_qemu_accel)
echo "qemu_switch: accel=$ACCEL kernel=$GUEST_KERNEL"

spawn "$WORK/switch.log" "$SWITCH" --socket "$WORK/g1" --socket "$WORK/g2" --policy adaptive
SW=$SPAWNED
wait_for "[ -S $WORK/g1 ] && [ -S $WORK/g2 ]" 10 || fail "switch sockets missing"

# Each guest waits for the other to answer, pings it 3 times; guest 1 serves one iperf3 test,
# guest 2 runs it. Marker lines (vqs-...) are what this script checks.
wait_peer() { # the guest command that waits until PEER answers, then pings it 3 times
  echo "ping -c 1 -w 90 $1 >/dev/null; ping -c 3 $1 && echo vqs-ping-ok"
}
RUN1="iperf3 -s -1 >/tmp/iperf.log 2>&1 & $(wait_peer 169.254.0.2); wait; cat /tmp/iperf.log"
RUN2="$(wait_peer 169.254.0.1); sleep 1; iperf3 -c 169.254.0.1 -t 5 && echo vqs-iperf-ok"

guest_net "$WORK/guest1.log" 1 "$WORK/g1" "$RUN1"; G1=$SPAWNED
guest_net "$WORK/guest2.log" 2 "$WORK/g2" "$RUN2"; G2=$SPAWNED
wait "$G2"; rc2=$?
wait "$G1"; rc1=$?
kill -USR1 "$SW"
wait_for "grep -aqs 'port=1 ' $WORK/switch.log" 5
stop_pid "$SW" INT || fail "switch did not stop on SIGINT"
for n in 1 2; do echo "--- guest $n"; grep -a -E 'vqs-|packets transmitted|sender|receiver|error' "$WORK/guest$n.log"; done
grep -a 'final' "$WORK/switch.log"
[ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || fail "a guest did not power off in time (rc $rc1 $rc2)"
grep -aq 'vqs-guest: eth0 up' "$WORK/guest1.log" || fail "guest 1 eth0 did not come up"
grep -aq 'vqs-ping-ok' "$WORK/guest1.log" || fail "guest 1 could not ping guest 2"
grep -aq 'vqs-ping-ok' "$WORK/guest2.log" || fail "guest 2 could not ping guest 1"
grep -aq 'vqs-iperf-ok' "$WORK/guest2.log" || fail "iperf3 from guest 2 to guest 1 failed"
grep -a -E 'receiver' "$WORK/guest2.log" | tail -1
echo "qemu_switch: PASS in ${SECONDS}s"
