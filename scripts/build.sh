#!/usr/bin/env bash
# Configure (once) and build tutti into ./build. Extra arguments go to `meson setup`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/build.ninja ]; then
  # the torch 2 suites' interpreter: the venv scripts/torch-venv.sh makes (TORCH_VENV)
  meson setup build -Dtorch2_python="${TORCH_VENV:-/var/cache/tutti/torch-2.15}/bin/python" "$@"
fi
ninja -C build
