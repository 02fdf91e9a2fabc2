#!/usr/bin/env bash
# Everything issue 7 leaves to a machine with a GPU, in one go (device tool: one `run` call):
# build, the GPU test suite, the kernel bandwidth against the device-to-device copy, and the
# all-reduce of device buffers with 2 and 4 ranks sharing GPU 0 through CUDA IPC and staged,
# interleaved, 5 launches each, and NCCL's single-rank all-reduce when NCCL_TESTS names a
# directory holding nccl-tests' all_reduce_perf. Output under ${OUT:-build/gpu-checks}: one log per step and summary.txt.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build/gpu-checks}
mkdir -p "$out"
export TUTTI_CUDA_MODULE=$PWD/build/kernels/cuda/libtutti-cuda.so
. scripts/gpu_common.sh
gpu_build
step info build/src/tools/tutti-info --gpu
step gpu_tests meson test -C build --suite gpu --print-errorlogs
step stream_tests meson test -C build --suite stream --print-errorlogs
step kernel_bw build/perf/gpu_kernel_bench --bytes 268435456 --reps 5
for launch in 1 2 3 4 5; do
  for n in 2 4; do
    step "ar_ipc_n${n}_$launch" build/perf/all_reduce_perf -N $n -b 8 -e 256M -f 4 -n 20 -w 5 \
      --memory device
    TUTTI_IPC=0 step "ar_staged_n${n}_$launch" build/perf/all_reduce_perf -N $n -b 8 -e 256M \
      -f 4 -n 20 -w 5 --memory device
  done
done
if [ -x "${NCCL_TESTS:-/nonexistent}/all_reduce_perf" ]; then # nccl-tests built against NCCL
  step nccl_1rank "$NCCL_TESTS/all_reduce_perf" -b 8 -e 256M -f 4 -g 1
fi
grep -h "Avg bus bandwidth" "$out"/ar_*.log | head -40 >>"$out/summary.txt"
echo "logs in $out"
