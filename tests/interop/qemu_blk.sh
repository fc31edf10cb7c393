#!/usr/bin/env bash
# A QEMU guest on vqs-blk (vhost-user-blk-pci, chardev reconnect): the guest writes three passes
# of a pattern over its disk with dd (O_DIRECT, 4 KiB requests) while vqs-blk is SIGKILLed and
# restarted twice under it; QEMU reconnects and resubmits what was in flight (inflight region).
# The guest then reads the disk back and compares, and so does this script on the disk image.
# TCG unless KVM truly works (tests/interop/lib/guest.sh decides).
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
. tests/interop/lib/guest.sh
INTEROP_NAME=qemu_blk
VQS_BUILD_DIR=${VQS_BUILD_DIR:-build/test-plain}
case $VQS_BUILD_DIR in /*) ;; *) VQS_BUILD_DIR=$PWD/$VQS_BUILD_DIR ;; esac
BLK=$VQS_BUILD_DIR/examples/vqs-blk/vqs-blk
[ -x "$BLK" ] || { echo "qemu_blk: $BLK not built (set VQS_BUILD_DIR)" >&2; exit 1; }
WORK=$(mktemp -d /tmp/vqs-qemu_blk.XXXXXX)
trap interop_cleanup EXIT
trap 'exit 130' INT TERM
SECONDS=0

need_peer_packages qemu-system-x86 busybox-static xz-utils zstd cpio
command -v qemu-system-x86_64 >/dev/null || interop_skip "qemu-system-x86_64 not installed"
CACHE=${VQS_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vqsched/guest}
guest_build "$CACHE" || interop_skip "cannot build the guest kernel and initramfs"
ACCEL=$(guest_qemu_accel)
echo "qemu_blk: accel=$ACCEL kernel=$GUEST_KERNEL"

PASS_BYTES=8388608
DISK=$WORK/disk.img
SOCK=$WORK/blk.sock
truncate -s 16M "$DISK"
start_blk() { # start_blk N: incarnation N of the backend
  spawn "$WORK/blk$1.log" "$BLK" --socket "$SOCK" --file "$DISK" --queues 2 --workers 2 \
    --policy pool --io-threads 2 --serial vqs-qemu-disk
  BLK_PID=$SPAWNED
  wait_for "[ -S $SOCK ]" 10 || fail "vqs-blk socket missing"
}
rm -f "$SOCK"
start_blk 0

# The guest's job (no double quotes: it travels on the kernel command line). Each pass writes
# "vqs-blk-pass-N" lines over the first 8 MiB; the last pass is read back with the cache dropped.
RUN='for p in 1 2 3; do yes vqs-blk-pass-$p | head -c '$PASS_BYTES' >/tmp/p; echo vqs-pass-$p; dd if=/tmp/p of=/dev/vda bs=4096 oflag=direct 2>/dev/null || echo vqs-dd-failed; done; sync; echo 3 >/proc/sys/vm/drop_caches; head -c '$PASS_BYTES' /dev/vda | cmp - /tmp/p && echo vqs-verify-ok; cat /sys/block/vda/mq/*/cpu_list 2>/dev/null | wc -l | sed s/^/vqs-queues-/'

spawn "$WORK/guest.log" timeout 170 qemu-system-x86_64 -accel "$ACCEL" -m 512 -smp 2 \
  -nographic -monitor none -no-reboot -nic none \
  -kernel "$GUEST_KERNEL" -initrd "$GUEST_INITRD" \
  -append "console=ttyS0 quiet vqs.run=\"$RUN\"" \
  -object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
  -chardev socket,id=c0,path="$SOCK",reconnect=1 \
  -device vhost-user-blk-pci,chardev=c0,num-queues=2,vectors=0
QEMU=$SPAWNED

# Kill the backend in the middle of passes 2 and 3, each time once the pass has been running a
# moment (requests in flight), and start a new one on the same socket and disk.
for n in 2 3; do
  wait_for "grep -aq vqs-pass-$n $WORK/guest.log" 150 || fail "guest never reached pass $n"
  sleep 0.3
  kill -KILL "$BLK_PID"
  wait "$BLK_PID" 2>/dev/null
  echo "qemu_blk: vqs-blk killed during pass $n at ${SECONDS}s"
  rm -f "$SOCK"
  start_blk "$n"
done
wait "$QEMU"; rc=$?
echo "--- guest"; grep -a -E 'vqs-|virtio_blk|vda|error|I/O' "$WORK/guest.log" | grep -v 'vqs.run' | head -20
stop_pid "$BLK_PID" TERM || fail "vqs-blk did not stop on SIGTERM"
tail -1 "$WORK/blk3.log"
[ $rc -eq 0 ] || fail "the guest did not power off in time (rc $rc)"
grep -aq 'vqs-dd-failed' "$WORK/guest.log" && fail "a dd pass failed in the guest"
grep -aq 'vqs-verify-ok' "$WORK/guest.log" || fail "the guest read back something else than it wrote"
yes vqs-blk-pass-3 | head -c $PASS_BYTES >"$WORK/expect" # yes ends by SIGPIPE: no status check
cmp -n $PASS_BYTES "$WORK/expect" "$DISK" || fail "the disk image differs from the last pass"
echo "qemu_blk: PASS in ${SECONDS}s"
