#!/usr/bin/env bash
# Live migration of a QEMU guest on vqs-switch (issue 20): guest 1 pings guest 2 five times a
# second while it is migrated (QMP "migrate", memfd guest memory shared with the switch) to a
# second QEMU started with -incoming on another port of the same switch. The source's switch
# port logs every page it writes (LOG_ALL, LOG_SHMFD), the destination resumes the rings from
# GET/SET_VRING_BASE, and the switch learns the guest's MAC on its new port from the pings. The
# pings must go on after the switch-over with at most a few lost around it. TCG unless KVM truly
# works (tests/interop/lib/guest.sh); the kernel and initramfs are built once and cached.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
. tests/interop/lib/guest.sh
interop_init qemu_migrate
guest_setup
command -v python3 >/dev/null || interop_skip "python3 (the QMP client) not installed"
QMP="python3 tests/interop/lib/qmp.py"
GUEST_TIMEOUT_S=600 # three guests and a migration under TCG
PINGS=${VQS_MIGRATE_PINGS:-300}
MAX_LOST=${VQS_MIGRATE_MAX_LOST:-10}

spawn "$WORK/switch.log" "$SWITCH" --socket "$WORK/g1" --socket "$WORK/g2" \
  --socket "$WORK/g3" --policy "${VQS_MIGRATE_POLICY:-adaptive}"
SW=$SPAWNED
wait_for "[ -S $WORK/g1 ] && [ -S $WORK/g2 ] && [ -S $WORK/g3 ]" 10 || fail "switch sockets missing"

RUN1="ping -c 1 -w 120 169.254.0.2 >/dev/null; echo vqs-ping-start; \
ping -i 0.2 -c $PINGS 169.254.0.2 | tail -2; echo vqs-ping-done"
RUN2="sleep 100000"

guest_net "$WORK/guest2.log" 2 "$WORK/g2" "$RUN2"; G2=$SPAWNED
guest_net "$WORK/src.log" 1 "$WORK/g1" "$RUN1" -qmp "unix:$WORK/qmp-src,server=on,wait=off"
SRC=$SPAWNED
guest_net "$WORK/dst.log" 1 "$WORK/g3" "$RUN1" -qmp "unix:$WORK/qmp-dst,server=on,wait=off" \
  -incoming "unix:$WORK/migration"
DST=$SPAWNED

wait_for "grep -aq vqs-ping-start $WORK/src.log" 240 || fail "guest 1 never reached guest 2"
sleep "${VQS_MIGRATE_AFTER_S:-10}"
$QMP "$WORK/qmp-src" migrate "{\"uri\": \"unix:$WORK/migration\"}" >/dev/null ||
  fail "QMP migrate refused (a migration blocker?)"
status=
for _ in $(seq 600); do
  status=$($QMP "$WORK/qmp-src" query-migrate | python3 -c \
    'import json,sys; print(json.load(sys.stdin).get("status", "?"))')
  case $status in completed | failed | cancelled) break ;; esac
  sleep 0.5
done
echo "qemu_migrate: migration $status after ${SECONDS}s"
[ "$status" = completed ] || fail "migration did not complete ($status)"
$QMP "$WORK/qmp-src" quit >/dev/null 2>&1
wait "$SRC" 2>/dev/null

wait_for "grep -aq vqs-ping-done $WORK/dst.log" 300 || fail "pings did not finish on the destination"
wait "$DST"; rc=$?
stop_pid "$G2" TERM
kill -USR1 "$SW"
wait_for "grep -aqs 'port=2 ' $WORK/switch.log" 5
stop_pid "$SW" INT || fail "switch did not stop on SIGINT"
echo "--- destination"; grep -a -E 'vqs-|packets transmitted|round-trip' "$WORK/dst.log"
grep -a 'final' "$WORK/switch.log"
summary=$(grep -a 'packets transmitted' "$WORK/dst.log" | tail -1)
sent=$(echo "$summary" | sed -n 's/^\([0-9]*\) packets transmitted.*/\1/p')
got=$(echo "$summary" | sed -n 's/.* \([0-9]*\) packets received.*/\1/p')
[ -n "$sent" ] && [ -n "$got" ] || fail "no ping summary on the destination"
lost=$((sent - got))
echo "qemu_migrate: $got of $sent pings answered across the migration ($lost lost)"
[ "$lost" -le "$MAX_LOST" ] || fail "$lost pings lost (at most $MAX_LOST allowed)"
[ $rc -eq 0 ] || fail "the destination guest did not power off in time (rc $rc)"
echo "qemu_migrate: PASS in ${SECONDS}s"
