#!/usr/bin/env bash
# The main command: install what is missing, build vqs-bench (Release, build/bench), run the
# default preset, and leave the report in results/: bench.txt (the table), bench.json, bench.csv
# and plots/*.png. Extra arguments go to vqs-bench (e.g. --quick, --preset sweep, --repeat 5).
# Exit status: vqs-bench's (non-zero when a request was lost, duplicated or corrupted).
#   Compare two runs:  build/bench/bench/vqs-bench compare results/base.json results/bench.json
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
# only what the library and the benchmark need (not the test suite's cmocka and clang)
bash scripts/deps.sh build-essential cmake pkg-config liburcu-dev libnuma-dev libhwloc-dev gnuplot-nox
mkdir -p build
jobs=$(nproc)
[ "$jobs" -gt 2 ] || jobs=2
cmake -S . -B build/bench -DCMAKE_BUILD_TYPE=Release -DVQS_BUILD_TESTS=OFF \
  -DVQS_BUILD_EXAMPLES=OFF -DVQS_BUILD_BENCH=ON >build/bench.configure.log 2>&1 ||
  { cat build/bench.configure.log; exit 1; }
cmake --build build/bench -j"$jobs" --target vqs-bench >build/bench.build.log 2>&1 ||
  { tail -60 build/bench.build.log; exit 1; }
built=$(date +%s)
mkdir -p results
set +e
build/bench/bench/vqs-bench --preset default --json results/bench.json --csv results/bench.csv \
  --plot results/plots "$@" | tee results/bench.txt
rc=${PIPESTATUS[0]}
set -e
end=$(date +%s)
echo "scripts/bench.sh: build $((built - start)) s, benchmark $((end - built)) s, total $((end - start)) s;" \
  "report in results/ (bench.txt, bench.json, bench.csv, plots/)"
exit "$rc"
