#!/usr/bin/env bash
# README command 1: install what is needed, build, and run the main job on local ranks:
# tutti-train (trainer/README.md) on 4 ranks forked on this machine with its three checks
# (1 rank vs 4 ranks, identical weights on every rank after every step, final test accuracy
# >= 85%), then all_reduce_perf on 4 ranks over shared memory, results checked. Exits non-zero
# as soon as a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo "== tutti-train: 4 local ranks, Fashion-MNIST MLP, 3 epochs, --check =="
./build/trainer/tutti-train -N 4 --check --log-every 100
echo "== all_reduce_perf: 4 local ranks, shared memory, 8 B .. 64 MiB, float sum, checked =="
./build/perf/all_reduce_perf -N 4 -b 8 -e 64M -f 4 -w 5 -n 20 -c 1
