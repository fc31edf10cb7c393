#!/usr/bin/env bash
# Install whatever of the named Debian packages is missing (default: what building and testing
# vqsched needs). Runs apt-get update only when something has to be installed. Prints one line
# saying what it installs; apt's own output goes to a log shown only when the install fails.
set -euo pipefail
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
  pkgs=(build-essential cmake pkg-config liburcu-dev libnuma-dev libhwloc-dev libcmocka-dev
        clang libclang-rt-14-dev gnuplot-nox libudev-dev)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "installing: ${missing[*]}" >&2
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! { "${sudo_cmd[@]}" apt-get update -qq &&
       "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
     >"$log" 2>&1 </dev/null; then
  tail -40 "$log" >&2
  echo "installing ${missing[*]} failed" >&2
  exit 1
fi
