#!/usr/bin/env bash
# premul_cost.sh - what a pre-multiplied sum costs against SUM: all_reduce_perf -o sum and
# -o premulsum (scalar 1 on every rank: SUM's data and check, every element through the
# multiply of the scaled input), launch after launch, and the medians side by side.
#   perf/premul_cost.sh [--build DIR] [--ranks N] [--launches L] [-- perf options]
# Prints a Markdown table: size, SUM's and PREMUL_SUM's median time per call, their ratio.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build ranks=2 launches=5
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "premul_cost: unknown option $1" >&2; exit 2 ;;
  esac
done
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(-b 8 -e 128M -f 16 -n 30 -w 5)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for ((l = 1; l <= launches; l++)); do
  for op in sum premulsum; do
    "$build/perf/all_reduce_perf" -N "$ranks" --bind core --halves out -o "$op" "${opts[@]}" \
      --json "$dir/$op-$l.json" >"$dir/$op-$l.txt" 2>&1 ||
      { cat "$dir/$op-$l.txt" >&2; exit 1; }
  done
done
python3 - "$dir" "$launches" <<'PY'
import json, statistics, sys
d, n = sys.argv[1], int(sys.argv[2])
t = {}
for op in ("sum", "premulsum"):
    for l in range(1, n + 1):
        for x in json.load(open(f"{d}/{op}-{l}.json"))["results"]:
            t.setdefault((op, x["size"]), []).append(x["out_of_place"]["time"])
print("| size (B) | SUM (us) | PREMUL_SUM (us) | PREMUL_SUM / SUM |")
print("|---:|---:|---:|---:|")
for s in sorted({k[1] for k in t}):
    a, b = statistics.median(t[("sum", s)]), statistics.median(t[("premulsum", s)])
    print(f"| {s} | {a:.2f} | {b:.2f} | {b / a:.2f} |")
print(f"\nMedians of {n} launches each, interleaved (sum, premulsum, sum, ...).")
PY
