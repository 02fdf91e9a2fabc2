#!/usr/bin/env bash
# Make (once) the bare Debian 12 root of scripts/gpu_check_bare.sh and scripts/wheel_check.sh:
# debootstrap's minbase with Python (and its venv module), numpy, a compiler, meson and ninja,
# and nothing of tutti's dependencies (no libsodium, hwloc, verbs, Criterion, zlib headers or
# pkg-config). Kept while its stamp names the same packages.
#   bare_root.sh ROOT           BARE_TORCH=1 adds Debian's python3-torch; BARE_MIRROR a mirror
# Needs root, debootstrap and a network route to a Debian mirror (the first time).
set -euo pipefail
root=$1
mirror=${BARE_MIRROR:-http://deb.debian.org/debian}
pkgs=python3,python3-numpy,python3-venv,gcc,g++,libc6-dev,meson,ninja-build,git,procps
[ "${BARE_TORCH:-0}" = 1 ] && pkgs+=,python3-torch
if [ "$(cat "$root/.tutti-packages" 2>/dev/null)" != "$pkgs" ]; then
  rm -rf "$root"
  echo "bare_root: debootstrap of Debian 12 with $pkgs into $root (a few minutes)"
  debootstrap --variant=minbase --include="$pkgs" bookworm "$root" "$mirror" >/tmp/debootstrap.log 2>&1 ||
    { tail -20 /tmp/debootstrap.log >&2; exit 1; }
  echo "$pkgs" >"$root/.tutti-packages"
fi
# The root must lack what tutti's packages bring: headers, .pc files, pkg-config, Criterion,
# and (without Debian's torch, which pulls them in) the runtime libraries too.
lacks=(usr/include/sodium.h usr/include/hwloc.h usr/include/infiniband/verbs.h
       usr/include/rdma/rdma_cma.h usr/include/criterion usr/include/zlib.h usr/bin/pkg-config
       usr/bin/pkgconf usr/lib/x86_64-linux-gnu/libcriterion.so.3)
[ "${BARE_TORCH:-0}" = 1 ] ||
  lacks+=(usr/lib/x86_64-linux-gnu/libsodium.so.23 usr/lib/x86_64-linux-gnu/libhwloc.so.15
          usr/lib/x86_64-linux-gnu/libibverbs.so.1)
for f in "${lacks[@]}"; do
  [ ! -e "$root/$f" ] || { echo "bare_root: the bare root has $f" >&2; exit 1; }
done
