#!/usr/bin/env bash
# The proof that scripts/gpu_check.sh works on a bare machine, run where there is no GPU: a
# Debian 12 root made with debootstrap that holds Python, a compiler, meson and ninja and
# nothing of tutti's dependencies (no libsodium, hwloc, verbs, Criterion, zlib headers or
# pkg-config: checked below), with CUDA bind-mounted read-only and a copy of the working tree
# plus gpu-bundle/, as the device tool sends them. Inside, the check must build tutti from the
# bundle and every step must end "ok" or "no-gpu" (it got as far as the missing GPU); "not-run"
# is allowed only for what a bare machine without a GPU cannot have: nccl-tests missing from the
# bundle (their source was not at hand when it was made), NVIDIA's libnccl (it comes with
# PyTorch's wheels there) and MPS's control daemon (part of the driver's tools). Anything else (a missing file, library or tool) fails the proof.
#
#   scripts/gpu_check_bare.sh [OUTDIR]      (default build/gpu-check-bare)
#   BARE_ROOT=/var/tmp/tutti-bare-root      where the root is made once and kept
#   BARE_TORCH=1                            add Debian's python3-torch (CPU only) to the root, so
#                                           the PyTorch steps get as far as "no GPU" too; it
#                                           brings the runtime libraries of hwloc, verbs and
#                                           libsodium with it (not their headers or .pc files)
# Needs root, debootstrap, unshare and a network route to a Debian mirror (the first time); the
# root is made by scripts/bare_root.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
outdir=${1:-build/gpu-check-bare}
root=${BARE_ROOT:-/var/tmp/tutti-bare-root}
[ -f gpu-bundle/env.sh ] || { echo "gpu_check_bare: make gpu-bundle/ first (scripts/gpu_bundle.sh)" >&2; exit 1; }
cuda=$(readlink -f /usr/local/cuda)
[ -x "$cuda/bin/nvcc" ] || { echo "gpu_check_bare: no CUDA toolkit at /usr/local/cuda" >&2; exit 1; }
bash scripts/bare_root.sh "$root"

# The working tree as the device tool sends it: tracked and untracked-not-ignored files, and
# the carried bundle; no build directory.
rm -rf "$root/work"
mkdir -p "$root/work/tutti" "$root/work/out" "$root$cuda"
git ls-files -z -co --exclude-standard | xargs -0 cp --parents -d -t "$root/work/tutti" 2>/dev/null ||
  git ls-files -co --exclude-standard | while read -r f; do
    [ -e "$f" ] && cp --parents -d "$f" "$root/work/tutti/"
  done
cp -a gpu-bundle "$root/work/tutti/"
ln -sfn "$cuda" "$root/usr/local/cuda"

start=$SECONDS
unshare -m bash -c '
  set -e
  root=$1 cuda=$2
  mount --make-rprivate /
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mount --bind "$cuda" "$root$cuda" && mount -o remount,bind,ro "$root$cuda"
  chroot "$root" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    GPU_CHECK_BUDGET_S=${GPU_CHECK_BUDGET_S:-2400} GPU_BUILD_LIMIT_S=1500 bash /work/tutti/scripts/gpu_check.sh /work/out
' _ "$root" "$cuda" >/tmp/gpu-check-bare.log 2>&1 || true
echo "gpu_check_bare: the check ran $((SECONDS - start)) s in the bare root"
rm -rf "$outdir"
mkdir -p "$(dirname "$outdir")"
cp -r "$root/work/out" "$outdir"
cp /tmp/gpu-check-bare.log "$outdir/console.log"

# The verdict: every step ok or no-gpu, or not run for an allowed reason.
allowed='not-run: (the bundle has no nccl-tests|NVIDIA.s libnccl.so.2 .* was not found'
allowed+='|no nvidia-cuda-mps-control)'
[ "${BARE_TORCH:-0}" = 1 ] || allowed+='|not-run: python3 has no torch'
bad=$(awk -F'\t' -v ok="^(ok|no-gpu)\$|$allowed" '$2 !~ ok' "$outdir/steps.tsv")
total=$(wc -l <"$outdir/steps.tsv")
sed -n '1,/^== GPU tests/p' "$outdir/summary.txt" | head -n -1
for s in configure build; do
  grep -q "^$s"$'\tok' "$outdir/steps.tsv" || bad+=$'\n'"$s did not succeed"
done
if [ -n "$bad" ] || [ "$total" -lt 20 ]; then
  echo "gpu_check_bare: FAILED: these steps failed on something other than the missing GPU:"
  echo "$bad" | sed 's/^/  /'
  echo "(logs in $outdir)"
  echo "gpu_check_bare: 0 passed, 1 failed"
  exit 1
fi
echo "gpu_check_bare: all $total steps of the GPU check got as far as the missing GPU" \
  "(logs in $outdir)"
echo "gpu_check_bare: 1 passed, 0 failed"
