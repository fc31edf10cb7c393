#!/usr/bin/env bash
# Live migration of a QEMU guest on vqs-switch (issue 20), under each policy interop_policies
# picks (default adaptive; scripts/test.sh: all four, each its own result). Guest 1 pings
# guest 2 five times a second while it is migrated (QMP "migrate", memfd guest memory shared
# with the switch) to a QEMU started with -incoming on another port of the same switch. The
# source's switch port logs every page it writes (LOG_ALL, LOG_SHMFD), the destination resumes
# the rings from GET/SET_VRING_BASE, and the switch learns the guest's MAC on its new port from
# the pings. The pings must go on after the switch-over (VQS_MIGRATE_AFTER replies on the
# destination, default 25: 5 s) with at most VQS_MIGRATE_MAX_LOST (default 10) lost from the
# first one unanswered at the migration's start on.
#
# Booting the guests is most of a run under TCG, so one pair serves every policy: for the next
# policy the switch is stopped and started again with it under the running guests, whose QEMUs
# connect again (chardev reconnect=1, set here with -set: guest.sh is part of the cached image's
# key) and resume the rings from the used index in guest memory; once the pings flow again,
# guest 1 is migrated back to the port it came from. A policy that fails is reported and its
# guests and switch are stopped; the next policy boots a new pair.
# TCG unless KVM truly works (tests/interop/lib/guest.sh); the kernel and initramfs are cached.
# vqs-interop: every policy
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/interop/lib/common.sh
. tests/interop/lib/guest.sh
. tests/interop/lib/migrate.sh
interop_init qemu_migrate
interop_policies adaptive
guest_setup
migrate_setup
GUEST_TIMEOUT_S=800 # a pair lives through every policy (scripts/test.sh allows a script 900 s)
AFTER=${VQS_MIGRATE_AFTER:-25}
MAX_LOST=${VQS_MIGRATE_MAX_LOST:-10}

# Guest 1 pings until it is stopped; each reply is a line with its sequence number.
RUN1="ping -c 1 -w 120 169.254.0.2 >/dev/null; echo vqs-ping-start; ping -i 0.2 169.254.0.2"
RUN2="sleep 100000"
PORTS=(g1 g3) # guest 1's QEMU number N runs on port PORTS[N % 2]
RECONNECT="-set chardev.c0.reconnect=1" # guest_net's vhost-user chardev

replies() { # replies LOG...: the sequence numbers of the ping replies in the guest's console logs
  cat "$@" | grep -av 'vqs\.run' | grep -aoE 'bytes from [0-9.]+: seq=[0-9]+' | sed 's/.*seq=//'
}
last_reply() { replies "$@" | sort -n | tail -1; }

SW= G2= CUR= NEXT= N=0 WHY=

start_switch() { # start_switch POLICY
  spawn "$WORK/switch-$1.log" "$SWITCH" --socket "$WORK/g1" --socket "$WORK/g2" \
    --socket "$WORK/g3" --policy "$1"
  SW=$SPAWNED
  wait_for "[ -S $WORK/g1 ] && [ -S $WORK/g2 ] && [ -S $WORK/g3 ]" 10 || { WHY="switch sockets missing"; return 1; }
}

stop_switch() {
  kill -USR1 "$SW"
  wait_for "grep -aqs 'port=2 ' $WORK/switch-$POLICY.log" 5
  stop_pid "$SW" INT || WHY="switch did not stop on SIGINT"
  grep -a 'final' "$WORK/switch-$POLICY.log"
  SW=
  [ -z "$WHY" ]
}

guest1() { # guest1 N [qemu args...]: guest 1's QEMU number N, QMP at $WORK/qmp-N
  local n=$1; shift
  guest_net "$WORK/guest1-$n.log" 1 "$WORK/${PORTS[n % 2]}" "$RUN1" \
    -qmp "unix:$WORK/qmp-$n,server=on,wait=off" $RECONNECT "$@"
}

boot() { # a new pair on a new switch: guest 2, then guest 1 (QEMU N) until it reached guest 2
  start_switch "$POLICY" || return 1
  guest_net "$WORK/guest2.log" 2 "$WORK/g2" "$RUN2" $RECONNECT; G2=$SPAWNED
  guest1 "$N"; CUR=$SPAWNED
  wait_for "grep -av 'vqs\.run' $WORK/guest1-$N.log | grep -aq vqs-ping-start" 240 ||
    { WHY="guest 1 never reached guest 2"; return 1; }
  echo "qemu_migrate: guest 1 reached guest 2 after ${SECONDS}s"
}

teardown() { # after a failure: every QEMU and the switch
  local pid
  for pid in $CUR $NEXT $G2; do stop_pid "$pid" TERM; done
  [ -z "$SW" ] || stop_pid "$SW" INT
  SW= G2= CUR= NEXT= N=$((N + 1))
}

run_policy() { # run_policy: one migration under $POLICY; WHY says what failed
  local t0=$SECONDS src dst s0 s1 n got sent lost
  if [ -z "$CUR" ]; then # no pair running: the first policy, or the last one failed
    boot || return 1
  else
    start_switch "$POLICY" || return 1
  fi
  src=$WORK/guest1-$N.log
  n=$(replies "$src" | wc -l)
  wait_for "[ \$(replies $src | wc -l) -ge $((n + 5)) ]" 60 ||
    { WHY="pings did not go on before the migration"; return 1; }
  s0=$(($(last_reply "$src") + 1))
  guest1 $((N + 1)) -incoming "unix:$WORK/migration-$((N + 1))"; NEXT=$SPAWNED
  wait_for "[ -S $WORK/migration-$((N + 1)) ]" 60 || { WHY="the destination QEMU did not listen"; return 1; }
  migrate "$WORK/qmp-$N" "unix:$WORK/migration-$((N + 1))"
  echo "qemu_migrate: $POLICY: migration $MIGRATE_STATUS after $((SECONDS - t0))s of this policy's run"
  [ "$MIGRATE_STATUS" = completed ] || { WHY="migration did not complete ($MIGRATE_STATUS)"; return 1; }
  $QMP "$WORK/qmp-$N" quit >/dev/null 2>&1
  wait "$CUR" 2>/dev/null
  N=$((N + 1)) CUR=$NEXT NEXT=
  dst=$WORK/guest1-$N.log
  wait_for "[ \$(replies $dst | wc -l) -ge $AFTER ]" 120 ||
    { WHY="pings did not go on on the destination ($(replies "$dst" | wc -l) replies)"; return 1; }
  s1=$(last_reply "$dst")
  # Every request from the first one unanswered before the migration to the last one answered
  # on the destination: answered on either side, or lost.
  got=$(replies "$src" "$dst" | awk -v a="$s0" -v b="$s1" '$1 >= a && $1 <= b' | sort -un | wc -l)
  sent=$((s1 - s0 + 1)) lost=$((s1 - s0 + 1 - got))
  echo "qemu_migrate: $POLICY: $got of $sent pings from seq $s0 to $s1 answered across the" \
    "migration ($lost lost), $((SECONDS - t0))s"
  [ "$lost" -le "$MAX_LOST" ] || { WHY="$lost pings lost (at most $MAX_LOST allowed)"; return 1; }
  stop_switch
}

failed=0
for POLICY in $POLICIES; do
  WHY=
  if run_policy; then
    echo "qemu_migrate: $POLICY: PASS"
    interop_result "$POLICY" 0
  else
    echo "qemu_migrate: $POLICY: FAIL: $WHY" >&2
    interop_result "$POLICY" 1
    failed=1
    teardown
  fi
done
for pid in $CUR $G2; do stop_pid "$pid" TERM; done
[ "$failed" -eq 0 ] || fail "under some policy (above)"
echo "qemu_migrate: PASS ($POLICIES) in ${SECONDS}s"
