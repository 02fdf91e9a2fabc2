# shellcheck shell=bash
# membw_lib.sh - sourced by bound.sh and allreduce_bound.sh: the memory bandwidth B of the
# ranks' cores copying at once, and the median of a list of numbers.

# membw_all BUILD RANKS: read+write GB/s of cores 0..RANKS-1 (as many as there are) running
# perf/membw at once, summed.
membw_all() {
  local build="$1" ranks="$2" cores pids=() f total=0 d c
  cores=$(nproc)
  d="$(mktemp -d)"
  for ((c = 0; c < ranks && c < cores; c++)); do
    taskset -c "$c" "$build/perf/membw" -r 9 >"$d/$c" &
    pids+=($!)
  done
  wait "${pids[@]}"
  for ((c = 0; c < ranks && c < cores; c++)); do
    f=$(sed -n 's/.*read+write \([0-9.]*\) GB\/s.*/\1/p' "$d/$c")
    total=$(awk -v a="$total" -v b="$f" 'BEGIN { printf "%.2f", a + b }')
  done
  rm -rf "$d"
  echo "$total"
}

# median X...: the median of the numeric arguments (others, such as N/A, are left out), or N/A.
median() {
  printf '%s\n' "$@" | { grep -E '^[0-9.]+$' || true; } | sort -g |
    awk '{ v[NR] = $1 } END { if (NR == 0) print "N/A"; else print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
