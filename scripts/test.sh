#!/usr/bin/env bash
# README command 2: install what is needed (the Debian packages, and torch 2.15 in a venv outside
# the clone: scripts/torch-venv.sh), build, run every test suite, and print one closing line
# that counts the tests of all Criterion suites together. The wheel check (scripts/
# wheel_check.sh) runs after the GPU check's bare root. Then the build without CUDA
# (scripts/nocuda.sh) and its suites.
# Then the hardening checks (skipped with HARDENING=0): every fuzz harness for
# FUZZ_SECONDS (default 20), the unit, example, threads, build, nccl and most integration
# suites again under ASan + UBSan (scripts/sanitize.sh asan), the README example and the threads
# program under TSan and valgrind on a short perf run; their results are in the same closing
# line.
# Last, /dev/shm: a segment of tutti's that appeared during the run and is still there is a leak
# (no segment may outlive its job, also when a test kills ranks); it fails the run, named.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh || exit 1
# torch 2.15 from the package index in a venv outside the clone (suite python's torch 2 tests)
start=$SECONDS
venv=ok
bash scripts/torch-venv.sh || venv=failed
echo "test.sh: the torch 2 venv took $((SECONDS - start)) s"
bash scripts/build.sh || exit 1
echo "torch2_venv $venv" >build/torch-venv-result.txt
shm_segments() { ls /dev/shm 2>/dev/null | grep '^tutti' | sort; }
shm_before=$(shm_segments)
meson test -C build --print-errorlogs --num-processes 1 "$@"
rc=$?
logs=(build/meson-logs/testlog.json)
start=$SECONDS
bash scripts/nocuda.sh || rc=1
echo "test.sh: the build without CUDA and its suites took $((SECONDS - start)) s"
logs+=(build-nocuda/meson-logs/testlog.json)
start=$SECONDS
bash tests/rdma/vm_suite.sh || rc=1
echo "test.sh: the RDMA checks in the Soft-RoCE VM took $((SECONDS - start)) s"
logs+=(--plain build/rdma-vm-results.txt)
# The GPU check on a bare Debian root without tutti's dependencies (docs/GPU.md): every step
# must get as far as "no GPU". GPU_BARE=0 leaves it out.
if [ "${GPU_BARE:-1}" != 0 ]; then
  start=$SECONDS
  gb=failed
  bash scripts/gpu_bundle.sh && bash scripts/gpu_check_bare.sh build/gpu-check-bare && gb=ok
  echo "gpu_check_bare $gb" >build/gpu-check-bare-result.txt
  [ $gb = ok ] || rc=1
  echo "test.sh: the GPU check in a bare root took $((SECONDS - start)) s"
  logs+=(--plain build/gpu-check-bare-result.txt)
fi
# The wheel: pip install . with build isolation, python -m build + auditwheel, and the wheel in
# a fresh venv in the bare root (scripts/wheel_check.sh). WHEEL_CHECK=0 leaves it out.
if [ "${WHEEL_CHECK:-1}" != 0 ]; then
  start=$SECONDS
  bash scripts/wheel_check.sh build/wheel-check.txt || rc=1
  echo "test.sh: the wheel check took $((SECONDS - start)) s"
  logs+=(--plain build/wheel-check.txt)
fi
if [ "${HARDENING:-1}" != 0 ]; then
  start=$SECONDS
  bash tests/fuzz/run.sh "${FUZZ_SECONDS:-20}" || rc=1
  echo "test.sh: fuzzing took $((SECONDS - start)) s"
  start=$SECONDS
  # The integration tests of suite integ_sanitize (all but test_collectives' full matrix).
  bash scripts/sanitize.sh asan --suite unit --suite example --suite threads --suite build \
    --suite integ_sanitize --suite nccl "$@" || rc=1
  echo "test.sh: the ASan + UBSan suites took $((SECONDS - start)) s"
  start=$SECONDS
  # Under TSan only what runs without Criterion: its process runner (BoxFort) cannot map its
  # arena under TSan and aborts every test binary (Criterion issue #274). tests/threads/
  # exercises the library's threads for it (progress thread, two comms, abort).
  bash scripts/sanitize.sh tsan --suite example --suite threads "$@" || rc=1
  echo "test.sh: the TSan programs took $((SECONDS - start)) s"
  vg=failed
  bash scripts/sanitize.sh valgrind && vg=ok
  echo "valgrind_all_reduce_perf $vg" >build/valgrind-result.txt
  logs+=(build-asan/meson-logs/testlog-sanitize.json build-tsan/meson-logs/testlog-sanitize.json
         --plain build-fuzz/fuzz-results.txt
         --plain build/valgrind-result.txt)
fi
shm_left=$(comm -13 <(echo "$shm_before") <(shm_segments))
if [ -z "$shm_left" ]; then
  echo "dev_shm_clean ok" >build/shm-check-result.txt
else
  echo "test.sh: shared memory segments left in /dev/shm by this run:" $shm_left
  echo "dev_shm_clean failed: left in /dev/shm: $(echo $shm_left)" >build/shm-check-result.txt
  rc=1
fi
logs+=(--plain build/shm-check-result.txt --plain build/torch-venv-result.txt)
python3 scripts/test-summary.py "${logs[@]}"
summary_rc=$?
[ $rc -eq 0 ] && [ $summary_rc -eq 0 ]
