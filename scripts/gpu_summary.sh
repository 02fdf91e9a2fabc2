#!/usr/bin/env bash
# The summary of a GPU check (scripts/gpu_check.sh writes it to OUTDIR/summary.txt): the
# machine, every step's verdict and time, then the figures the steps measured, read from their
# logs: the GPU tests' counts, the kernel bandwidth table, all-reduce latency and bus bandwidth
# per launch, the trainer's summary and checks, PyTorch's lines, and nccl-tests' checks and
# average bus bandwidth.
#   scripts/gpu_summary.sh OUTDIR
set -uo pipefail
out=$1
cd "$(dirname "$0")/.."
tsv=$out/steps.tsv
count() { awk -F'\t' -v re="$1" '$2 ~ re { n++ } END { print n + 0 }' "$tsv"; }
log() { [ -f "$out/$1.log" ] && sed -n "2,\$p" "$out/$1.log"; }

echo "tutti GPU check, $(date -u +%Y-%m-%dT%H:%MZ), tutti $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
gpus=$(nvidia-smi -L 2>/dev/null | grep '^GPU')
echo "GPUs: ${gpus:-none visible}"
echo "steps: $(count '^ok') ok, $(count '^no-gpu') no GPU, $(count '^not-run') not run," \
  "$(count '^(FAILED|TIMEOUT)') failed or timed out"
echo
awk -F'\t' '{ printf "  %-28s %5d s  %s\n", $1, $3, $2 }' "$tsv"

echo
echo "== GPU tests (meson test --suite gpu --suite trainer_gpu)"
log gpu_tests | grep -E '^ *[0-9]+/[0-9]+ |^(Ok|Fail|Skipped|Timeout):' | sed 's/^/  /'
log gpu_tests | grep -E 'SKIP|skipped' | grep -v '^ *[0-9]*/' | sort -u | head -5 | sed 's/^/  /'

echo
echo "== reduction kernels against the device-to-device copy (gpu_kernel_bench)"
log kernel_bw | sed 's/^/  /'

echo
echo "== the GPU's synchronization facts (gpu_sync_probe)"
log sync_probe | grep -Ev '^(waiter|spinner):' | sed 's/^/  /'

echo
echo "== all-reduce of device buffers (all_reduce_perf --memory device), out-of-place"
printf '  %-18s %12s %14s %14s %15s %10s\n' run "8 B time us" "1 MiB busbw" "64 MiB busbw" \
  "256 MiB busbw" "#wrong"
for f in "$out"/ar_*.log; do
  [ -f "$f" ] || continue
  awk -v run="$(basename "$f" .log)" '
    $1 ~ /^[0-9]+$/ && NF >= 13 { wrong += $9 + $13
      if ($1 == 8) t8 = $6; if ($1 == 1048576) b1 = $8
      if ($1 == 67108864) b64 = $8; if ($1 == 268435456) b256 = $8 }
    END { printf "  %-18s %12s %14s %14s %15s %10s\n", run, t8, b1, b64, b256, wrong + 0 }' "$f"
done
echo "  (busbw in GB/s; every size from 8 B to 256 MiB in powers of 2 is in the logs and JSON)"
log ipc_pieces | awk '/^== / { v = substr($0, 4) }
  $1 == 1048576 { b1 = $8 } $1 == 67108864 { b64 = $8 }
  $1 == 268435456 { printf "  %-52s busbw %s / %s / %s GB/s at 1 / 64 / 256 MiB\n", v ":", b1, b64, $8 }'
log ar_small_variants | awk '/^== / { v = substr($0, 4) }
  $1 == 8 { printf "  8 B, %-40s %9s us out of place, %9s us in place\n", v ":", $6, $10 }'

echo
echo "== tutti-train, 2 ranks sharing the GPU, and on the CPU"
for s in train_cuda train_cuda_mps train_cpu; do
  echo "  $s:"
  log $s | grep -E '^(summary|check [0-9]|epoch [0-9]+:)|rror|FAILED' | sed 's/^/    /'
done

echo
echo "== PyTorch over the shim"
for s in torch_collectives torch_ddp_shim torch_ddp_gloo torch_ddp_compare; do
  log $s | grep -E '^rank|max abs|rror|no GPU' | tail -4 | sed "s/^/  $s: /"
done

echo
echo "== nccl-tests: their own check and average bus bandwidth"
for f in "$out"/nt_*.log; do
  [ -f "$f" ] || continue
  printf '  %-30s %s; %s\n' "$(basename "$f" .log)" \
    "$(grep -o 'Out of bounds values : .*' "$f" | head -1 || true)" \
    "$(grep -o 'Avg bus bandwidth.*' "$f" | head -1 || echo "$(tail -n 1 "$f")")"
done
