#!/usr/bin/env bash
# bound.sh - every collective against this machine's memory bound, measured in one run (issue 38).
#
# A one-copy schedule moves each byte through memory once: every input byte a rank needs is read
# once (from wherever it lies) and every output byte is written once. With nccl-tests' size S
# (all-gather: the whole output; reduce-scatter: the whole input; all-to-all: one rank's
# buffer), the least memory traffic of one call, over all n ranks, is f x S:
#
#   all_reduce      f = 2n        every rank reads its n shares of inputs, writes n outputs
#   broadcast       f = 2n        (in place: 2(n-1), the root's buffer is already right)
#   reduce          f = n + 1     the root reads n inputs and writes one output
#   all_gather      f = 2n        (in place: 2(n-1), each rank's own block is in place)
#   reduce_scatter  f = n + 1     each rank reads its block of n inputs and writes it
#   alltoall        f = 2n        each rank reads S (n blocks) and writes S
#   sendrecv        f = 2n        each rank writes what it receives and it is read once
#
# With B the read+write bandwidth of the ranks' cores copying at once (perf/membw on each, as
# allreduce_bound.sh), the call takes at least f S / B: algbw <= B / f and busbw <= b(n) B / f
# (b(n): nccl-tests' bus factor, 2(n-1)/n for all-reduce, (n-1)/n for all-gather,
# reduce-scatter and all-to-all, 1 for the rest). B is what memcpy reaches per core; a kernel
# with more streams in flight can get more from the memory system, so over 100% means the bound
# is the weaker of the two.
#
# The run: membw, then --launches rounds of every collective (one launch each, interleaved),
# then membw again (B: the mean). Prints each launch's busbw (out of place, in place), the
# medians and each as a fraction of its bound.
#
# Usage: perf/bound.sh [--colls "all_reduce broadcast ..."] [--size 256M] [--launches 5]
#                      [--iters 10] [--ranks 2] [--build DIR] [--tutti-args "-R 2"]
set -euo pipefail
cd "$(dirname "$0")/.."

colls="all_reduce broadcast reduce all_gather reduce_scatter alltoall sendrecv"
size=256M
launches=5
iters=10
ranks=2
build=build
targs=""
while [ $# -gt 0 ]; do
  case "$1" in
    --colls) colls="$2"; shift ;;
    --size) size="$2"; shift ;;
    --launches) launches="$2"; shift ;;
    --iters) iters="$2"; shift ;;
    --ranks) ranks="$2"; shift ;;
    --build) build="$2"; shift ;;
    --tutti-args) targs="$2"; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "bound: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for c in $colls; do
  case "$c" in
    all_reduce|broadcast|reduce|all_gather|reduce_scatter|alltoall|sendrecv) ;;
    *) echo "bound: no bound for collective $c" >&2; exit 2 ;;
  esac
  [ -x "$build/perf/${c}_perf" ] || { echo "bound: $build/perf/${c}_perf not built" >&2; exit 2; }
done
[ -x "$build/perf/membw" ] || { echo "bound: $build/perf/membw not built" >&2; exit 2; }
cores=$(nproc)
bind=core
[ "$cores" -ge "$ranks" ] || bind=none

# shellcheck source=perf/membw_lib.sh
. perf/membw_lib.sh

# f for the out-of-place (half 0) or in-place (half 1) form, and the bus factor.
factor() {
  local n="$ranks"
  case "$1:$2" in
    broadcast:1|all_gather:1) echo $((2 * (n - 1))) ;;
    reduce:*|reduce_scatter:*) echo $((n + 1)) ;;
    *) echo $((2 * n)) ;;
  esac
}
busf() {
  case "$1" in
    all_reduce) awk -v n="$ranks" 'BEGIN { print 2 * (n - 1) / n }' ;;
    all_gather|reduce_scatter|alltoall) awk -v n="$ranks" 'BEGIN { print (n - 1) / n }' ;;
    *) echo 1 ;;
  esac
}

b0=$(membw_all "$build" "$ranks")
echo "memory, $ranks cores copying at once: read+write $b0 GB/s"
declare -A oop inp
for ((i = 1; i <= launches; i++)); do
  for c in $colls; do
    # shellcheck disable=SC2086 # targs is a word list
    line=$("$build/perf/${c}_perf" -N "$ranks" --bind "$bind" -b "$size" -e "$size" \
      -n "$iters" -w 2 $targs | grep -E '^ +[0-9]+ ' | tail -1)
    read -r o p < <(awk '{ print $8, $12 }' <<<"$line")
    echo "launch $i: $c $size busbw $o GB/s out of place, $p in place"
    oop[$c]+="$o "
    inp[$c]+="$p "
  done
done
b1=$(membw_all "$build" "$ranks")
echo "memory again: read+write $b1 GB/s"
echo
echo "B = mean of $b0 and $b1 GB/s; $ranks ranks; ${targs:-plain buffers}"
printf '%-15s %10s %8s %7s %10s %8s %7s\n' collective "oop GB/s" bound "" "ip GB/s" bound ""
for c in $colls; do
  # shellcheck disable=SC2086 # lists of numbers
  mo=$(median ${oop[$c]})
  # shellcheck disable=SC2086
  mi=$(median ${inp[$c]})
  awk -v b0="$b0" -v b1="$b1" -v fo="$(factor "$c" 0)" -v fi="$(factor "$c" 1)" \
    -v bf="$(busf "$c")" -v mo="$mo" -v mi="$mi" -v c="$c" 'BEGIN {
    b = (b0 + b1) / 2; bo = bf * b / fo; bi = bf * b / fi
    po = mo == "N/A" ? "" : sprintf("%.0f%%", 100 * mo / bo)
    pi = mi == "N/A" ? "" : sprintf("%.0f%%", 100 * mi / bi)
    printf "%-15s %10s %8.2f %7s %10s %8.2f %7s\n", c, mo, bo, po, mi, bi, pi
  }'
done
