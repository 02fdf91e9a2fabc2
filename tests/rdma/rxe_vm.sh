#!/usr/bin/env bash
# rxe_vm.sh — Soft-RoCE (rdma_rxe) test VM for hosts whose own kernel has no RDMA.
#
# tutti's copy of the harness in ../shared/rdma-vm (issue 8), so a clean checkout runs its RDMA
# tests; changed here: the default mirror no longer fails where /etc/apt/sources.list is absent
# (Debian 12 images keep only sources.list.d/debian.sources), and the guest also gets the
# run-time libraries of tutti's programs built on the host (hwloc, libsodium, Criterion).
#
# Builds a Debian 12 guest from scratch (debootstrap -> raw ext4 image, no loop
# mount needed) and boots it with qemu-system-x86_64 under TCG (KVM is unusable
# on this host, see accel_opts) using the guest's own /boot/vmlinuz + initrd,
# no network device at all (-nic none). A run-once
# init script (PID 1 in the guest) mounts a per-run 9p share, optionally sets
# up rdma_rxe, runs your command, streams its output to the serial console and
# writes output + exit status back to the host. The image is never modified by
# a run (-drive snapshot=on).
#
# Usage:
#   rxe_vm.sh build                       # build image (host pkgs: qemu-system-x86 debootstrap e2fsprogs)
#   rxe_vm.sh finalize                    # only re-write guest scripts + initramfs + ext4 image from $DIR/rootfs
#   rxe_vm.sh run [-s HOSTDIR] [-n] [-t SECS] -- 'shell command'
#       -s HOSTDIR  share HOSTDIR read-write into guest at /mnt/host (9p, cwd there)
#       -n          do NOT set up rxe (default: rxe0 on veth0 10.99.0.1, rxe1 on veth1 10.99.0.2,
#                   policy routing so rxe0<->rxe1 traffic really crosses the veth pair)
#       -t SECS     timeout for the whole VM (default 600)
#     exit status of 'run' = exit status of the command inside the guest
#     (124 = VM timed out, 125 = VM died without reporting a status)
#   rxe_vm.sh selftest                    # ibv_devices/devinfo, ib_write_bw (1-dev loopback, 2-dev), rping, ucmatose, ib_send_lat -R, netem
#
# Env: RXEVM_DIR (default /tmp/rxevm) holds rootfs/, rootfs.img, vmlinuz, initrd.img
#      RXEVM_MEM (default 2048), RXEVM_SMP (default 2), RXEVM_ACCEL (tcg|kvm, default tcg; see accel_opts)
#      RXEVM_MIRROR (default: the first Debian archive URI in this machine's apt sources)
set -euo pipefail

DIR=${RXEVM_DIR:-/tmp/rxevm}
MEM=${RXEVM_MEM:-2048}
SMP=${RXEVM_SMP:-2}
default_mirror() {
  # the machine's own Debian archive, as apt is configured here (either file may be missing)
  local m=""
  m=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1) || true
  [ -n "$m" ] || m=$(sed -n 's/^deb[[:space:]]\+\([^[:space:]]*\/debian\)[[:space:]].*/\1/p' /etc/apt/sources.list 2>/dev/null | head -n 1) || true
  echo "${m:-http://deb.debian.org/debian}"
}
MIRROR=${RXEVM_MIRROR:-$(default_mirror)}
SUITE=bookworm
GUEST_PKGS=linux-image-amd64,initramfs-tools,kmod,udev,rdma-core,ibverbs-utils,perftest,rdmacm-utils,infiniband-diags,iproute2,build-essential,pkg-config,libibverbs-dev,librdmacm-dev,procps,iputils-ping,less,libhwloc15,libsodium23,libcriterion3

log() { printf '[rxe_vm %(%T)T] %s\n' -1 "$*" >&2; }

write_guest_files() {
  local R=$1
  echo rxevm > "$R/etc/hostname"
  printf '127.0.0.1 localhost\n127.0.1.1 rxevm\n' > "$R/etc/hosts"
  printf '/dev/vda / ext4 rw,relatime 0 1\n' > "$R/etc/fstab"
  # make sure the initramfs can mount a virtio-blk ext4 root and 9p
  grep -q '^9pnet_virtio' "$R/etc/initramfs-tools/modules" ||
    printf 'virtio_pci\nvirtio_blk\nvirtio_net\next4\n9p\n9pnet_virtio\n' >> "$R/etc/initramfs-tools/modules"

  # rxe setup helper: rxe0 on veth0 (10.99.0.1) and rxe1 on veth1 (10.99.0.2), both in the
  # guest's init netns (the 6.1 rxe driver only has its UDP/4791 socket in init_net, so an
  # rxe device on a netdev in another netns gets nothing). Policy routing makes traffic
  # between the two local addresses cross the veth wire instead of short-cutting via lo.
  # Addresses exist only inside the guest.
  cat > "$R/usr/local/sbin/rxe-setup" <<'EOF'
#!/bin/bash
set -e
modprobe rdma_rxe
ip link add veth0 type veth peer name veth1
ip addr add 10.99.0.1/24 dev veth0
ip addr add 10.99.0.2/24 dev veth1
ip link set veth0 mtu 4200 up
ip link set veth1 mtu 4200 up
for c in all veth0 veth1; do
  sysctl -qw net.ipv4.conf.$c.accept_local=1 net.ipv4.conf.$c.rp_filter=0 net.ipv4.conf.$c.arp_ignore=1
done
ip rule add pref 100 iif veth0 lookup local
ip rule add pref 100 iif veth1 lookup local
ip rule add pref 101 from 10.99.0.1 lookup 101
ip rule add pref 101 from 10.99.0.2 lookup 102
ip route add 10.99.0.2 dev veth0 table 101
ip route add 10.99.0.1 dev veth1 table 102
ip rule add pref 1000 lookup local
ip rule del pref 0 lookup local
rdma link add rxe0 type rxe netdev veth0
rdma link add rxe1 type rxe netdev veth1
EOF
  chmod 755 "$R/usr/local/sbin/rxe-setup"

  # run-once PID 1
  cat > "$R/sbin/vm-init" <<'EOF'
#!/bin/bash
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb LANG=C.UTF-8
mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /run/netns
mount -o remount,rw /
hostname rxevm
ip link set lo up
# unlimited locked memory for verbs memory registration
ulimit -l unlimited
/lib/systemd/systemd-udevd --daemon >/dev/null 2>&1 && udevadm trigger --action=add >/dev/null 2>&1 && udevadm settle -t 5 >/dev/null 2>&1
modprobe 9pnet_virtio 2>/dev/null
mkdir -p /mnt/run /mnt/host
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 run /mnt/run
grep -q rxevm_host=1 /proc/cmdline && mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none host /mnt/host
rc=0
if grep -q rxevm_rxe=1 /proc/cmdline; then
  rxe-setup > /mnt/run/rxe-setup.log 2>&1 || { rc=$?; echo "@@RXEVM rxe-setup failed rc=$rc"; cat /mnt/run/rxe-setup.log; }
fi
echo "@@RXEVM-BOOTED uptime=$(cut -d' ' -f1 /proc/uptime) kernel=$(uname -r)"
if [ $rc -eq 0 ]; then
  if mountpoint -q /mnt/host; then cd /mnt/host; else cd /root; fi
  bash /mnt/run/cmd.sh > >(tee /mnt/run/output.log) 2>&1 < /dev/null
  rc=$?
  sleep 0.2
fi
echo "$rc" > /mnt/run/rc
echo "@@RXEVM-EXIT=$rc"
sync
umount /mnt/host /mnt/run 2>/dev/null
echo o > /proc/sysrq-trigger
sleep 10
EOF
  chmod 755 "$R/sbin/vm-init"
}

cmd_build() {
  command -v debootstrap >/dev/null && command -v mkfs.ext4 >/dev/null && command -v qemu-system-x86_64 >/dev/null || {
    log "installing host packages"; DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends qemu-system-x86 debootstrap e2fsprogs >&2; }
  local t0=$SECONDS
  # never rm -rf through a leftover /proc, /sys or /dev mount of a failed debootstrap
  { grep -o " $DIR/rootfs/[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m"; done
  rm -rf --one-file-system "$DIR/rootfs" "$DIR/rootfs.img"; mkdir -p "$DIR"
  log "debootstrap $SUITE -> $DIR/rootfs"
  debootstrap --variant=minbase --components=main --include="$GUEST_PKGS" "$SUITE" "$DIR/rootfs" "$MIRROR" > "$DIR/debootstrap.log" 2>&1 \
    || { tail -30 "$DIR/debootstrap.log" >&2; exit 1; }
  log "debootstrap done in $((SECONDS-t0))s"
  cmd_finalize
  log "image built in $((SECONDS-t0))s"
}

# (re)write guest files, initramfs and the ext4 image from $DIR/rootfs (seconds; no network)
cmd_finalize() {
  local t0=$SECONDS
  write_guest_files "$DIR/rootfs"
  chroot "$DIR/rootfs" update-initramfs -u -k all > "$DIR/initramfs.log" 2>&1 || { cat "$DIR/initramfs.log" >&2; exit 1; }
  chroot "$DIR/rootfs" apt-get clean
  cp -L "$DIR/rootfs/vmlinuz" "$DIR/vmlinuz"; cp -L "$DIR/rootfs/initrd.img" "$DIR/initrd.img"
  local sz; sz=$(( $(du -sm "$DIR/rootfs" | cut -f1) + 1024 ))
  rm -f "$DIR/rootfs.img"; truncate -s "${sz}M" "$DIR/rootfs.img"
  mkfs.ext4 -F -q -L rxevm -d "$DIR/rootfs" "$DIR/rootfs.img"
  log "finalize (initramfs + mkfs.ext4 -d, ${sz} MiB) took $((SECONDS-t0))s: $DIR/rootfs.img ($(du -h "$DIR/rootfs.img" | cut -f1) used)"
}

accel_opts() {
  # Default is TCG. On this Firecracker host /dev/kvm is a PVM-based KVM (kvm_pvm, no
  # vmx/svm): '-cpu host' aborts with "failed to set MSR 0x10a to 0x69"; with
  # '-cpu host,-arch-capabilities' a stock Debian kernel stays >300 s in the bzImage
  # decompressor, and booted as PVH vmlinux it runs ~700x slower than TCG and dies with
  # "KVM internal error. Suberror: 1 / emulation failure" on lock cmpxchg16b.
  # RXEVM_ACCEL=kvm to retry on another host.
  local a=${RXEVM_ACCEL:-tcg}
  if [ "$a" = kvm ]; then echo "-enable-kvm -cpu host,-arch-capabilities"; else echo "-accel tcg,thread=multi,tb-size=512 -cpu max"; fi
}

cmd_run() {
  local share="" rxe=1 timeout=600
  while [ $# -gt 0 ]; do
    case $1 in
      -s) share=$(realpath "$2"); shift 2;;
      -n) rxe=0; shift;;
      -t) timeout=$2; shift 2;;
      --) shift; break;;
      *) break;;
    esac
  done
  [ $# -gt 0 ] || { echo "usage: $0 run [-s DIR] [-n] [-t SECS] -- 'command'" >&2; exit 2; }
  [ -f "$DIR/rootfs.img" ] || { echo "no image; run: $0 build" >&2; exit 2; }
  local rd; rd=$(mktemp -d /tmp/rxevm-run.XXXXXX)
  printf '%s\n' "$*" > "$rd/cmd.sh"
  local append="root=/dev/vda rw rootfstype=ext4 console=ttyS0 init=/sbin/vm-init quiet loglevel=3 panic=-1 net.ifnames=0 mitigations=off rxevm_rxe=$rxe"
  local extra=()
  if [ -n "$share" ]; then
    append+=" rxevm_host=1"
    extra+=(-virtfs "local,path=$share,mount_tag=host,security_model=none,id=host")
  fi
  local t0=$SECONDS
  set +e
  # shellcheck disable=SC2046
  timeout --foreground "$timeout" qemu-system-x86_64 $(accel_opts) -machine q35 -m "$MEM" -smp "$SMP" \
    -nodefaults -no-user-config -nographic -no-reboot -serial stdio -monitor none -nic none \
    -kernel "$DIR/vmlinuz" -initrd "$DIR/initrd.img" -append "$append" \
    -drive "file=$DIR/rootfs.img,format=raw,if=virtio,snapshot=on,cache=unsafe" \
    -virtfs "local,path=$rd,mount_tag=run,security_model=none,id=run" "${extra[@]}" \
    < /dev/null | stdbuf -o0 tr -d '\r' | grep --line-buffered -v -E $'^\\s*$|\x1b'
  local qrc=${PIPESTATUS[0]}
  set -e
  log "VM wall time $((SECONDS-t0))s (qemu rc=$qrc, run dir $rd)"
  if [ "$qrc" = 124 ]; then log "VM timed out after ${timeout}s"; exit 124; fi
  if [ -f "$rd/rc" ]; then local rc; rc=$(cat "$rd/rc"); rm -rf "$rd"; exit "$rc"; fi
  log "VM ended without reporting a status"; exit 125
}

cmd_selftest() {
  cmd_run -t 900 -- '
set -x -o pipefail
T="timeout 120"
rdma link show
ibv_devices
ibv_devinfo -d rxe0
ibv_devinfo -d rxe1 -v | grep -E "GID\[|port_state|active_mtu|max_qp:|max_mr_size"
# 1) loopback through ONE rxe device: server and client both on rxe0 (10.99.0.1)
$T ib_write_bw -d rxe0 -x 1 -F -D 5 >/tmp/srv1.log 2>&1 & sleep 1
$T ib_write_bw -d rxe0 -x 1 -F -D 5 10.99.0.1 | tail -3; c1=$?; wait $!; s1=$?
# 2) two rxe devices, packets cross the veth wire: server rxe1 (10.99.0.2), client rxe0
$T ib_write_bw -d rxe1 -x 1 -F -D 5 >/tmp/srv2.log 2>&1 & sleep 1
$T ib_write_bw -d rxe0 -x 1 -F -D 5 10.99.0.2 | tail -3; c2=$?; wait $!; s2=$?
ip -s link show veth0 | tail -4
# 3) rdma_cm: rping and ucmatose
$T rping -s -a 10.99.0.2 -C 10 -v >/tmp/rping-s.log 2>&1 & sleep 1
$T rping -c -a 10.99.0.2 -I 10.99.0.1 -C 10 -v | tail -2; c3=$?; wait $!; s3=$?
$T ucmatose -b 10.99.0.2 >/tmp/ucma-s.log 2>&1 & sleep 1
$T ucmatose -s 10.99.0.2 -b 10.99.0.1 | tail -4; c4=$?; wait $!; s4=$?
# 4) ib_send_lat with RDMA-CM connection setup (-R)
$T ib_send_lat -d rxe1 -R -F -n 1000 >/tmp/lat-s.log 2>&1 & sleep 1
$T ib_send_lat -d rxe0 -R -F -n 1000 10.99.0.2 | tail -3; c5=$?; wait $!; s5=$?
# 5) fault injection: netem is a module in the guest kernel (not in the host kernel)
tc qdisc add dev veth0 root netem delay 1ms loss 1% && tc qdisc show dev veth0
$T ib_write_bw -d rxe1 -x 1 -F -D 5 >/tmp/srv3.log 2>&1 & sleep 1
$T ib_write_bw -d rxe0 -x 1 -F -D 5 10.99.0.2 | tail -3; c6=$?; wait $!; s6=$?
tc qdisc del dev veth0 root
set +x
echo "RESULTS write_bw_loopback=$c1/$s1 write_bw_2dev=$c2/$s2 rping=$c3/$s3 ucmatose=$c4/$s4 send_lat_cm=$c5/$s5 write_bw_netem=$c6/$s6"
[ $((c1+s1+c2+s2+c3+s3+c4+s4+c5+s5+c6+s6)) -eq 0 ]
'
}

case ${1:-} in
  build) shift; cmd_build "$@";;
  finalize) shift; cmd_finalize "$@";;
  run) shift; cmd_run "$@";;
  selftest) shift; cmd_selftest "$@";;
  *) sed -n '2,30p' "$0"; exit 2;;
esac
