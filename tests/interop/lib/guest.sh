# Sourced by the interoperability scripts (after common.sh): a Debian kernel + busybox initramfs
# for QEMU guests (TCG) whose NICs and disks attach only to the project's own vhost-user backends.
#
#   guest_setup TOOL...  -> installs QEMU and what the guest is built from, then sets
#                           GUEST_KERNEL, GUEST_INITRD (cached) and GUEST_ACCEL (kvm or tcg);
#                           fails when a TOOL the caller's guests run is not in the initramfs
#   guest_net LOG N SOCK RUN [qemu args...] -> spawns a guest (after guest_setup; killed after
#                           GUEST_TIMEOUT_S, default 240 s) at 169.254.0.N with one virtio-net
#                           NIC on the vhost-user socket SOCK; SPAWNED is its pid
#
# Every guest is the same image, with every tool any script's guests run (GUEST_TOOLS), so which
# script builds it first does not matter. The cache directory is named after a hash of what went
# into the image (this file, the kernel package and version, the host files copied in), so a
# changed input builds a new image; an image is built in a scratch directory and renamed into
# place whole, so an interrupted build leaves nothing that looks complete.
#
# The guest's /init reads its job from the kernel command line:
#   vqs.ip=169.254.0.N/16   address of eth0 (link-local: the guests' network is private)
#   vqs.run="shell command" run by busybox sh after eth0 is up; its output goes to the console
# and then powers the guest off. Output lines the scripts look for are printed by vqs.run itself.

GUEST_MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover net_failover virtio_net virtio_blk"
GUEST_TOOLS="/usr/bin/iperf3"
GUEST_PACKAGES="qemu-system-x86 busybox-static iperf3 xz-utils zstd cpio"
GUEST_CACHE=${VQS_GUEST_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/vqsched/guest}
GUEST_SH=$(readlink -f "${BASH_SOURCE[0]}")

guest_kernel_package() { # the kernel package linux-image-amd64 stands for, and its version
  local pkg
  pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [ -n "$pkg" ] || return 1
  echo "$pkg=$(apt-cache show --no-all-versions "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | head -1)"
}

guest_host_files() { # busybox, the tools and the libraries they load: what is copied into the image
  local bin
  echo /bin/busybox
  for bin in $GUEST_TOOLS; do
    echo "$bin"
    ldd "$bin" | awk '/=>/ {print $3} /^\t\/lib/ {print $1}'
  done
}

guest_key() { # guest_key KERNEL-PKG=VERSION: names the cache entry after every input
  { sha256sum "$GUEST_SH" | cut -d' ' -f1
    echo "$1"
    guest_host_files | sort -u | xargs sha256sum
  } | sha256sum | cut -c1-16
}

guest_build_into() { # guest_build_into DIR KERNEL-PKG=VERSION
  local dir=$1 pkgver=$2 work
  work=$(mktemp -d)
  (cd "$work" && apt-get download "$pkgver" >/dev/null 2>&1) ||
    { echo "guest: cannot download $pkgver" >&2; rm -rf "$work"; return 77; }
  dpkg-deb -x "$work"/*.deb "$work/k"
  local kver
  kver=$(ls "$work/k/lib/modules")
  cp "$work"/k/boot/vmlinuz-* "$dir/vmlinuz"

  local root=$work/root m f
  mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,lib/modules,etc}
  for m in $GUEST_MODULES; do
    f=$(find "$work/k/lib/modules/$kver" -name "$m.ko*" | head -1)
    [ -n "$f" ] || { echo "guest: module $m missing from $pkgver" >&2; rm -rf "$work"; return 1; }
    case $f in
      *.xz) xz -dc "$f" >"$root/lib/modules/$m.ko" ;;
      *.zst) zstd -qdc "$f" >"$root/lib/modules/$m.ko" ;;
      *) cp "$f" "$root/lib/modules/$m.ko" ;;
    esac
  done
  for f in $(guest_host_files | sort -u); do
    mkdir -p "$root$(dirname "$f")"
    cp -L "$f" "$root$f"
  done
  cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
for m in MODULES; do insmod /lib/modules/$m.ko 2>/dev/null; done
ip=$(sed -n 's/.*vqs\.ip=\([^ ]*\).*/\1/p' /proc/cmdline)
run=$(sed -n 's/.*vqs\.run="\([^"]*\)".*/\1/p' /proc/cmdline)
echo "vqs-guest: init up, ip=$ip"
if [ -n "$ip" ]; then
  ip link set lo up
  ip link set eth0 up && ip addr add "$ip" dev eth0 && echo "vqs-guest: eth0 up"
fi
sh -c "$run"
echo "vqs-guest: done rc=$?"
poweroff -f
INIT
  sed -i "s/MODULES/$GUEST_MODULES/" "$root/init"
  chmod +x "$root/init"
  (cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$dir/initrd.gz"
  rm -rf "$work"
}

guest_image() { # guest_image: the cached image for today's inputs, built when there is none
  local pkgver key dir tmp rc
  pkgver=$(guest_kernel_package)
  if [ -z "$pkgver" ]; then # apt never updated on this machine: its lists know no kernel
    local sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq >/dev/null 2>&1
    pkgver=$(guest_kernel_package) || { echo "guest: no linux-image package known to apt" >&2; return 77; }
  fi
  key=$(guest_key "$pkgver")
  dir=$GUEST_CACHE/$key
  if [ ! -s "$dir/vmlinuz" ] || [ ! -s "$dir/initrd.gz" ]; then
    echo "guest: building the image for $pkgver in $dir" >&2
    mkdir -p "$GUEST_CACHE"
    tmp=$(mktemp -d "$GUEST_CACHE/.build.XXXXXX")
    guest_build_into "$tmp" "$pkgver"; rc=$?
    [ $rc -eq 0 ] || { rm -rf "$tmp"; return $rc; }
    # A concurrent run may have put the same image there first: either copy will do.
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
    # Images of older inputs (and the unkeyed layout of older scripts) are never used again,
    # nor are builds a killed run left (a build takes seconds to minutes, never an hour).
    find "$GUEST_CACHE" -mindepth 1 -maxdepth 1 ! -name "$key" \
      \( ! -name '.build.*' -o -mmin +60 \) -exec rm -rf {} +
  fi
  GUEST_KERNEL=$dir/vmlinuz
  GUEST_INITRD=$dir/initrd.gz
}

guest_setup() { # guest_setup TOOL...: see the top of this file
  need_peer_packages $GUEST_PACKAGES
  command -v qemu-system-x86_64 >/dev/null || interop_skip "qemu-system-x86_64 not installed"
  guest_image
  case $? in
    0) ;;
    77) interop_skip "cannot fetch the guest kernel" ;;
    *) fail "cannot build the guest kernel and initramfs" ;;
  esac
  local listing t
  listing=$(gzip -dc "$GUEST_INITRD" | cpio -t --quiet)
  for t in busybox "$@"; do
    grep -qE "(^|/)bin/$t\$" <<<"$listing" || fail "the guest image has no $t (add it to GUEST_TOOLS)"
  done
  GUEST_ACCEL=$(guest_qemu_accel)
  echo "$INTEROP_NAME: accel=$GUEST_ACCEL image=$GUEST_INITRD"
}

guest_qemu_accel() { # needs GUEST_KERNEL/GUEST_INITRD from guest_image
  # /dev/kvm can open without running guests (here its module is a paravirtual one and the CPU
  # has no vmx): use KVM only when the CPU has the extension and a guest really boots with it.
  if [ -w /dev/kvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo &&
     timeout 60 qemu-system-x86_64 -accel kvm -m 256 -nic none -nographic -no-reboot -kernel "$GUEST_KERNEL" \
       -initrd "$GUEST_INITRD" -append 'console=ttyS0 quiet vqs.run="echo vqs-kvm-works"' \
       </dev/null 2>/dev/null | grep -q vqs-kvm-works; then
    echo kvm
  else
    echo tcg
  fi
}

guest_net() { # guest_net LOG N SOCK RUN [qemu args...]: memfd memory shared with the backend
  local log=$1 n=$2 sock=$3 run=$4
  shift 4
  spawn "$log" timeout "${GUEST_TIMEOUT_S:-240}" qemu-system-x86_64 -accel "$GUEST_ACCEL" -m 512 -smp 1 \
    -nographic -monitor none -no-reboot -nic none \
    -kernel "$GUEST_KERNEL" -initrd "$GUEST_INITRD" \
    -append "console=ttyS0 quiet vqs.ip=169.254.0.$n/16 vqs.run=\"$run\"" \
    -object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
    -chardev socket,id=c0,path="$sock" -netdev vhost-user,id=n0,chardev=c0 \
    -device virtio-net-pci,netdev=n0,mac=52:54:00:00:00:0$n,vectors=0 "$@"
}
