#!/usr/bin/env bash
# Install the Debian packages tutti needs to build, test and benchmark (idempotent).
# Build: meson, ninja, pkg-config, a C compiler, libsodium (handshake HMAC), hwloc, verbs.
# hwloc-nox: hwloc-info, which tests/topo/test_hwloc_xml.sh checks the vendored topologies with.
# Tests: Criterion; g++ (tests/gpu runs the GPU kernels' body on the CPU; nvcc's host compiler
# where CUDA is installed); Open MPI (mpirun launch test and the perf comparison); iproute2 (network
# namespaces for the multi-host test and the fault matrix: ip, tc, ss); procps (pgrep/ps in fault
# tests); graphviz (dot(1), which tutti-info --png renders with; its test skips without it);
# libpmix-dev (PMIx's header: the secret through the launcher, src/comm/pmix.c) and slurm-wlm
# (with munge: the srun --mpi=pmix test runs its own two-node cluster, tests/integ/srun_hosts.sh).
# Trainer: zlib (gzip IDX files) and Fashion-MNIST (dataset-fashion-mnist, in
# /usr/share/datasets/fashion-mnist).
# Python: python3-numpy and python3-torch (torch 1.13, for /usr/bin/python3) for the tutti
# package and its torch.distributed backend (suite python), the trainer's DDP comparison and
# perf/torch_allreduce_bench.py; about 30 s to install on the development VM. python3-mesonpy,
# python3-venv and python3-pip: `pip install --no-build-isolation .` (pyproject.toml) and its
# test in a fresh virtual environment.
# Style: clang-format (scripts/check_format.sh, suite style).
# Hardening: clang and its runtime libraries (libFuzzer, sanitizers) for tests/fuzz; valgrind
# for scripts/sanitize.sh valgrind.
# GPU check: debootstrap (the bare root of scripts/gpu_check_bare.sh), patchelf and binutils
# (scripts/gpu_bundle.sh sets the bundled libraries' RUNPATH, strips them, reads glibc versions).
set -euo pipefail
pkgs=(meson ninja-build pkg-config gcc g++ libc6-dev libcriterion-dev libhwloc-dev hwloc-nox
      libibverbs-dev librdmacm-dev libsodium-dev openmpi-bin libopenmpi-dev libpmix-dev iproute2 procps
      slurm-wlm python3
      zlib1g-dev dataset-fashion-mnist clang libclang-rt-dev valgrind python3-numpy python3-torch
      graphviz debootstrap patchelf binutils clang-format python3-mesonpy python3-venv python3-pip)
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ] && [ -z "${CI:-}" ]; then
  echo "install-deps: all ${#pkgs[@]} packages present"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
echo "install-deps: installed ${pkgs[*]}"
