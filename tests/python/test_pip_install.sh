#!/usr/bin/env bash
# `pip install --no-build-isolation .` as a Python user does it: a fresh virtual environment
# made from Debian's python3 with its system packages (numpy, torch), no package index
# (--no-index), the source tree copied away from any build directory. Then, without
# TUTTI_LIBRARY or LD_LIBRARY_PATH, the installed package loads the libtutti.so inside it, and
# two ranks all-reduce through it. Skips (77) without meson-python or venv.
#   test_pip_install.sh SOURCE_ROOT PYTHON
set -u
src=$1 py=$2
if ! "$py" -c 'import mesonpy, venv' 2>/dev/null; then
  echo "SKIP: $py lacks meson-python or venv (apt-get install python3-mesonpy python3-venv)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/src"
if [ -d "$src/.git" ]; then
  git -C "$src" ls-files -z | (cd "$src" && xargs -0 cp --parents -t "$work/src")
else
  tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$work/src" -xf -
fi
"$py" -m venv --system-site-packages "$work/venv" || exit 1
if ! (cd "$work/src" && "$work/venv/bin/pip" install --no-build-isolation --no-index . \
      >"$work/pip.log" 2>&1); then
  tail -30 "$work/pip.log"
  echo "FAIL: pip install"
  exit 1
fi
grep -E "Successfully (built|installed)" "$work/pip.log"
cat >"$work/job.py" <<'PY'
import os, sys
import numpy as np
import tutti
here = os.path.realpath(os.path.dirname(tutti.__file__))
assert os.path.realpath(tutti._lib.path).startswith(here + os.sep), tutti._lib.path
assert here.startswith(os.path.realpath(sys.prefix)), (here, sys.prefix)
comm = tutti.Comm.from_env()
x = np.full(1000, comm.rank + 1, dtype=np.float32)
comm.allreduce(x)
assert (x == comm.size * (comm.size + 1) / 2).all(), x[:3]
comm.destroy()
print(f"rank {comm.rank}: all-reduce through {tutti._lib.path}: ok", flush=True)
PY
port=$((20000 + RANDOM % 20000))
secret=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
pids=()
for r in 0 1; do
  env -u TUTTI_LIBRARY -u LD_LIBRARY_PATH -u PYTHONPATH TUTTI_RANK=$r TUTTI_NRANKS=2 \
    TUTTI_ROOT=127.0.0.1:$port TUTTI_SECRET="$secret" timeout 120 \
    "$work/venv/bin/python" "$work/job.py" >"$work/rank$r.txt" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
cat "$work"/rank*.txt
n=$(cat "$work"/rank*.txt | grep -c ": ok$")
[ "$rc" -eq 0 ] && [ "$n" -eq 2 ] || { echo "FAIL: the installed package ($n of 2 ranks ok)"; exit 1; }
echo "pip install: the package carries its library and works without TUTTI_LIBRARY"
