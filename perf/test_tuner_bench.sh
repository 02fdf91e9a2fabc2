#!/bin/sh
# test_tuner_bench.sh BUILD_DIR - the smoke run of tuner_bench.sh (meson suite perf), so that the
# script cannot rot: --quick (2 ranks over shared memory and over TCP, all-reduce, tiny sizes,
# one launch), written under BUILD_DIR/tuner-bench-test. A few seconds. Checks the tables, that
# every size row has a time per variant and what each tuner picked (the same on every rank, or
# the run fails), and that nothing failed.
build="$(cd "$1" && pwd)"
out="$build/tuner-bench-test"
rm -rf "$out"
"$(dirname "$0")/tuner_bench.sh" --quick --build "$build" --out "$out/tuner.md" || exit 1
[ -s "$out/tuner.tsv" ] || { echo "test_tuner_bench: no $out/tuner.tsv"; exit 1; }
for want in '### all_reduce, 2 ranks on 1 host(s), shm, small messages' \
            '### all_reduce, 2 ranks on 1 host(s), tcp, large messages' \
            '| auto, static | auto, model | fastest forced |' ', 0 failed launches;'; do
  grep -qF "$want" "$out/tuner.md" || { echo "test_tuner_bench: no '$want' in $out/tuner.md"; exit 1; }
done
rows=$(grep -cE '^\| [0-9]+ (B|KiB|MiB) \|( [0-9.]+ \|)+ [0-9.]+ \([a-z]+\) \| [0-9.]+ \([a-z]+\) \| [a-z]+ \|$' "$out/tuner.md")
[ "$rows" = 10 ] || { echo "test_tuner_bench: $rows complete size rows, expected 10"; cat "$out/tuner.md"; exit 1; }
echo "test_tuner_bench: ok"
