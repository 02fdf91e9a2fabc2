#!/bin/sh
# test_hosts_bench.sh BUILD_DIR - the smoke run of hosts_bench.sh (meson suite perf), so that the
# script cannot rot: --quick (2 namespace hosts, 1 rank each, tiny sizes, 1 launch), all-reduce
# with ring, tree and a name no build has (which must be skipped with a note), both tuners;
# then 2 ranks per host with the hierarchical all-reduce, which must apply;
# written under BUILD_DIR/hosts-bench-test. About 10 s. Skips (exit 77) when not root or ip(8)
# or tc(8) is missing.
build="$(cd "$1" && pwd)"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
  echo "test_hosts_bench: needs root, ip(8) and tc(8) for network namespaces: skipped"
  exit 77
fi
out="$build/hosts-bench-test"
rm -rf "$out"
"$(dirname "$0")/hosts_bench.sh" --quick --colls all_reduce --algos "ring tree no_such_algo" \
  --build "$build" --out "$out/hosts.md" || exit 1
[ -s "$out/hosts.tsv" ] || { echo "test_hosts_bench: no $out/hosts.tsv"; exit 1; }
for want in '### all_reduce, 2 hosts x 1 rank(s) = 2 ranks, small messages' \
            '### all_reduce, 2 hosts x 1 rank(s) = 2 ranks, large messages' \
            '| size | ring | tree | auto, static | auto, model | fastest forced |' \
            'all_reduce has no algorithm no_such_algo in this build' ', 0 failed launches)'; do
  grep -qF "$want" "$out/hosts.md" || { echo "test_hosts_bench: no '$want' in $out/hosts.md"; exit 1; }
done
# Every size row has a time for each variant and what each tuner picked.
rows=$(grep -cE '^\| [0-9]+ (B|KiB) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \([a-z]+\) \| [0-9.]+ \([a-z]+\) \| (ring|tree) \|$' "$out/hosts.md")
[ "$rows" = 6 ] || { echo "test_hosts_bench: $rows complete size rows, expected 6"; cat "$out/hosts.md"; exit 1; }
# Two ranks on each host must share it (shared memory inside, one host id): the hierarchical
# all-reduce applies only then, so an n/a here means the ranks of a host were set apart (as
# `ip netns exec`'s private mount namespace per process once did).
"$(dirname "$0")/hosts_bench.sh" --quick --ranks-per-host 2 --colls all_reduce --algos hier \
  --tuners static --build "$build" --out "$out/hier.md" || exit 1
if grep -q 'does not apply\|n/a' "$out/hier.md"; then
  echo "test_hosts_bench: hier did not apply on 2 hosts x 2 ranks:"; cat "$out/hier.md"; exit 1
fi
echo "test_hosts_bench: ok"
