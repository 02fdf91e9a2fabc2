#!/usr/bin/env bash
# ab.sh - two builds of tutti side by side: the same perf tools, sizes and rank count, launches
# interleaved (A B, B A, A B, ...) so that the machine's drift hits both alike. Prints, per tool
# and size, the median out-of-place time (us) and busbw (GB/s) of each build and B over A
# (busbw ratio; time ratio A/B, so above 1 means B is faster either way).
# Usage: perf/ab.sh BUILD_A BUILD_B [--launches N] [--ranks N] [--tools "all_reduce broadcast"]
#          [--sizes "8 1M 64M"]
set -euo pipefail
a=$1 b=$2; shift 2
launches=5 ranks=2 tools="all_reduce broadcast" sizes="8 1M 64M"
while [ $# -gt 0 ]; do
  case $1 in
    --launches) launches=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    *) echo "ab.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
for d in "$a" "$b"; do
  for t in $tools; do
    [ -x "$d/perf/${t}_perf" ] || { echo "ab.sh: no $d/perf/${t}_perf (build the perf tools)" >&2; exit 2; }
  done
done
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
run_one() { # build tool size launch
  local iters="-n 20 -w 5"
  case $3 in *M|*G) [ "${3%M}" -ge 16 ] 2>/dev/null && iters="-n 10 -w 2" ;; esac
  local out
  out=$(timeout 300 "$1/perf/$2_perf" -N "$ranks" -b "$3" -e "$3" $iters --halves out 2>&1) ||
    { echo "ab.sh: $1/perf/$2_perf -b $3 failed:" >&2; echo "$out" | tail -5 >&2; return 1; }
  echo "$out" | awk -v tag="$5 $2 $3" '!/^#/ && NF >= 9 { print tag, $6, $8; exit }'
}
for l in $(seq 1 "$launches"); do
  for t in $tools; do
    for s in $sizes; do
      if [ $((l % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
      for w in $order; do
        if [ "$w" = A ]; then d=$a; else d=$b; fi
        run_one "$d" "$t" "$s" "$l" "$w" >>"$raw"
      done
    done
  done
done
echo "# $launches interleaved launches, $ranks ranks; A = $a, B = $b; medians"
printf '%-12s %8s %12s %12s %10s %10s %8s\n' tool size "A time us" "B time us" "A GB/s" "B GB/s" "B/A"
python3 - "$raw" "$tools" "$sizes" <<'PY'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
for t in sys.argv[2].split():
    for s in sys.argv[3].split():
        m = {}
        for w in 'AB':
            sel = [r for r in rows if r[0] == w and r[1] == t and r[2] == s]
            m[w] = (st.median(float(r[3]) for r in sel), st.median(float(r[4]) for r in sel)) if sel else None
        if not m['A'] or not m['B']:
            print(f'{t:<12} {s:>8}  missing runs'); continue
        small = m['A'][1] == 0 or m['B'][1] == 0 or s[-1] not in 'MG'
        ratio = m['A'][0] / m['B'][0] if small else m['B'][1] / m['A'][1]
        print(f"{t:<12} {s:>8} {m['A'][0]:12.1f} {m['B'][0]:12.1f} {m['A'][1]:10.3f} {m['B'][1]:10.3f} {ratio:8.2f}{' (time)' if small else ''}")
PY
