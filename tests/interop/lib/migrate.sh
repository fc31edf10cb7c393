# Sourced by the live migration scripts (after common.sh and guest.sh): QMP from the shell and a
# migration driven to its end.
#
#   migrate_setup            -> QMP (the client command); skips without python3
#   migration SOCK           -> prints "STATUS SYNCS" of the migration QEMU at QMP socket SOCK
#                               runs (SYNCS: its passes over the dirty bitmap so far)
#   migrate SOCK URI [HOOK]  -> starts the migration to URI and polls it every 0.5 s, up to
#                               10 minutes, until it completed, failed or was cancelled; HOOK, a
#                               function, is called with STATUS and SYNCS after each poll.
#                               Sets MIGRATE_STATUS and MIGRATE_SYNCS; fails the script when
#                               QEMU refuses to start it

migrate_setup() {
  command -v python3 >/dev/null || interop_skip "python3 (the QMP client) not installed"
  QMP="python3 $(dirname "${BASH_SOURCE[0]}")/qmp.py"
}

migration() { # migration SOCK
  $QMP "$1" query-migrate | python3 -c 'import json,sys; m = json.load(sys.stdin)
print(m.get("status", "?"), m.get("ram", {}).get("dirty-sync-count", 0))'
}

migrate() { # migrate SOCK URI [HOOK]
  local sock=$1 uri=$2 hook=${3:-}
  $QMP "$sock" migrate "{\"uri\": \"$uri\"}" >/dev/null ||
    fail "QMP migrate refused (a migration blocker?)"
  MIGRATE_STATUS= MIGRATE_SYNCS=0
  for _ in $(seq 1200); do
    read -r MIGRATE_STATUS MIGRATE_SYNCS < <(migration "$sock")
    case $MIGRATE_STATUS in completed | failed | cancelled) return ;; esac
    [ -n "$hook" ] && "$hook" "$MIGRATE_STATUS" "$MIGRATE_SYNCS"
    sleep 0.5
  done
}
