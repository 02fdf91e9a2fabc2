#!/bin/sh
# test_compare.sh BUILD_DIR - the smoke run of compare.sh (meson suite perf), so that the script
# cannot rot: Open MPI only, all-reduce, 2 ranks, --quick, written under BUILD_DIR/compare-test.
# Passes when the run and its checks passed and the tables were written; skips (exit 77) when
# Open MPI or mpi_coll_perf is missing.
build="$(cd "$1" && pwd)"
if [ ! -x "$build/perf/mpi_coll_perf" ] || ! command -v mpirun.openmpi >/dev/null; then
  echo "test_compare: no Open MPI or no mpi_coll_perf: skipped"
  exit 77
fi
out="$build/compare-test"
rm -rf "$out"
"$(dirname "$0")/compare.sh" --quick --no-install --peers ompi --colls all_reduce --ranks 2 \
  --build "$build" --out "$out" || exit 1
for f in all_reduce.md all_reduce.json all_reduce.log summary.md; do
  set -- "$out"/*-quick-"$f"
  [ -s "$1" ] || { echo "test_compare: no $f in $out"; exit 1; }
done
# Both transports, both libraries, the ratios, and no wrong element.
for want in '### 2 ranks, shared memory' '### 2 ranks, TCP' 'tutti/Open MPI' \
            'Wrong elements over all checked results: 0.'; do
  grep -q "$want" "$out"/*-quick-all_reduce.md || { echo "test_compare: no '$want'"; exit 1; }
done
grep -q '^| 8 | ' "$out"/*-quick-all_reduce.md || { echo "test_compare: no 8-byte row"; exit 1; }
echo "test_compare: ok"
