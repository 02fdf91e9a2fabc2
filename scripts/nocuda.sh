#!/usr/bin/env bash
# The build without the GPU parts (-Dcuda=disabled, as on a machine without nvcc) into
# ./build-nocuda, and the suites that show it works: gpu (the module is reported as left out,
# its tests skip saying so), example, build, threads, the stream path on the emulated GPU
# (test_stream, which needs no CUDA) and the NCCL shim (nccl: it needs no CUDA library, only
# NVIDIA's nccl.h to build its test program, else it skips). Extra arguments go to `meson test`.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build-nocuda/build.ninja ]; then
  meson setup build-nocuda -Dcuda=disabled
fi
ninja -C build-nocuda
meson test -C build-nocuda --print-errorlogs --num-processes 1 --suite gpu --suite example \
  --suite build --suite threads --suite stream --suite nccl "$@"
