#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: installs what is missing, then builds and
# runs the cmocka suite three times (plain, ASan+UBSan, TSan), runs each libFuzzer target for a
# short fixed time, and runs the interoperability scripts (DPDK, QEMU), which install their peers.
#
#   VQS_TEST_STAGES="plain asan tsan fuzz interop"   which stages to run (default: all)
#   VQS_FUZZ_SECONDS=20                                seconds per fuzz target
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh || { echo "dependency installation failed" >&2; exit 1; }

stages=${VQS_TEST_STAGES:-"plain asan tsan fuzz interop"}
fuzz_seconds=${VQS_FUZZ_SECONDS:-20}
jobs=$(nproc)
passed=0 failed=0 skipped=0
failures=()

note() { printf '\n=== %s\n' "$*"; }
record() { # record NAME RC
  case $2 in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)) ;;
    *) failed=$((failed + 1)); failures+=("$1") ;;
  esac
}

build() { # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >"$dir.configure.log" 2>&1 &&
    cmake --build "$dir" -j"$jobs" >"$dir.build.log" 2>&1 ||
    { cat "$dir.configure.log" "$dir.build.log" 2>/dev/null | tail -60; return 1; }
}

suite() { # suite NAME [cmake args...]: build and run ctest; one record per ctest test
  local name=$1; shift
  local dir=build/test-$name
  mkdir -p build
  note "suite $name: building"
  if ! build "$dir" "$@"; then record "suite-$name (build)" 1; return; fi
  note "suite $name: ctest"
  (cd "$dir" && ctest --output-on-failure -j"$jobs" --timeout 300 --output-junit junit.xml) |
    tee "$dir.ctest.log"
  ctest_tally "$name" "$dir.ctest.log"
}

# One suite's ctest summary into the totals: "N% tests passed, F tests failed out of T" counts
# skipped tests (SKIP_RETURN_CODE) as passed; they are listed under "The following tests did
# not run:" as "  N - name (Skipped)".
ctest_tally() { # ctest_tally NAME LOG
  local t f s
  t=$(grep -oE 'tests failed out of [0-9]+' "$2" | tail -1 | awk '{print $5}')
  f=$(grep -oE '[0-9]+ tests failed out of' "$2" | tail -1 | awk '{print $1}')
  if [ -z "$t" ]; then record "suite-$1 (ctest did not finish)" 1; return; fi
  s=$(grep -cE '^[[:space:]]+[0-9]+ - .* \(Skipped\)$' "$2")
  passed=$((passed + t - f - s))
  failed=$((failed + f))
  skipped=$((skipped + s))
  [ "$f" -eq 0 ] || failures+=("suite-$1: $f of $t")
}

fuzz() {
  note "fuzz: building with clang"
  local dir=build/test-fuzz
  mkdir -p build
  if ! CC=clang build "$dir" -DVQS_BUILD_FUZZ=ON -DVQS_BUILD_BENCH=OFF -DVQS_BUILD_EXAMPLES=OFF; then
    record "fuzz (build)" 1; return
  fi
  local bin
  for bin in "$dir"/tests/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    local name corpus
    name=$(basename "$bin")
    corpus=$(mktemp -d)
    cp tests/fuzz/corpus/"${name#fuzz_}"/* "$corpus"/ 2>/dev/null || true
    note "fuzz: $name for ${fuzz_seconds}s"
    local dict=()
    [ -f tests/fuzz/"$name".dict ] && dict=(-dict=tests/fuzz/"$name".dict)
    "$bin" -max_total_time="$fuzz_seconds" -print_final_stats=1 "${dict[@]}" "$corpus" \
      >"$dir/$name.log" 2>&1
    local rc=$?
    grep -E 'stat::number_of_executed_units|stat::new_units_added|cov:' "$dir/$name.log" | tail -3
    [ $rc -eq 0 ] || tail -40 "$dir/$name.log"
    record "$name" $rc
    rm -rf "$corpus"
  done
}

# A script whose header holds "# vqs-interop: every policy" runs once with VQS_INTEROP_POLICIES
# set to every scheduler policy and reports each policy's result into VQS_INTEROP_RESULTS
# (tests/interop/lib/common.sh): each is recorded as a result of its own, named after the
# policy; a policy it reported nothing for (the script stopped before) counts as failed.
interop_policies="dedicated pool poll adaptive"
interop() {
  local s p rc prc res all
  for s in tests/interop/*.sh; do
    [ -f "$s" ] || continue
    note "interop: $s"
    if ! grep -q '^# vqs-interop: every policy$' "$s"; then
      VQS_BUILD_DIR=build/test-plain timeout 900 bash "$s"
      rc=$?
      [ $rc -eq 77 ] && echo "skipped: $s"
      record "$s" $rc
      continue
    fi
    res=$(mktemp)
    VQS_INTEROP_POLICIES=$interop_policies VQS_INTEROP_RESULTS=$res \
      VQS_BUILD_DIR=build/test-plain timeout 900 bash "$s"
    rc=$?
    if [ $rc -eq 77 ]; then
      echo "skipped: $s"
      record "$s" 77
    else
      all=0
      for p in $interop_policies; do
        prc=$(awk -v p="$p" '$1 == p {print $2}' "$res" | tail -1)
        [ -n "$prc" ] || { echo "$s: no result for policy $p (the script stopped: rc $rc)"; prc=1; }
        record "$s (policy $p)" "$prc"
        [ "$prc" -eq 0 ] || all=1
      done
      # every policy passed, yet the script failed (e.g. while stopping what it started)
      [ $rc -eq 0 ] || [ $all -ne 0 ] || record "$s" $rc
    fi
    rm -f "$res"
  done
}

for stage in $stages; do
  case $stage in
    plain) suite plain ;;
    asan) VQS_TEST_SCALE=4 suite asan -DVQS_SANITIZE=address,undefined -DVQS_BUILD_BENCH=OFF ;;
    tsan) VQS_TEST_SCALE=10 suite tsan -DVQS_SANITIZE=thread -DVQS_BUILD_BENCH=OFF ;;
    fuzz) fuzz ;;
    interop) interop ;;
    *) echo "unknown stage $stage" >&2; record "stage $stage" 1 ;;
  esac
done

note "summary"
for f in "${failures[@]}"; do echo "FAILED: $f"; done
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
