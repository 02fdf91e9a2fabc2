#!/bin/sh
# test_compare.sh BUILD_DIR - the smoke run of compare.sh (meson suite perf), so that the script
# cannot rot: Open MPI only, all-reduce and broadcast, 2 ranks, --quick, written under
# BUILD_DIR/compare-test. Broadcast must be compared in place on both sides (MPI_Bcast has no
# out-of-place form), all-reduce out of place.
# Passes when the run and its checks passed and the tables were written; skips (exit 77) when
# Open MPI or mpi_coll_perf is missing.
build="$(cd "$1" && pwd)"
if [ ! -x "$build/perf/mpi_coll_perf" ] || ! command -v mpirun.openmpi >/dev/null; then
  echo "test_compare: no Open MPI or no mpi_coll_perf: skipped"
  exit 77
fi
out="$build/compare-test"
rm -rf "$out"
"$(dirname "$0")/compare.sh" --quick --no-install --peers ompi --colls "all_reduce broadcast" --ranks 2 \
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
# Like against like: the form each table says it compares, and the calls both sides ran.
grep -q 'median over launches of the out-of-place result' "$out"/*-quick-all_reduce.md ||
  { echo "test_compare: all-reduce is not compared out of place"; exit 1; }
grep -q 'median over launches of the in-place result (MPI_Bcast' "$out"/*-quick-broadcast.md ||
  { echo "test_compare: broadcast is not compared in place"; exit 1; }
for lib in tutti ompi; do
  grep -q "^=== $lib-2-shm-1 .*--halves in" "$out"/*-quick-broadcast.log ||
    { echo "test_compare: $lib's broadcast did not run with --halves in"; exit 1; }
done
echo "test_compare: ok"
