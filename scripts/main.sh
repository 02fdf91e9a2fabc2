#!/usr/bin/env bash
# README command 1: install what is needed, build, and run the main job on local ranks:
# all_reduce_perf on 4 ranks forked on this machine, over shared memory, results checked.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
echo "== all_reduce_perf: 4 local ranks, shared memory, 8 B .. 64 MiB, float sum, checked =="
./build/perf/all_reduce_perf -N 4 -b 8 -e 64M -f 4 -w 5 -n 20 -c 1
