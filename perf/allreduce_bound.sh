#!/usr/bin/env bash
# allreduce_bound.sh - all-reduce against this machine's memory bandwidth, measured in one run.
#
# An all-reduce of N bytes per rank must read every rank's N input bytes and write every rank's
# N output bytes at least once: 2N bytes of memory traffic per rank. With B the read+write
# bandwidth of the ranks' cores copying at once, algbw <= B / (2 * ranks) for ranks on one
# memory system. At 2 ranks busbw equals algbw, so the bound is B / 4.
#
# The run: perf/membw on each of the ranks' cores at once (B = the sum of their read+write
# rates), then --launches launches of all_reduce_perf at --size for each buffer kind (plain
# memory, -R 0; and tutti_mem_alloc windows, -R 2, where each rank reads and writes its peers'
# buffers in place), interleaved, then membw again; B is the mean of the two measurements.
# Prints each launch's busbw (out of place, in place), their medians, and the medians as
# fractions of the bound.
#
# Usage: perf/allreduce_bound.sh [--size 256M] [--launches 5] [--iters 10] [--build DIR]
#                                [--register "0 2"]
set -euo pipefail
cd "$(dirname "$0")/.."

size=256M
launches=5
iters=10
build=build
regs="0 2"
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size="$2"; shift ;;
    --launches) launches="$2"; shift ;;
    --iters) iters="$2"; shift ;;
    --build) build="$2"; shift ;;
    --register) regs="$2"; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "allreduce_bound: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for t in membw all_reduce_perf; do
  [ -x "$build/perf/$t" ] || { echo "allreduce_bound: $build/perf/$t not built" >&2; exit 2; }
done
ranks=2
[ "$(nproc)" -ge "$ranks" ] || { echo "allreduce_bound: needs $ranks cores" >&2; exit 2; }

# shellcheck source=perf/membw_lib.sh
. perf/membw_lib.sh

b0=$(membw_all "$build" "$ranks")
echo "memory, cores 0-$((ranks - 1)) copying at once: read+write $b0 GB/s"
declare -A oop inp
for ((i = 1; i <= launches; i++)); do
  for r in $regs; do
    line=$("$build/perf/all_reduce_perf" -N "$ranks" --bind core -b "$size" -e "$size" \
      -n "$iters" -w 2 -R "$r" | grep -E '^ +[0-9]+ ' | tail -1)
    read -r o p < <(awk '{ print $8, $12 }' <<<"$line")
    echo "launch $i, -R $r: all-reduce $size busbw $o GB/s out of place, $p in place"
    oop[$r]+="$o "
    inp[$r]+="$p "
  done
done
b1=$(membw_all "$build" "$ranks")
echo "memory again: read+write $b1 GB/s"
awk -v b0="$b0" -v b1="$b1" -v n="$ranks" 'BEGIN {
  b = (b0 + b1) / 2; bound = b / (2 * n)
  printf "bound: B / (2 x %d ranks) = %.2f / %d = %.2f GB/s (B: mean of %.2f and %.2f)\n", n, b, 2 * n, bound, b0, b1
}'
for r in $regs; do
  # shellcheck disable=SC2086
  mo=$(median ${oop[$r]})
  # shellcheck disable=SC2086
  mi=$(median ${inp[$r]})
  awk -v b0="$b0" -v b1="$b1" -v n="$ranks" -v mo="$mo" -v mi="$mi" -v s="$size" -v r="$r" 'BEGIN {
    bound = (b0 + b1) / 2 / (2 * n)
    what = r == 2 ? "windows (-R 2)" : r == 1 ? "registered (-R 1)" : "plain buffers (-R 0)"
    printf "all-reduce %s, %s, median of the launches: %.2f GB/s out of place (%.0f%% of the bound), %.2f in place (%.0f%%)\n", s, what, mo, 100 * mo / bound, mi, 100 * mi / bound
  }'
done
