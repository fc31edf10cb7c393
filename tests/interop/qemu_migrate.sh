#!/usr/bin/env bash
# Live migration of a QEMU guest on vqs-switch (issue 20): guest 1 pings guest 2 five times a
# second while it is migrated (QMP "migrate", memfd guest memory shared with the switch) to a
# second QEMU started with -incoming on another port of the same switch. The source's switch
# port logs every page it writes (LOG_ALL, LOG_SHMFD), the destination resumes the rings from
# GET/SET_VRING_BASE, and the switch learns the guest's MAC on its new port from the pings. The
# pings must go on after the switch-over (VQS_MIGRATE_AFTER replies on the destination, default
# 25: 5 s) with at most VQS_MIGRATE_MAX_LOST (default 10) lost from the migration's start on.
# The switch runs the policy interop_policy picks (default adaptive). TCG unless KVM truly works
# (tests/interop/lib/guest.sh); the kernel and initramfs are built once and cached.
# Most of a run is the guests' boot under TCG: the script stops as soon as it can judge.
# vqs-interop: every policy
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
. tests/interop/lib/guest.sh
. tests/interop/lib/migrate.sh
interop_init qemu_migrate
interop_policy adaptive
guest_setup
migrate_setup
GUEST_TIMEOUT_S=300 # three guests and a migration under TCG
AFTER=${VQS_MIGRATE_AFTER:-25}
MAX_LOST=${VQS_MIGRATE_MAX_LOST:-10}

spawn "$WORK/switch.log" "$SWITCH" --socket "$WORK/g1" --socket "$WORK/g2" \
  --socket "$WORK/g3" --policy "$POLICY"
SW=$SPAWNED
wait_for "[ -S $WORK/g1 ] && [ -S $WORK/g2 ] && [ -S $WORK/g3 ]" 10 || fail "switch sockets missing"

# Guest 1 pings until it is stopped; each reply is a line with its sequence number.
RUN1="ping -c 1 -w 120 169.254.0.2 >/dev/null; echo vqs-ping-start; ping -i 0.2 169.254.0.2"
RUN2="sleep 100000"

guest_net "$WORK/guest2.log" 2 "$WORK/g2" "$RUN2"; G2=$SPAWNED
guest_net "$WORK/src.log" 1 "$WORK/g1" "$RUN1" -qmp "unix:$WORK/qmp-src,server=on,wait=off"
SRC=$SPAWNED
guest_net "$WORK/dst.log" 1 "$WORK/g3" "$RUN1" -qmp "unix:$WORK/qmp-dst,server=on,wait=off" \
  -incoming "unix:$WORK/migration"
DST=$SPAWNED

replies() { # replies LOG...: the sequence numbers of the ping replies in the guest's console logs
  cat "$@" | grep -av 'vqs\.run' | grep -aoE 'bytes from [0-9.]+: seq=[0-9]+' | sed 's/.*seq=//'
}
last_reply() { replies "$@" | sort -n | tail -1; }

wait_for "grep -av 'vqs\.run' $WORK/src.log | grep -aq vqs-ping-start" 240 ||
  fail "guest 1 never reached guest 2"
echo "qemu_migrate: guest 1 reached guest 2 after ${SECONDS}s"
wait_for "[ \$(replies $WORK/src.log | wc -l) -ge 5 ]" 30 || fail "pings did not go on before the migration"
s0=$(($(last_reply "$WORK/src.log") + 1)) t0=$SECONDS
migrate "$WORK/qmp-src" "unix:$WORK/migration"
echo "qemu_migrate: migration $MIGRATE_STATUS after $((SECONDS - t0))s"
[ "$MIGRATE_STATUS" = completed ] || fail "migration did not complete ($MIGRATE_STATUS)"
$QMP "$WORK/qmp-src" quit >/dev/null 2>&1
wait "$SRC" 2>/dev/null

wait_for "[ \$(replies $WORK/dst.log | wc -l) -ge $AFTER ]" 120 ||
  fail "pings did not go on on the destination ($(replies "$WORK/dst.log" | wc -l) replies)"
s1=$(last_reply "$WORK/dst.log")
# Every request from the first one unanswered before the migration to the last one answered on
# the destination: answered on either side, or lost.
got=$(replies "$WORK/src.log" "$WORK/dst.log" | awk -v a="$s0" -v b="$s1" '$1 >= a && $1 <= b' |
  sort -un | wc -l)
sent=$((s1 - s0 + 1)) lost=$((s1 - s0 + 1 - got))
$QMP "$WORK/qmp-dst" quit >/dev/null 2>&1
wait "$DST" 2>/dev/null
stop_pid "$G2" TERM
kill -USR1 "$SW"
wait_for "grep -aqs 'port=2 ' $WORK/switch.log" 5
stop_pid "$SW" INT || fail "switch did not stop on SIGINT"
grep -a 'final' "$WORK/switch.log"
echo "qemu_migrate: $got of $sent pings from seq $s0 to $s1 answered across the migration ($lost lost)"
[ "$lost" -le "$MAX_LOST" ] || fail "$lost pings lost (at most $MAX_LOST allowed)"
echo "qemu_migrate: PASS (policy $POLICY) in ${SECONDS}s"
