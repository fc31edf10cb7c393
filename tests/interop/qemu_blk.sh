#!/usr/bin/env bash
# A QEMU guest on vqs-blk (vhost-user-blk-pci, two queues, chardev reconnect): the guest writes
# three passes of a pattern over its disk with two dd (O_DIRECT, 4 KiB requests), one per vCPU and
# so one per queue, while vqs-blk is SIGKILLed and restarted twice under it, each time at a moment
# its counters (vqs-blk --counters) show requests in flight; QEMU reconnects and resubmits what
# was in flight (inflight region). The guest then reads the disk back and compares, and so does
# this script on the disk image. The counters the killed processes left must show that a kill
# hit requests in flight and that both queues served requests.
# TCG unless KVM truly works (tests/interop/lib/guest.sh decides).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
. tests/interop/lib/guest.sh
interop_init qemu_blk
guest_setup

PASS_BYTES=8388608
DISK=$WORK/disk.img
SOCK=$WORK/blk.sock
truncate -s 16M "$DISK"
# Requests wait 0..5 ms on the I/O threads, as on a disk: a kill then finds some in flight.
start_blk() { # start_blk N: incarnation N of the backend
  spawn "$WORK/blk$1.log" "$BLK" --socket "$SOCK" --file "$DISK" --queues 2 --workers 2 \
    --policy pool --io-threads 2 --latency-us 5000 --serial vqs-qemu-disk \
    --counters "$WORK/blk$1.counters"
  BLK_PID=$SPAWNED BLK_N=$1
  wait_for "[ -S $SOCK ]" 10 || fail "vqs-blk socket missing"
}
counters() { # counters N -> "taken done taken-on-queue-0 taken-on-queue-1" of incarnation N
  echo $(od -An -t u8 -v -N 32 "$WORK/blk$1.counters")
}
rm -f "$SOCK"
start_blk 0

# The guest's job (no double quotes: it travels on the kernel command line). Each pass writes
# "vqs-blk-pass-N" lines over the first 8 MiB, each half by a dd bound to one vCPU (blk-mq gives
# each vCPU its queue); the last pass is read back with the cache dropped.
HALF=$((PASS_BYTES / 8192))
DD="dd if=/tmp/p of=/dev/vda bs=4096 count=$HALF oflag=direct 2>/dev/null || echo vqs-dd-failed"
RUN='for p in 1 2 3; do yes vqs-blk-pass-$p | head -c '$PASS_BYTES' >/tmp/p; echo vqs-pass-$p; taskset 1 '$DD' & taskset 2 '${DD/count=/skip=$HALF seek=$HALF count=}'; wait; done; sync; echo 3 >/proc/sys/vm/drop_caches; head -c '$PASS_BYTES' /dev/vda | cmp - /tmp/p && echo vqs-verify-ok; cat /sys/block/vda/mq/*/cpu_list 2>/dev/null | wc -l | sed s/^/vqs-queues-/'

spawn "$WORK/guest.log" timeout 300 qemu-system-x86_64 -accel "$GUEST_ACCEL" -m 512 -smp 2 \
  -nographic -monitor none -no-reboot -nic none \
  -kernel "$GUEST_KERNEL" -initrd "$GUEST_INITRD" \
  -append "console=ttyS0 quiet vqs.run=\"$RUN\"" \
  -object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
  -chardev socket,id=c0,path="$SOCK",reconnect=1 \
  -device vhost-user-blk-pci,chardev=c0,num-queues=2,vectors=0
QEMU=$SPAWNED

# Kill the backend in passes 2 and 3, once the pass has been running a moment and the counters
# show a request taken and not yet done, and start a new one on the same socket and disk. The
# counters are read with the backend stopped (SIGSTOP), so that what they show in flight is still
# in flight when SIGKILL lands: read while it ran, a request seen in flight could complete in the
# milliseconds before the kill (a clean-clone run saw 1 in flight, then 0 after the kill, twice).
hits=0
for n in 2 3; do
  wait_for "grep -aq vqs-pass-$n $WORK/guest.log" 250 || fail "guest never reached pass $n"
  sleep 0.3
  i=$BLK_N
  for ((tries = 1; tries < 3000; tries++)); do
    kill -STOP "$BLK_PID"
    c=($(counters $i))
    [ "${c[0]}" -gt "${c[1]}" ] && break
    kill -CONT "$BLK_PID"
    sleep 0.001
  done
  kill -KILL "$BLK_PID"
  wait "$BLK_PID" 2>/dev/null
  c=($(counters $i))
  echo "qemu_blk: vqs-blk killed during pass $n at ${SECONDS}s: $((c[0] - c[1])) requests in flight" \
    "(taken ${c[0]}, done ${c[1]}; seen in flight after $tries reads)"
  [ "${c[0]}" -gt "${c[1]}" ] && hits=$((hits + 1))
  rm -f "$SOCK"
  start_blk "$n"
done
wait "$QEMU"; rc=$?
echo "--- guest"; grep -a -E 'vqs-|virtio_blk|vda|error|I/O' "$WORK/guest.log" | grep -v 'vqs.run' | head -20
stop_pid "$BLK_PID" TERM || fail "vqs-blk did not stop on SIGTERM"
tail -1 "$WORK/blk3.log"
q0=0 q1=0
for i in 0 2 3; do c=($(counters $i)); q0=$((q0 + c[2])); q1=$((q1 + c[3])); done
echo "qemu_blk: requests taken on queue 0: $q0, on queue 1: $q1"
[ $rc -eq 0 ] || fail "the guest did not power off in time (rc $rc)"
grep -aq 'vqs-dd-failed' "$WORK/guest.log" && fail "a dd pass failed in the guest"
grep -aq 'vqs-verify-ok' "$WORK/guest.log" || fail "the guest read back something else than it wrote"
grep -aq 'vqs-queues-2' "$WORK/guest.log" || fail "the guest did not see two queues"
yes vqs-blk-pass-3 | head -c $PASS_BYTES >"$WORK/expect" # yes ends by SIGPIPE: no status check
cmp -n $PASS_BYTES "$WORK/expect" "$DISK" || fail "the disk image differs from the last pass"
[ "$hits" -ge 1 ] || fail "no kill hit a request in flight"
[ "$q0" -gt 0 ] && [ "$q1" -gt 0 ] || fail "a queue served no request"
echo "qemu_blk: PASS in ${SECONDS}s"
