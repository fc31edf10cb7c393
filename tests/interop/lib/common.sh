# Sourced by the interoperability scripts: a private scratch directory, the processes this script
# started (and only those) killed on exit, waiting helpers, and DPDK's testpmd with the options
# that work on this machine (../../../../shared/INTEROP.md: no hugepages, no PCI, own file prefix).
#
#   interop_init NAME        -> $WORK (mktemp -d), $SWITCH and $BLK checked, trap set
#   interop_skip MSG         -> exit 77 (the peer truly cannot run here)
#   interop_policies DEFAULT -> $POLICIES: the scheduler policies the script is to run under
#   interop_result POLICY RC -> reports one policy's result to scripts/test.sh
#   spawn LOG cmd...         -> runs cmd in the background, $! remembered, echo its pid
#   stop_pid PID [SIG]       -> signal one of our processes and wait for it (bounded)
#   wait_for CMD SECONDS     -> poll a shell condition
#   testpmd NAME LOG args... -> spawns dpdk-testpmd with a unique --file-prefix; NAME tags it
#   build_vu_peer            -> $WORK/vu_peer, the library's frontend checking returned frames

INTEROP_PIDS=()

interop_cleanup() {
  local pid
  for pid in "${INTEROP_PIDS[@]}"; do
    kill -0 "$pid" 2>/dev/null && kill -TERM "$pid" 2>/dev/null
  done
  for pid in "${INTEROP_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  done
  [ -n "${WORK:-}" ] && [ -z "${VQS_KEEP:-}" ] && rm -rf "$WORK"
}

interop_init() {
  INTEROP_NAME=$1
  VQS_BUILD_DIR=${VQS_BUILD_DIR:-build/test-plain}
  case $VQS_BUILD_DIR in /*) ;; *) VQS_BUILD_DIR=$PWD/$VQS_BUILD_DIR ;; esac
  SWITCH=$VQS_BUILD_DIR/examples/vqs-switch/vqs-switch
  BLK=$VQS_BUILD_DIR/examples/vqs-blk/vqs-blk
  local p
  for p in "$SWITCH" "$BLK"; do
    [ -x "$p" ] || { echo "$INTEROP_NAME: $p not built (set VQS_BUILD_DIR)" >&2; exit 1; }
  done
  WORK=$(mktemp -d "/tmp/vqs-$INTEROP_NAME.XXXXXX")
  trap interop_cleanup EXIT
  trap 'exit 130' INT TERM
  SECONDS=0
}

# scripts/test.sh runs a script whose header holds the line "# vqs-interop: every policy" with
# VQS_INTEROP_POLICIES set to every policy and records what the script reports for each policy
# (interop_result, into the file VQS_INTEROP_RESULTS) as a result of its own. By hand,
# VQS_INTEROP_POLICIES="pool poll" picks policies; without it a script runs under DEFAULT.
interop_policies() { # interop_policies DEFAULT
  POLICIES=${VQS_INTEROP_POLICIES:-$1}
  echo "$INTEROP_NAME: policies $POLICIES"
}

interop_result() { # interop_result POLICY RC
  [ -z "${VQS_INTEROP_RESULTS:-}" ] || echo "$1 $2" >>"$VQS_INTEROP_RESULTS"
}

interop_skip() {
  echo "$INTEROP_NAME: skipped: $*" >&2
  exit 77
}

fail() {
  echo "$INTEROP_NAME: FAIL: $*" >&2
  exit 1
}

spawn() { # spawn LOG cmd... ; sets SPAWNED
  local log=$1; shift
  "$@" >"$log" 2>&1 </dev/null &
  SPAWNED=$!
  INTEROP_PIDS+=("$SPAWNED")
}

stop_pid() { # stop_pid PID [SIGNAL]: signal one of our processes, wait up to 20 s
  local pid=$1 sig=${2:-INT}
  kill -"$sig" "$pid" 2>/dev/null || return 0
  for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    echo "$INTEROP_NAME: pid $pid did not stop on SIG$sig" >&2
    kill -KILL "$pid" 2>/dev/null
    return 1
  fi
  wait "$pid" 2>/dev/null
  return 0
}

wait_for() { # wait_for 'shell condition' SECONDS
  local cond=$1 limit=$2 i
  for ((i = 0; i < limit * 10; i++)); do
    eval "$cond" && return 0
    sleep 0.1
  done
  return 1
}

need_peer_packages() { # install the peer; exit 77 only when that is impossible
  bash "$(dirname "${BASH_SOURCE[0]}")/../../../scripts/deps.sh" "$@" ||
    interop_skip "cannot install $*"
}

build_vu_peer() {
  local libdir
  libdir=$(dirname "$(find "$VQS_BUILD_DIR" -maxdepth 1 -name 'libvqsched.so' | head -1)")
  cc -std=gnu11 -O2 -Wall -Iinclude -I"$VQS_BUILD_DIR/include" tests/interop/vu_peer.c \
    -L"$libdir" -lvqsched -Wl,-rpath,"$libdir" -o "$WORK/vu_peer" || fail "cannot build vu_peer"
}

TESTPMD_N=0
testpmd_argv() { # testpmd_argv LCORES -> TESTPMD_ARGV: the command up to its own arguments
  TESTPMD_N=$((TESTPMD_N + 1))
  TESTPMD_ARGV=(dpdk-testpmd --no-huge -m 1024 --no-pci --no-shconf --no-telemetry
    --file-prefix="vqs-$INTEROP_NAME-$$-$TESTPMD_N" --lcores "$1")
}

testpmd() { # testpmd LOG LCORES EAL-VDEV-ARGS... -- TESTPMD-ARGS...
  local log=$1 lcores=$2; shift 2
  testpmd_argv "$lcores"
  spawn "$log" "${TESTPMD_ARGV[@]}" "$@"
}

# An interactive testpmd (pass -i after --) reading its commands from a FIFO whose write end is
# fd $CTL_FD: `echo stop >&$CTL_FD` stops its traffic while its ports stay connected.
testpmd_ctl() { # testpmd_ctl LOG LCORES EAL-VDEV-ARGS... -- -i TESTPMD-ARGS... -> SPAWNED, CTL_FD
  local log=$1 lcores=$2 fifo; shift 2
  testpmd_argv "$lcores"
  fifo=$(mktemp -u "$WORK/ctl.XXXXXX")
  mkfifo "$fifo"
  # line-buffered: its answers are read from the log while it runs
  stdbuf -oL "${TESTPMD_ARGV[@]}" "$@" <"$fifo" >"$log" 2>&1 &
  SPAWNED=$!
  INTEROP_PIDS+=("$SPAWNED")
  exec {CTL_FD}>"$fifo"
}

# Counter `key` (rx_frames, drop_no_buffers, ...) of port N from the switch's last printout.
switch_counter() { # switch_counter LOG PORT KEY
  grep -a "port=$2 " "$1" | tail -1 | tr ' ' '\n' | sed -n "s/^$3=//p"
}

# testpmd's per-port totals printed when it stops: "RX-packets: N" / "TX-packets: N".
testpmd_total() { # testpmd_total LOG RX|TX
  grep -a -oE "$2-packets: *[0-9]+" "$1" | tail -1 | grep -oE '[0-9]+$'
}
