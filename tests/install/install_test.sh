#!/usr/bin/env bash
# install_test.sh MODE BUILD_DIR SOURCE_DIR [SANITIZERS]
# Installs BUILD_DIR into a scratch prefix, then builds examples/quickstart/quickstart.c against
# the installed files only; each program must run and complete its round trip.
#   MODE=consumers: pkg-config (shared) and a CMake project using find_package(vqsched) (shared
#     and static); also checks that libvqsched.so exports nothing but vqs_* and that the public
#     headers stand alone as strict C11.
#   MODE=static-pkgconfig: `pkg-config --static` with libvqsched.a. Exits 77 (skipped) when a
#     library a dependency's .pc names is not installed (Debian's hwloc.pc asks for -ludev, which
#     only libudev-dev provides): that is the machine's gap, not vqsched's.
set -euo pipefail
mode=$1
build=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
san=${4:-}
cc=${CC:-cc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
quickstart=$src/examples/quickstart/quickstart.c
expect='pong to "ping"'
sanflags=()
[ -n "$san" ] && sanflags=("-fsanitize=$san" -fno-omit-frame-pointer)

step() { printf '== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*" >&2; exit 1; }
runs_ok() { # runs_ok NAME CMD...: the program must print the reply
  local name=$1 out; shift
  out=$("$@" 2>&1) || fail "$name exited with $?: $out"
  grep -qF "$expect" <<<"$out" || fail "$name did not complete the round trip: $out"
  printf '%s: %s\n' "$name" "$(grep -F "$expect" <<<"$out")"
}

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" ||
  { cat "$tmp/install.log"; exit 1; }
pc=$(find "$prefix" -name vqsched.pc -print -quit)
[ -n "$pc" ] || fail "vqsched.pc not installed"
libdir=$(dirname "$(dirname "$pc")")
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
includedir=$(pkg-config --variable=includedir vqsched)
grep -qF "$prefix" <<<"$(realpath -m "$includedir")" ||
  fail "vqsched.pc does not point into the prefix it was installed to"
cflags=$(pkg-config --cflags vqsched)

case $mode in
  consumers)
    step "exported symbols of the shared library"
    # Defined dynamic symbols, minus the version node itself (type A): all must be vqs_*.
    exports=$(nm -D --defined-only "$libdir/libvqsched.so" | awk '$2 != "A" {print $3}' |
      sed 's/@.*//')
    foreign=$(grep -v '^vqs_' <<<"$exports" || true)
    [ -z "$foreign" ] ||
      fail "libvqsched.so exports non-vqs_ symbols: $(tr '\n' ' ' <<<"$foreign")"
    grep -qx vqs_mem_translate <<<"$exports" || fail "libvqsched.so does not export the API"

    step "public headers alone, strict C11"
    printf '#include <vqsched/vqsched.h>\nint main(void) { return VQS_CHECK_VERSION(); }\n' \
      >"$tmp/hdr.c"
    # shellcheck disable=SC2086 # flag lists split on purpose
    "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only $cflags "$tmp/hdr.c" ||
      fail "public headers do not compile as plain C11"

    step "pkg-config, shared"
    libs=$(pkg-config --libs vqsched)
    # shellcheck disable=SC2086 # flag lists split on purpose
    "$cc" "${sanflags[@]}" -o "$tmp/qs_shared" "$quickstart" $cflags $libs
    soname=$(readelf -d "$libdir/libvqsched.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
    [[ $soname =~ ^libvqsched\.so\.[0-9]+$ ]] || fail "libvqsched.so has no versioned SONAME"
    grep -qE "NEEDED.*\[${soname//./\\.}\]" <<<"$(readelf -d "$tmp/qs_shared")" ||
      fail "shared build does not use $soname"
    runs_ok "pkg-config shared" env LD_LIBRARY_PATH="$libdir" "$tmp/qs_shared"

    step "find_package(vqsched)"
    cflags_cmake="${sanflags[*]}"
    # the version this tree is: the package accepts the same 0.minor only
    want=$(sed -n 's/^project(vqsched VERSION \([0-9]*\.[0-9]*\).*/\1/p' "$src/CMakeLists.txt")
    [ -n "$want" ] || fail "no project version in $src/CMakeLists.txt"
    if ! cmake -S "$src/tests/install/consumer" -B "$tmp/consumer" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" -DQUICKSTART_SOURCE="$quickstart" \
      -DVQSCHED_WANT="$want" \
      -DCMAKE_C_FLAGS="$cflags_cmake" -DCMAKE_EXE_LINKER_FLAGS="$cflags_cmake" \
      >"$tmp/consumer.log" 2>&1 || ! cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1; then
      cat "$tmp/consumer.log"
      fail "find_package consumer did not build"
    fi
    runs_ok "find_package shared" env LD_LIBRARY_PATH="$libdir" "$tmp/consumer/quickstart_shared"
    if grep -q 'NEEDED.*libvqsched' <<<"$(readelf -d "$tmp/consumer/quickstart_static")"; then
      fail "vqsched::vqsched_static still needs libvqsched.so"
    fi
    runs_ok "find_package static" "$tmp/consumer/quickstart_static"
    step "find_package(vqsched) of the next 0.minor is refused"
    next="${want%%.*}.$((${want#*.} + 1))"
    if cmake -S "$src/tests/install/consumer" -B "$tmp/consumer-next" -DCMAKE_C_COMPILER="$cc" \
      -DCMAKE_PREFIX_PATH="$prefix" -DQUICKSTART_SOURCE="$quickstart" -DVQSCHED_WANT="$next" \
      >"$tmp/consumer-next.log" 2>&1; then
      fail "find_package(vqsched $next) accepted version $want"
    fi
    ;;
  static-pkgconfig)
    step "pkg-config --static"
    libs=$(pkg-config --static --libs vqsched)
    # shellcheck disable=SC2013 # one library name per word
    for lib in $(grep -oE '(^| )-l[^ ]+' <<<"$libs" | sed 's/ *-l//' | sort -u); do
      [ "$lib" = vqsched ] && continue
      for f in "lib$lib.so" "lib$lib.a"; do
        [ "$("$cc" -print-file-name="$f")" != "$f" ] && continue 2
      done
      echo "skipped: -l$lib (named by a dependency's .pc) is not installed"
      exit 77
    done
    # shellcheck disable=SC2086 # flag lists split on purpose
    "$cc" "${sanflags[@]}" -o "$tmp/qs_static" "$quickstart" $cflags \
      ${libs//-lvqsched/-l:libvqsched.a}
    if grep -q 'NEEDED.*libvqsched' <<<"$(readelf -d "$tmp/qs_static")"; then
      fail "static build still needs libvqsched.so"
    fi
    runs_ok "pkg-config static" "$tmp/qs_static"
    ;;
  *) fail "unknown mode $mode" ;;
esac
step "ok"
