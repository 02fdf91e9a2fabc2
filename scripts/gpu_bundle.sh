#!/usr/bin/env bash
# Make gpu-bundle/ (git-ignored, at most 50 MiB): everything scripts/gpu_check.sh needs that a
# bare GPU machine lacks, so that the check builds and runs there the first time. The device
# tool carries it (`carry: ["gpu-bundle"]`); docs/GPU.md says how it is used.
#
#   scripts/gpu_bundle.sh [DIR]          (default gpu-bundle; NCCL_TESTS_SRC, see below)
#
# What is in it, and why this shape:
# - root/: the files of Debian 12's packages for tutti's build dependencies (libsodium, hwloc,
#   verbs, rdmacm, Criterion, zlib headers, pkgconf) unpacked with dpkg -x, their .pc files
#   made relative to their own location (${pcfiledir}) and stripped of the private (static-link)
#   requirements, plus every shared library those need that a glibc system may lack, copied
#   from this machine (ldd), each given RUNPATH $ORIGIN. So the machine builds tutti from source
#   with its own compiler and CUDA (no binary of ours has to match its driver or toolkit), and
#   nothing is installed there: env.sh only sets PATH, PKG_CONFIG*, LDFLAGS (an rpath into
#   root/) and the data path. A prebuilt tree would have to match the machine's CUDA exactly.
# - root/usr/share/datasets/fashion-mnist: Debian's Fashion-MNIST, for the trainer's run.
# - nccl-tests/: NVIDIA's nccl-tests built here (nvcc, sm_90 only, DSO=1 so the checking code
#   is one shared library, stripped) against tutti's nccl.h, for the collectives the shim runs.
#   Their source is not fetched here (this machine has no route to GitHub): NCCL_TESTS_SRC
#   names a checkout or a bare git directory; without it the bundle has no nccl-tests and says
#   so (the check then reports that step as not run). nccl-tests from NCCL 2.29 on also need
#   NCCL's device-API headers of that age: NCCL_DEVICE_INCLUDE names an include/ that has them
#   (pip download nvidia-nccl-cu13, unzip, nvidia/nccl/include).
# - env.sh, MANIFEST (packages and versions, nccl-tests commit, the newest glibc symbol version
#   any bundled file needs, sizes).
# Needs: apt-get (download only), dpkg-deb, patchelf, nvcc (for nccl-tests); installs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dest=${1:-gpu-bundle}
limit_mib=50
arch_dir=usr/lib/x86_64-linux-gnu
pkgs=(libsodium-dev libsodium23 libhwloc-dev libhwloc15 libibverbs-dev libibverbs1 librdmacm-dev
      librdmacm1 libcriterion-dev libcriterion3 zlib1g-dev pkgconf-bin libpkgconf3
      dataset-fashion-mnist)
nccl_tests=(all_reduce all_gather broadcast reduce_scatter reduce alltoall sendrecv)
is_elf() { [ "$(head -c 4 "$1")" = $'\177ELF' ]; }

for tool in apt-get dpkg-deb patchelf ldd objdump strip; do
  command -v "$tool" >/dev/null || { echo "gpu_bundle: $tool is missing" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
new=$work/bundle
mkdir -p "$new/root" "$new/bin" "$work/debs"

echo "gpu_bundle: downloading ${#pkgs[@]} Debian packages"
if ! (cd "$work/debs" && apt-get download -qq "${pkgs[@]}" 2>/dev/null); then
  apt-get update -qq
  (cd "$work/debs" && apt-get download -qq "${pkgs[@]}")
fi
for deb in "$work"/debs/*.deb; do
  dpkg-deb -x "$deb" "$new/root"
  dpkg-deb -f "$deb" Package Version | sed 's/^[A-Za-z]*: //' | paste -sd' ' >>"$work/packages"
done
# Documentation, manuals and static archives are not needed to build or run.
rm -rf "$new/root/usr/share/doc" "$new/root/usr/share/man" "$new/root/usr/share/lintian" \
  "$new/root/usr/share/bug" "$new/root/$arch_dir/rsocket"
find "$new/root" -name '*.a' -delete

# .pc files: /usr becomes the path from the file to the unpacked usr/; private requirements
# (other packages' .pc files, only for static linking) go.
# The multiarch include directory (hwloc's autogen/config.h is there), which a compiler searches
# by itself under /usr but not in the bundle, joins every Cflags.
multiarch=
[ -d "$new/root/usr/include/x86_64-linux-gnu" ] && multiarch=' -I${includedir}/x86_64-linux-gnu'
find "$new/root" -name '*.pc' | while read -r pc; do
  rel=$(realpath --relative-to="$(dirname "$pc")" "$new/root/usr")
  sed -i -E -e '/^(Requires|Libs)\.private:/d' \
    -e "s#(=|-I|-L)/usr(/|\$| )#\\1\${pcfiledir}/$rel\\2#g" -e "/^Cflags:/ s#\$#$multiarch#" "$pc"
done

# Shared libraries the bundled ones need, other than glibc's and the C++ runtime, which every
# system with a compiler has: copied from this machine.
libdir=$new/root/$arch_dir
is_base() {
  case $1 in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | ld-linux*.so.* | \
      libresolv.so.* | libstdc++.so.* | libgcc_s.so.* | linux-vdso.so.*) return 0 ;;
  esac
  return 1
}
for round in 1 2 3; do
  added=0
  for so in $(find "$libdir" "$new/root/usr/bin" -type f \( -name '*.so*' -o -perm -u+x \)); do
    is_elf "$so" || continue
    while read -r name _ path _; do
      [ "$path" = "not" ] && { echo "gpu_bundle: $so needs $name, not on this machine" >&2; exit 1; }
      is_base "$name" || [ -e "$libdir/$name" ] || [ -z "$path" ] && continue
      cp -L "$path" "$libdir/$name"
      echo "$name" >>"$work/copied"
      added=1
    done < <(LD_LIBRARY_PATH=$libdir ldd "$so" 2>/dev/null | grep '=>' || true)
  done
  [ $added = 0 ] && break
done
# (strip before patchelf: strip can break a file patchelf has rewritten)
find "$libdir" -maxdepth 1 -type f -name '*.so*' -exec strip --strip-unneeded {} \;
find "$libdir" -maxdepth 1 -type f -name '*.so*' -exec patchelf --set-rpath '$ORIGIN' {} \;
patchelf --set-rpath '$ORIGIN/../lib/x86_64-linux-gnu' "$new/root/usr/bin/pkgconf"

cat >"$new/bin/pkg-config" <<'EOF'
#!/bin/sh
# pkg-config for the bundle: Debian's pkgconf, unpacked, with the bundle's .pc files first.
here=$(dirname "$(readlink -f "$0")")/..
exec "$here/root/usr/bin/pkgconf" "$@"
EOF
chmod +x "$new/bin/pkg-config"

# nccl-tests, built against tutti's nccl.h (and NVIDIA's nccl_device.h where CUDA has it).
nt_note="no nccl-tests: NCCL_TESTS_SRC was not set (a checkout or bare git directory of github.com/NVIDIA/nccl-tests)"
if [ -n "${NCCL_TESTS_SRC:-}" ]; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  src=$work/nccl-tests
  mkdir -p "$src" "$work/nccl/include" "$work/nccl/lib"
  if [ -d "$NCCL_TESTS_SRC/src" ]; then
    cp -r "$NCCL_TESTS_SRC"/. "$src"
    commit=$(git -C "$NCCL_TESTS_SRC" rev-parse HEAD 2>/dev/null || echo unknown)
  else
    git --git-dir="$NCCL_TESTS_SRC" archive HEAD | tar -x -C "$src"
    commit=$(git --git-dir="$NCCL_TESTS_SRC" rev-parse HEAD)
  fi
  cp src/nccl/nccl.h "$work/nccl/include/"
  # tutti's nccl.h says 2.32.3, so nccl-tests compiles its 2.29+ code, which takes the device
  # API's types (ncclCommProperties_t...) from NCCL's own nccl_device headers: CUDA's are 2.28.
  # NCCL_DEVICE_INCLUDE names a newer include/ (the nvidia-nccl-cu13 wheel's nvidia/nccl/include).
  if [ -n "${NCCL_DEVICE_INCLUDE:-}" ]; then
    cp -r "$NCCL_DEVICE_INCLUDE"/nccl_device* "$work/nccl/include/"
  fi
  # Linked against the shim of this tree's build (else CUDA's NCCL) by soname only
  # (libnccl.so.2): which library answers is chosen at run time.
  link=build/src/nccl/libnccl.so.2
  [ -f "$link" ] || link=$(dirname "$(dirname "$nvcc")")/lib64/libnccl.so
  [ -f "$link" ] || { echo "gpu_bundle: build tutti first (ninja -C build)" >&2; exit 1; }
  ln -s "$PWD/$link" "$work/nccl/lib/libnccl.so" 2>/dev/null || ln -s "$link" "$work/nccl/lib/libnccl.so"
  targets=()
  for t in "${nccl_tests[@]}"; do targets+=("$work/nt-build/${t}_perf"); done
  echo "gpu_bundle: building nccl-tests $commit (a few minutes)"
  make -C "$src/src" -j"$(nproc)" MPI=0 DSO=1 NCCL_HOME="$work/nccl" \
    CUDA_HOME="$(dirname "$(dirname "$(readlink -f "$nvcc")")")" NVCC="$nvcc" \
    NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" BUILDDIR="$work/nt-build" \
    "${targets[@]}" >"$work/nccl-tests.log" 2>&1 ||
    { tail -30 "$work/nccl-tests.log" >&2; echo "gpu_bundle: nccl-tests failed to build" >&2; exit 1; }
  mkdir -p "$new/nccl-tests/verifiable"
  for t in "${nccl_tests[@]}"; do
    strip -o "$new/nccl-tests/${t}_perf" "$work/nt-build/${t}_perf"
  done
  strip --strip-unneeded -o "$new/nccl-tests/verifiable/libverifiable.so.0" \
    "$work/nt-build/verifiable/libverifiable.so.0"
  nt_note="nccl-tests $commit: ${nccl_tests[*]} (sm_90, DSO=1, against tutti's nccl.h)"
fi

cat >"$new/env.sh" <<'EOF'
# Sourced by scripts/gpu_check.sh: the bundle's tools, .pc files and data first; built programs
# find the bundled libraries through their rpath (LDFLAGS), so LD_LIBRARY_PATH stays untouched.
GPU_BUNDLE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
export GPU_BUNDLE
export PATH="$GPU_BUNDLE/bin:$PATH"
export PKG_CONFIG="$GPU_BUNDLE/bin/pkg-config"
export PKG_CONFIG_PATH="$GPU_BUNDLE/root/usr/lib/x86_64-linux-gnu/pkgconfig:$GPU_BUNDLE/root/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export LDFLAGS="-Wl,-rpath,$GPU_BUNDLE/root/usr/lib/x86_64-linux-gnu${LDFLAGS:+ $LDFLAGS}"
export GPU_BUNDLE_DATA="$GPU_BUNDLE/root/usr/share/datasets/fashion-mnist"
if [ -x "$GPU_BUNDLE/nccl-tests/all_reduce_perf" ]; then
  export NCCL_TESTS="$GPU_BUNDLE/nccl-tests"
fi
EOF

# The newest glibc symbol version any bundled ELF file asks for: the machine needs at least it.
glibc_need=$(find "$new" -type f | while read -r f; do if is_elf "$f"; then objdump -T "$f"; fi; done 2>/dev/null |
  grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
size_kib=$(du -sk "$new" | cut -f1)
{
  echo "tutti GPU bundle, made $(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "from tutti $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo '?') by scripts/gpu_bundle.sh"
  echo "needs glibc: ${glibc_need#GLIBC_} or newer"
  echo "size: $((size_kib / 1024)) MiB (limit $limit_mib MiB)"
  echo "$nt_note"
  echo "packages (Debian 12, dpkg -x into root/):"
  sed 's/^/  /' "$work/packages"
  echo "libraries copied beside them (what they need beyond glibc):"
  sort "$work/copied" 2>/dev/null | paste -sd' ' | fold -s -w 96 | sed 's/^/  /'
} >"$new/MANIFEST"
if [ "$size_kib" -gt $((limit_mib * 1024)) ]; then
  cat "$new/MANIFEST" >&2
  echo "gpu_bundle: $((size_kib / 1024)) MiB is over the $limit_mib MiB limit" >&2
  exit 1
fi
rm -rf "$dest"
mv "$new" "$dest"
cat "$dest/MANIFEST"
