#!/usr/bin/env bash
# tutti's nccl.h as NCCL's users include it: in C++ (g++ -fsyntax-only, with the ABI assertions),
# and where nvcc and NVIDIA's nccl_device.h are installed, in CUDA C++ followed by nccl_device.h,
# as nccl-tests does (the device API's types must not be declared twice). Skips (77) without g++.
#   check_header_cxx.sh SRC_DIR(src/nccl) [NVCC]
set -euo pipefail
hdr_dir=$1 nvcc=${2:-/usr/local/cuda/bin/nvcc}
command -v g++ >/dev/null || { echo "SKIP: no g++"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '#include <nccl.h>\nint main() { return ncclSum + NCCL_VERSION_CODE * 0; }\n' >"$tmp/c.cc"
g++ -std=c++17 -Wall -Werror -fsyntax-only -I"$hdr_dir" "$tmp/c.cc"
echo "ok: nccl.h compiles as C++17"
cuda_inc=$(dirname "$(dirname "$(readlink -f "$nvcc" 2>/dev/null || echo /none)")")/include
if [ -x "$nvcc" ] && [ -f "$cuda_inc/nccl_device.h" ]; then
  printf '#include <nccl.h>\n#include <nccl_device.h>\nint main() { ncclTeam_t t{}; return t.rank; }\n' \
    >"$tmp/d.cu"
  "$nvcc" -std=c++17 -I"$hdr_dir" -c "$tmp/d.cu" -o "$tmp/d.o"
  echo "ok: nccl.h then NVIDIA's nccl_device.h compile together in CUDA C++"
else
  echo "not checked: NVIDIA's nccl_device.h with nvcc (none at $cuda_inc)"
fi
echo "1 passed, 0 failed"
