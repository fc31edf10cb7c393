# Sourced by the interoperability scripts: builds a Debian kernel + busybox initramfs for QEMU
# guests (TCG) whose NICs and disks attach only to the project's own vhost-user backends.
#
#   guest_build CACHE_DIR      -> sets GUEST_KERNEL and GUEST_INITRD (built once, then cached)
#   guest_qemu_accel           -> "kvm" where /dev/kvm really runs guests, else "tcg"
#   guest_net LOG N SOCK RUN [qemu args...] -> spawns a guest (needs $ACCEL; killed after
#                                 GUEST_TIMEOUT_S, default 240 s) at 169.254.0.N with
#                                 one virtio-net NIC on the vhost-user socket SOCK; SPAWNED its pid
#
# The guest's /init reads its job from the kernel command line:
#   vqs.ip=169.254.0.N/16   address of eth0 (link-local: the guests' network is private)
#   vqs.run="shell command" run by busybox sh after eth0 is up; its output goes to the console
# and then powers the guest off. Output lines the scripts look for are printed by vqs.run itself.

GUEST_MODULES="virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci failover net_failover virtio_net virtio_blk"

guest_kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}'
}

guest_build() {
  local cache=$1
  mkdir -p "$cache"
  GUEST_KERNEL=$cache/vmlinuz
  GUEST_INITRD=$cache/initrd.gz
  [ -s "$GUEST_KERNEL" ] && [ -s "$GUEST_INITRD" ] && return 0
  local pkg
  pkg=$(guest_kernel_package)
  [ -n "$pkg" ] || { echo "guest: no linux-image package known to apt" >&2; return 1; }
  local work
  work=$(mktemp -d)
  (cd "$work" && apt-get download "$pkg" >/dev/null 2>&1) || { echo "guest: cannot download $pkg" >&2; rm -rf "$work"; return 1; }
  dpkg-deb -x "$work"/*.deb "$work/k"
  local kver
  kver=$(ls "$work/k/lib/modules")
  cp "$work"/k/boot/vmlinuz-* "$GUEST_KERNEL"

  local root=$work/root
  mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,lib/modules,etc}
  cp /bin/busybox "$root/bin/busybox"
  local m f
  for m in $GUEST_MODULES; do
    f=$(find "$work/k/lib/modules/$kver" -name "$m.ko*" | head -1)
    [ -n "$f" ] || { echo "guest: module $m missing from $pkg" >&2; rm -rf "$work"; return 1; }
    case $f in
      *.xz) xz -dc "$f" >"$root/lib/modules/$m.ko" ;;
      *.zst) zstd -qdc "$f" >"$root/lib/modules/$m.ko" ;;
      *) cp "$f" "$root/lib/modules/$m.ko" ;;
    esac
  done
  # iperf3 and the libraries it loads, so two guests can measure TCP between them.
  local bin lib
  for bin in /usr/bin/iperf3; do
    [ -x "$bin" ] || continue
    cp "$bin" "$root/bin/"
    for lib in $(ldd "$bin" | awk '/=>/ {print $3} /^\t\/lib/ {print $1}'); do
      mkdir -p "$root$(dirname "$lib")"
      cp -L "$lib" "$root$lib"
    done
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
  sed -i "s/MODULES/$(echo $GUEST_MODULES | tr '\n' ' ')/" "$root/init"
  chmod +x "$root/init"
  (cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$GUEST_INITRD"
  rm -rf "$work"
  [ -s "$GUEST_INITRD" ]
}

guest_qemu_accel() { # needs GUEST_KERNEL/GUEST_INITRD from guest_build
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
  spawn "$log" timeout "${GUEST_TIMEOUT_S:-240}" qemu-system-x86_64 -accel "$ACCEL" -m 512 -smp 1 \
    -nographic -monitor none -no-reboot -nic none \
    -kernel "$GUEST_KERNEL" -initrd "$GUEST_INITRD" \
    -append "console=ttyS0 quiet vqs.ip=169.254.0.$n/16 vqs.run=\"$run\"" \
    -object memory-backend-memfd,id=mem,size=512M,share=on -numa node,memdev=mem \
    -chardev socket,id=c0,path="$sock" -netdev vhost-user,id=n0,chardev=c0 \
    -device virtio-net-pci,netdev=n0,mac=52:54:00:00:00:0$n,vectors=0 "$@"
}
