# Sourced by scripts/gpu_check.sh (from the repository root, with $out, $deadline and
# $gpu_count set): the step runner and its verdicts, and the helpers the steps call (each step
# runs in a fresh bash that sources this file, so a step may name a function below).
#
# step NAME LIMIT_S COMMAND...: runs COMMAND with a time limit (never past the check's
# deadline), its output in $out/NAME.log, and appends "NAME<TAB>VERDICT<TAB>SECONDS" to
# $out/steps.tsv. Verdicts:
#   ok             exit status 0
#   no-gpu         failed or skipped (77), no GPU is visible, and the log says so in words
#                  no_gpu_re knows (the only acceptable failure on a machine without a GPU)
#   not-run: WHY   the step's precondition is missing (exit 78 with the reason as last line)
#   TIMEOUT        killed at its limit
#   FAILED (N)     anything else, exit status N
no_gpu_re='no CUDA device|cudaErrorNoDevice|cudaErrorInsufficientDriver|no CUDA-capable device'
no_gpu_re+='|CUDA driver version is insufficient|Found no NVIDIA driver|no GPU: |NVIDIA-SMI has failed'
no_gpu_re+='|torch.cuda.is_available\(\) is False|no GPU module'

step() { # name, limit in seconds, command...
  local name=$1 limit=$2
  shift 2
  local log=$out/$name.log left=$((deadline - SECONDS)) t0=$SECONDS rc verdict
  [[ $name =~ ^(machine|configure|build)$ || $name =~ ${GPU_CHECK_ONLY:-.} ]] || return 0
  if [ "$left" -lt 15 ]; then
    printf '%s\tnot-run: the check'"'"'s time budget is spent\t0\n' "$name" >>"$out/steps.tsv"
    echo "== $name: not run (time budget spent)"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "== $name (limit ${limit}s): $*"
  printf '$ %s\n' "$*" >"$log"
  timeout -k 10 "$limit" bash -c '. scripts/gpu_steps.sh; "$@"' _ "$@" >>"$log" 2>&1 </dev/null
  rc=$?
  if [ $rc -eq 0 ]; then
    verdict=ok
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    verdict="TIMEOUT after ${limit}s"
  elif [ $rc -eq 78 ]; then
    verdict="not-run: $(tail -n 1 "$log")"
  elif [ "$gpu_count" -eq 0 ] && { [ $rc -eq 77 ] || grep -Eq "$no_gpu_re" "$log"; }; then
    verdict=no-gpu
  else
    verdict="FAILED (exit $rc)"
  fi
  printf '%s\t%s\t%d\n' "$name" "$verdict" $((SECONDS - t0)) >>"$out/steps.tsv"
  echo "   $verdict ($((SECONDS - t0)) s)"
}

not_run() { # reason: ends a step as not run
  echo "$*"
  exit 78
}

# ---- helpers the steps call ----

machine_info() {
  uname -a
  grep PRETTY_NAME /etc/os-release 2>/dev/null
  echo "cores: $(nproc), memory: $(awk '/MemTotal/ {print int($2 / 1048576)}' /proc/meminfo) GiB"
  echo "glibc: $(getconf GNU_LIBC_VERSION 2>/dev/null)"
  for t in nvidia-smi nvcc gcc g++ python3 meson ninja pkg-config mpirun; do
    printf '%-11s %s\n' "$t" "$(command -v "$t" || echo missing)"
  done
  nvidia-smi || true
  nvcc --version | tail -2 || true
  python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch",
      torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available(),
      "nccl", torch.cuda.nccl.version() if torch.cuda.is_available() else "-")' || true
  [ -f gpu-bundle/MANIFEST ] && cat gpu-bundle/MANIFEST
  true
}

# perf/gpu_sync_probe.cu: which runtime calls wait for the device while a stream is blocked on a
# host word; an 8-byte copy's round trip alone and beside another process whose stream waits on
# host words (as the staged path does) or runs kernels; a stream-to-stream ping-pong between
# two processes through shared host words (as the IPC all-reduce's flags go); the last two
# again under MPS where its control daemon is installed.
sync_probe() { # build directory
  local p=$1/gpu_sync_probe pid
  nvcc -O2 -std=c++17 -arch=sm_90 -o "$p" perf/gpu_sync_probe.cu || return 1
  "$p" apis || return 1
  echo "== alone"; "$p" lat 2000 || return 1
  for other in waiter spinner; do
    "$p" $other 4 & pid=$!
    sleep 1; echo "== beside a $other process"; "$p" lat 2000; wait $pid
  done
  timeout 20 "$p" pingpong 2000
  if mps_start; then
    timeout 10 "$p" waiter 4 & pid=$!
    sleep 1; echo "== MPS: beside a waiter process"; timeout 10 "$p" lat 2000; wait $pid
    echo "== MPS:"; timeout 20 "$p" pingpong 2000
    mps_stop
  fi
}

# Small all-reduces of device buffers (2 ranks, 8 B to 4 KiB) under variants that each rule out
# one cause of their latency (2 ms staged and 0.3 ms through IPC on an H100, where an 8-byte
# copy's round trip takes 7 us): the engine never sleeping (TUTTI_SPIN=1s), the ring instead of
# the one-hop algorithm (TUTTI_DIRECT_MAX=0), and MPS. The 8-byte time of each is summarized.
ar_small_variants() { # all_reduce_perf command...
  local v rc=0
  for v in "TUTTI_IPC=0" "TUTTI_IPC=0 TUTTI_SPIN=1s" "TUTTI_IPC=0 TUTTI_DIRECT_MAX=0" \
           "TUTTI_IPC=1" "TUTTI_IPC=1 TUTTI_SPIN=1s"; do
    echo "== 2 ranks, $v"
    # shellcheck disable=SC2086 # $v is a list of assignments
    env $v timeout 20 "$@" -N 2 -b 8 -e 4K -n 20 -w 5 | grep -E '^ +[0-9]+ ' || rc=1
  done
  if mps_start; then
    for v in "TUTTI_IPC=0" "TUTTI_IPC=0 TUTTI_SPIN=1s" "TUTTI_IPC=1"; do
      echo "== 2 ranks, MPS $v"
      # shellcheck disable=SC2086
      env $v timeout 20 "$@" -N 2 -b 8 -e 4K -n 20 -w 5 | grep -E '^ +[0-9]+ ' || rc=1
    done
    echo "== 4 ranks, MPS TUTTI_IPC=1"
    TUTTI_IPC=1 timeout 20 "$@" -N 4 -b 8 -e 4K -n 20 -w 5 | grep -E '^ +[0-9]+ ' || rc=1
    mps_stop
  fi
  return $rc
}

# The IPC all-reduce of 2 ranks (under MPS: with_mps) at 8 B to 256 MiB with its piece size and
# its one-shot/two-shot switch varied: how much of the time per piece is synchronization.
ipc_pieces() { # all_reduce_perf command...
  local v rc=0
  for v in "TUTTI_IPC_CHUNK=4m" "TUTTI_IPC_CHUNK=32m" "TUTTI_IPC_CHUNK=32m TUTTI_IPC_TWOSHOT_MIN=1t"; do
    echo "== 2 ranks, MPS $v"
    # shellcheck disable=SC2086 # $v is a list of assignments
    env $v timeout 30 "$@" -N 2 -b 1M -e 256M -f 4 -n 10 -w 2 | grep -E '^ +[0-9]+ ' || rc=1
  done
  return $rc
}

# MPS (one GPU context shared by the processes) for what follows, where it is installed.
mps_start() {
  if ! command -v nvidia-cuda-mps-control >/dev/null; then
    echo "no nvidia-cuda-mps-control: MPS not tried"
    return 1
  fi
  export CUDA_MPS_PIPE_DIRECTORY=$out/mps CUDA_MPS_LOG_DIRECTORY=$out/mps-log
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  timeout 10 nvidia-cuda-mps-control -d && sleep 1
}

mps_stop() {
  echo quit | timeout 10 nvidia-cuda-mps-control
  rm -rf "$CUDA_MPS_PIPE_DIRECTORY"
}

# COMMAND... under MPS (not run where MPS is missing).
with_mps() {
  mps_start || not_run "no nvidia-cuda-mps-control (MPS)"
  "$@"
  local rc=$?
  mps_stop
  return $rc
}

# The directory holding a file of this name under CUDA or Python's site-packages, or nothing.
find_lib_dir() { # file name
  local f
  f=$( (ls /usr/local/cuda/lib64/"$1" /usr/local/cuda*/targets/*/lib/"$1" 2>/dev/null
        python3 -c "import glob, site, sys
for d in site.getsitepackages() + [site.getusersitepackages()]:
    for f in glob.glob(d + '/nvidia/**/$1', recursive=True):
        print(f)" 2>/dev/null) | head -n 1)
  [ -n "$f" ] && dirname "$f"
}

# nccl-tests: TOOL [args...] with the library in $NT_LIB (the shim's directory or NVIDIA's),
# ranks from $NT_RANKS (1, or more through libtutti-one-gpu.so); their own check must report 0
# wrong values.
nccl_test() { # collective, args...
  local t=$1
  shift
  [ -n "${NCCL_TESTS:-}" ] || not_run "the bundle has no nccl-tests (gpu-bundle/MANIFEST)"
  [ -n "${NT_LIB:-}" ] || not_run "${NT_WHAT:-the NCCL library} was not found"
  [ -f "$NT_LIB/libnccl.so.2" ] || { echo "no $NT_LIB/libnccl.so.2"; return 1; }
  local cudart preload=$NT_LIB/libnccl.so.2 ranks=(-g 1)
  cudart=$(find_lib_dir libcudart.so.13)
  if [ "${NT_RANKS:-1}" -gt 1 ]; then
    preload="$NT_ONE_GPU $preload"
    ranks=(-t "$NT_RANKS" -g 1)
  fi
  # Preloaded by path: another libnccl.so.2 on the search path (CUDA's own) cannot answer.
  echo "library: $NT_LIB/libnccl.so.2; CUDA runtime: ${cudart:-not found}"
  env LD_PRELOAD="$preload" ONE_GPU_RANKS="${NT_RANKS:-1}" \
    LD_LIBRARY_PATH="$NT_LIB:$NCCL_TESTS/verifiable:$cudart" \
    "$NCCL_TESTS/${t}_perf" "${ranks[@]}" "$@" >"$out/nt.$$.txt" 2>&1
  local rc=$?
  cat "$out/nt.$$.txt"
  grep -q 'Out of bounds values : 0 OK' "$out/nt.$$.txt" ||
    { echo "nccl-tests' own check did not report 0 wrong values (exit $rc)"; rc=1; }
  rm -f "$out/nt.$$.txt"
  return $rc
}

# PyTorch over the shim: 2 ranks on GPU 0 (or the CPU over gloo), tests/gpu/torch_shim.py.
torch_ranks() { # mode (allreduce, ddp, gloo), weights file
  local mode=$1 wfile=$2 store pids=() rc=0
  python3 -c 'import torch' || not_run "python3 has no torch"
  store=$(mktemp -u "$out/store.$mode.XXXX")
  for r in 0 1; do
    if [ "$mode" = gloo ]; then
      WEIGHTS=$wfile python3 tests/gpu/torch_shim.py "$mode" $r 2 "$store" &
    else
      WEIGHTS=$wfile SHIM=$SHIM TUTTI_LOG_LEVEL=info LD_PRELOAD=$SHIM \
        python3 tests/gpu/torch_shim.py "$mode" $r 2 "$store" &
    fi
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  rm -f "$store"
  return $rc
}

torch_compare() { # the weights of the shim's DDP run and gloo's
  if [ ! -f "$1" ]; then
    [ "$gpu_count" -eq 0 ] && echo "no GPU: the DDP run on the GPU left no weights"
    return 1
  fi
  python3 -c "import sys, torch
a, b = torch.load(sys.argv[1]), torch.load(sys.argv[2])
d = (a - b).abs().max().item()
print('max abs difference', d, 'of', a.numel(), 'weights')
assert torch.allclose(a, b, rtol=1e-4, atol=1e-5), 'the GPU run over the shim and gloo differ'" "$@"
}
