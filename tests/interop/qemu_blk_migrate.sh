#!/usr/bin/env bash
# Live migration of a QEMU guest doing disk I/O on vqs-blk (issue 20). The guest writes a pattern
# (every 16 bytes name the round and the 4 KiB block) to a fresh 4 MiB region of its disk each
# round (O_DIRECT), reads the region back through its page cache and checks the md5 of what it
# read, round after round, while it is migrated (QMP "migrate", memfd guest memory shared with
# the backend) to a second QEMU started with -incoming, connected to a second vqs-blk on the same
# image. Once the migration completed this script writes "vqs-stop" into the disk's first block,
# which the guest polls with O_DIRECT reads; the guest then checks every region again, first from
# its page cache (the pages the backend wrote during the migration: unless they were logged, the
# destination holds what those pages held before) and then, caches dropped, from the disk (every
# block it wrote). VQS_BLK_MIGRATE_UNMARKED=1 runs both backends with --test-log-unmarked, which
# accepts dirty logging but marks nothing: then the test must fail (the proof that it can).
# Both backends run the policy interop_policies picks (default pool).
# TCG unless KVM truly works (tests/interop/lib/guest.sh); the kernel and initramfs are cached.
#
# The guest has 512 MiB + 8 KiB of memory on purpose. QEMU before 9.0 (commit 03bfc2188f,
# "physmem: Fix migration dirty bitmap coherency with TCG memory access") syncs a RAM block whose
# size is a multiple of 64 pages by a fast path that clears its dirty bits without resetting
# TCG's TLB, so the guest's own stores after a sync go untracked and the destination resumes
# with stale memory: with 512 MiB its kernel crashed within a second of resuming in most runs,
# with vqs-blk, qemu-storage-daemon or QEMU's own virtio-blk alike. A size that is no such
# multiple takes the path that resets the TLB. Under KVM the size changes nothing.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
. tests/interop/lib/guest.sh
. tests/interop/lib/migrate.sh
interop_init qemu_blk_migrate
interop_policies pool
POLICY=$POLICIES
[ "$POLICY" = "${POLICY%% *}" ] || fail "one policy at a time (VQS_INTEROP_POLICIES)"
guest_setup
migrate_setup
ROUNDS_MAX=${VQS_BLK_MIGRATE_ROUNDS:-60} # the guest stops earlier when told to
DISK=$WORK/disk.img
# Region 0 holds the stop mark, round r region r, region ROUNDS_MAX + 1 is scratch.
truncate -s $(((ROUNDS_MAX + 2) * 4))M "$DISK"
UNMARKED=()
[ -n "${VQS_BLK_MIGRATE_UNMARKED:-}" ] && UNMARKED=(--test-log-unmarked)

# Requests wait 0..2 ms on two I/O threads and complete out of order: the source's rings stop
# (GET_VRING_BASE) with requests in flight.
start_blk() { # start_blk NAME
  spawn "$WORK/blk-$1.log" "$BLK" --socket "$WORK/$1.sock" --file "$DISK" --io-threads 2 \
    --latency-us 2000 --policy "$POLICY" "${UNMARKED[@]}"
  wait_for "[ -S $WORK/$1.sock ]" 10 || fail "vqs-blk socket $1 missing"
}
start_blk src; BLK_SRC=$SPAWNED
start_blk dst; BLK_DST=$SPAWNED

# The guest's job (no double quotes: it travels on the kernel command line). sum K: md5 of
# region K read through the page cache; check WHAT: every region written against its sum.
# Its shell keeps the disk open (fd 3): Linux drops a block device's page cache when its last
# opener closes it, as each dd would, and the cached check would read the disk again. Before it
# reads a round's region, the guest reads the scratch region through its page cache and frees
# those pages with an O_DIRECT write over it: the round's read then mostly lands in them (the
# allocator reuses what was freed last), pages the backend wrote last, which QEMU has no reason
# to copy again unless the backend logs its new write. Pages its CPU wrote just before, the
# alternative, QEMU may copy again after the backend's write anyway.
RUN=$(tr '\n' ' ' <<'GUEST'
sum() { dd if=/dev/vda bs=65536 skip=$(($1*64)) count=64 2>/dev/null | md5sum | head -c 32; };
check() { bad=0; while read k w; do [ $(sum $k) = $w ] || { echo vqs-$1-bad-$k; bad=$((bad+1)); };
done </tmp/sums; echo vqs-$1 bad=$bad; };
exec 3</dev/vda; r=0; s=0; echo vqs-io-start; while [ $r -lt @MAX@ ]; do
dd if=/dev/vda bs=4096 count=1 iflag=direct 2>/dev/null | head -c 8 | grep -q vqs-stop && { s=1; break; };
r=$((r+1)); awk -v r=$r -v f=r%04d-b%04d-vqs- 'BEGIN{for(b=0;b<1024;b++){l=sprintf(f,r,b);
for(i=0;i<8;i++)l=l l;printf l}}' >/tmp/p; w=$(md5sum </tmp/p | head -c 32); echo $r $w >>/tmp/sums;
dd if=/tmp/p of=/dev/vda bs=65536 seek=$((r*64)) oflag=direct 2>/dev/null || echo vqs-write-failed-$r;
sum @S@ >/dev/null; dd if=/dev/zero of=/dev/vda bs=65536 seek=$((@S@*64)) count=64 oflag=direct 2>/dev/null;
[ $(sum $r) = $w ] || echo vqs-read-bad-$r; echo vqs-round-$r; done;
echo vqs-io-end rounds=$r stopped=$s; check cached; c=$bad; echo 3 >/proc/sys/vm/drop_caches;
check disk; [ $((c+bad)) = 0 ] && echo vqs-verify-ok
GUEST
)
RUN=${RUN//@MAX@/$ROUNDS_MAX}
RUN=${RUN//@S@/$((ROUNDS_MAX + 1))}

MEM=$(((512 << 10) + 8))K # see the header: not a multiple of 64 pages
# nosoftlockup: under TCG on a loaded host the guest's clock runs on while its vCPU waits for the
# host, and the soft lockup watchdog's "BUG:" line (seen once) is no crash.
guest_blk() { # guest_blk NAME [qemu args...]: the guest on vqs-blk NAME, QMP at $WORK/qmp-NAME
  local name=$1; shift
  spawn "$WORK/$name.log" timeout 600 qemu-system-x86_64 -accel "$GUEST_ACCEL" -m "$MEM" -smp 1 \
    -nographic -monitor none -no-reboot -nic none \
    -kernel "$GUEST_KERNEL" -initrd "$GUEST_INITRD" \
    -append "console=ttyS0 quiet init_on_alloc=0 nosoftlockup vqs.run=\"$RUN\"" \
    -object memory-backend-memfd,id=mem,size="$MEM",share=on -numa node,memdev=mem \
    -chardev socket,id=c0,path="$WORK/$name.sock" \
    -device vhost-user-blk-pci,chardev=c0,num-queues=1,vectors=0 \
    -qmp "unix:$WORK/qmp-$name,server=on,wait=off" "$@"
}
guest_blk src; SRC=$SPAWNED
guest_blk dst -incoming "unix:$WORK/migration"; DST=$SPAWNED

last_round() { grep -aoE 'vqs-round-[0-9]+' "$WORK/src.log" | tail -1 | sed 's/.*-//'; }
limits() { # limits DOWNTIME-MS BYTES-PER-S
  $QMP "$WORK/qmp-src" migrate-set-parameters \
    "{\"downtime-limit\": $1, \"max-bandwidth\": $2}" >/dev/null
}
wait_for "grep -aq vqs-round-2 $WORK/src.log" 300 || fail "the guest's I/O never started"
# The reads that matter land in pages QEMU already copied, which reach the destination again
# only if they were logged; at full speed QEMU copies the pages the guest dirties soon after,
# before the backend's writes into them. 1 ms of downtime keeps the migration from completing
# while the guest works, until QEMU has gone over the dirty bitmap SYNCS times; then 5 s lets it
# complete.
SYNCS=${VQS_BLK_MIGRATE_SYNCS:-4}
limits 1 $((1 << 30)) || fail "QMP migrate-set-parameters refused"
converge() { # converge STATUS SYNCS: migrate's hook
  if [ -z "$converging" ] && [ "$2" -ge "$SYNCS" ]; then
    limits 5000 $((1 << 30)) && converging=$(last_round)
  fi
}
r0=$(last_round) t0=$SECONDS converging=
migrate "$WORK/qmp-src" "unix:$WORK/migration" converge
status=$MIGRATE_STATUS syncs=$MIGRATE_SYNCS
r1=$(last_round)
how="done within 1 ms of downtime" # before SYNCS passes: little was dirty
[ -n "$converging" ] && how="downtime raised at round $converging"
echo "qemu_blk_migrate: migration $status after $((SECONDS - t0))s and $syncs bitmap syncs," \
  "during rounds $r0..$((r1 + 1)) ($how)"
[ "$status" = completed ] || fail "migration did not complete ($status)"
printf vqs-stop | dd of="$DISK" conv=notrunc status=none
$QMP "$WORK/qmp-src" quit >/dev/null 2>&1
wait "$SRC" 2>/dev/null
# The guest powers off after its checks, unless stale memory crashed its kernel: then it hangs.
OOPS='Kernel panic|Oops|BUG:|kernel BUG|general protection fault'
wait_for "grep -aqE 'vqs-guest: done|$OOPS' $WORK/dst.log" 300
if grep -aqE "$OOPS" "$WORK/dst.log"; then
  grep -aE "$OOPS|corruption" "$WORK/dst.log" | head -3
  fail "the destination guest's kernel crashed (stale memory: dirty pages not logged?)"
fi
wait_for "! kill -0 $DST 2>/dev/null" 30
stop_pid "$DST" TERM
wait "$DST"; rc=$?
stop_pid "$BLK_SRC" TERM || fail "the source's vqs-blk did not stop on SIGTERM"
stop_pid "$BLK_DST" TERM || fail "the destination's vqs-blk did not stop on SIGTERM"
echo "--- destination"; grep -av 'vqs\.run' "$WORK/dst.log" | grep -aE 'vqs-(io|cached|disk|verify|read|write)' | head -20
tail -1 "$WORK/blk-src.log"; tail -1 "$WORK/blk-dst.log"
[ $rc -eq 0 ] || fail "the destination guest did not power off in time (rc $rc)"
said() { grep -ahv 'vqs\.run' "$WORK/src.log" "$WORK/dst.log" | grep -aqE "$1"; } # the guest said
said 'vqs-io-end .*stopped=1' || fail "the guest's I/O did not outlast the migration"
said 'vqs-(read-bad|write-failed)' && fail "a round's I/O failed"
said 'vqs-cached bad=0' ||
  fail "the destination's memory lost what the backend read into it (dirty pages not logged?)"
said 'vqs-disk bad=0' || fail "the disk holds something else than was written"
said 'vqs-verify-ok' || fail "the guest did not verify"
echo "qemu_blk_migrate: PASS in ${SECONDS}s"
