#!/usr/bin/env bash
# Everything tutti has to show on a real GPU, in one go, on a bare machine (issue 17; the
# command, what travels and how to read the summary: docs/GPU.md).
#
#   scripts/gpu_check.sh OUTDIR    (GPU_CHECK_BUDGET_S: the deadline, default 420 s;
#                                    GPU_BUILD_LIMIT_S: the build step's limit, default 420 s;
#                                    GPU_CHECK_ONLY: a regular expression: only the steps whose
#                                    names match run, after machine, configure and build;
#                                    GPU_BUILD_TARGETS: ninja targets instead of all;
#                                    GPU_TESTS: meson test arguments instead of the GPU suites)
#
# Builds tutti from source for sm_90 with the bundle's dependencies (gpu-bundle/, made by
# scripts/gpu_bundle.sh), then runs, most important first: the GPU tests (kernels bit for bit
# against the CPU for every datatype x op, the stream path on the default and an own stream,
# IPC and staged, graph capture refused; the trainer's CUDA backend), the kernel bandwidth
# against the device-to-device copy, all-reduce of device buffers with 2 and 4 ranks sharing
# the GPU (IPC and staged, 8 B to 256 MiB), tutti-train on the GPU and on the CPU, PyTorch over
# the shim (collectives checked, DDP against gloo), nccl-tests on the shim (1 rank, and 2 ranks
# on the one GPU) and on NVIDIA's NCCL (1 rank), and a second launch of the all-reduce runs.
# Each step has a time limit and never stops the others; the whole stays inside the budget
# (steps that would start past it are reported as not run). OUTDIR gets one log per step,
# steps.tsv and summary.txt; the exit status is 0 when no step FAILED or timed out.
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: scripts/gpu_check.sh OUTDIR" >&2; exit 2; }
mkdir -p "$1" && out=$(cd "$1" && pwd)
: >"$out/steps.tsv"
deadline=$((SECONDS + ${GPU_CHECK_BUDGET_S:-420}))
bdir=${GPU_BUILD_DIR:-build-gpu}
export out deadline

if [ -f gpu-bundle/env.sh ]; then
  . gpu-bundle/env.sh
else
  echo "gpu_check: no gpu-bundle/ (scripts/gpu_bundle.sh makes it); using what is installed"
fi
# CUDA where the image keeps it, and pip's meson and ninja when their scripts are not on PATH.
for d in /usr/local/cuda/bin /usr/local/cuda-*/bin; do
  [ -x "$d/nvcc" ] && ! command -v nvcc >/dev/null && export PATH="$PATH:$d"
done
if ! command -v ninja >/dev/null; then
  nb=$(python3 -c 'import ninja, os; print(ninja.BIN_DIR)' 2>/dev/null) && export PATH="$PATH:$nb"
fi
meson=(meson)
command -v meson >/dev/null || meson=(python3 -m mesonbuild.mesonmain)
gpu_count=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
export gpu_count
. scripts/gpu_steps.sh
echo "gpu_check: $gpu_count GPU(s) visible; logs in $out; budget ${GPU_CHECK_BUDGET_S:-420} s"

step machine 60 machine_info
rm -rf "$bdir"
step configure 180 "${meson[@]}" setup "$bdir" --buildtype=release -Dcuda=enabled \
  -Dgpu_archs=sm_90 -Dmpi_compare=disabled
# shellcheck disable=SC2086 # GPU_BUILD_TARGETS is a list of ninja targets
step build "${GPU_BUILD_LIMIT_S:-420}" ninja -C "$bdir" ${GPU_BUILD_TARGETS:-}
export GPU_CHECK_ONLY=${GPU_CHECK_ONLY:-.}

export TUTTI_CUDA_MODULE=$PWD/$bdir/kernels/cuda/libtutti-cuda.so
export SHIM=$PWD/$bdir/src/nccl/libnccl.so.2
data=${GPU_BUNDLE_DATA:-/usr/share/datasets/fashion-mnist}
export FASHION_MNIST_DIR=$data # the trainer's meson tests (trainer/tests/run_train.sh)
train=("$bdir/trainer/tutti-train" -N 2 --check --log-every 200 --data "$data")
ar=("$bdir/perf/all_reduce_perf" -b 8 -e 256M -f 2 -n 20 -w 5 --memory device)

step tutti_info 60 "$bdir/src/tools/tutti-info" --gpu
# shellcheck disable=SC2086 # GPU_TESTS is a list of meson test arguments
step gpu_tests 300 "${meson[@]}" test -C "$bdir" --no-rebuild --print-errorlogs \
  --num-processes 1 ${GPU_TESTS:---suite gpu --suite trainer_gpu}
step kernel_bw 90 "$bdir/perf/gpu_kernel_bench" --bytes 268435456 --reps 5
step sync_probe 90 sync_probe "$bdir"
for n in 2 4; do
  step "ar_ipc_n${n}_1" 90 "${ar[@]}" -N $n -J "$out/ar_ipc_n${n}_1.json"
  step "ar_staged_n${n}_1" 90 env TUTTI_IPC=0 "${ar[@]}" -N $n -J "$out/ar_staged_n${n}_1.json"
done
step ar_small_variants 90 ar_small_variants "${ar[@]}"
step ar_ipc_n2_mps 90 with_mps "${ar[@]}" -N 2 -e 64M -J "$out/ar_ipc_n2_mps.json"
step ipc_pieces 90 with_mps ipc_pieces "${ar[@]}"
step train_cuda 180 "${train[@]}" --device cuda --json "$out/train_cuda.json"
step train_cuda_mps 180 with_mps "${train[@]}" --device cuda --json "$out/train_cuda_mps.json"
step train_cpu 180 "${train[@]}" --device cpu --json "$out/train_cpu.json"
step torch_collectives 150 torch_ranks allreduce "$out/unused.pt"
step torch_ddp_shim 150 torch_ranks ddp "$out/w_shim.pt"
step torch_ddp_gloo 150 torch_ranks gloo "$out/w_gloo.pt"
step torch_ddp_compare 60 torch_compare "$out/w_shim.pt" "$out/w_gloo.pt"

nt_args=(-b 8 -e 128M -f 8 -c 1)
export NT_ONE_GPU=$PWD/$bdir/tests/gpu/libtutti-one-gpu.so
for t in all_reduce all_gather broadcast reduce_scatter reduce alltoall sendrecv; do
  NT_LIB=$PWD/$bdir/src/nccl NT_RANKS=1 step "nt_shim_${t}_1rank" 60 nccl_test $t "${nt_args[@]}"
done
# Two ranks as two threads of one process on the one GPU: opt-in (GPU_NT_TWO_RANKS=1), as
# they can deadlock whatever the library: nccl-tests' check calls cudaDeviceSynchronize and
# cudaFreeHost, which wait for the whole device (gpu_sync_probe apis), in one rank's thread
# while the other rank's next collective waits for it on that device (seen on an H100,
# perf/results/2026-11-27-gpu-h100.md). NCCL refuses two ranks on one GPU.
for t in all_reduce all_gather broadcast reduce_scatter reduce alltoall sendrecv; do
  [ "${GPU_NT_TWO_RANKS:-0}" = 1 ] || break
  NT_LIB=$PWD/$bdir/src/nccl NT_RANKS=2 step "nt_shim_${t}_2ranks" "${GPU_NT2_LIMIT_S:-60}" \
    nccl_test $t "${nt_args[@]}"
done
nccl_dir=$(find_lib_dir libnccl.so.2 | grep -v "$bdir" || true)
for t in all_reduce all_gather broadcast reduce_scatter reduce alltoall sendrecv; do
  NT_LIB=$nccl_dir NT_WHAT="NVIDIA's libnccl.so.2 (CUDA or the nvidia-nccl wheel)" NT_RANKS=1 \
    step "nt_nccl_${t}_1rank" 60 nccl_test $t "${nt_args[@]}"
done
for n in 2 4; do
  step "ar_ipc_n${n}_2" 90 "${ar[@]}" -N $n -J "$out/ar_ipc_n${n}_2.json"
  step "ar_staged_n${n}_2" 90 env TUTTI_IPC=0 "${ar[@]}" -N $n -J "$out/ar_staged_n${n}_2.json"
done

bash scripts/gpu_summary.sh "$out" >"$out/summary.txt"
cat "$out/summary.txt"
! grep -Eq $'\t(FAILED|TIMEOUT)' "$out/steps.tsv"
