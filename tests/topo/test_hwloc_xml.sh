#!/usr/bin/env bash
# tutti-info on hwloc's own test topologies (tests/topo/hwloc-xml): for each file of
# expected.txt, hwloc-info (hwloc-nox) must report the table's package, NUMA node, core, PU and
# PCI device counts (so the table stays hwloc's word), `tutti-info --topo-file F` must print
# the same counts and the table's GPUs and NICs, and `--ranks N` must print a ring that lists
# each of the N ranks once. Skipped (77) when hwloc-info is not installed.
# usage: test_hwloc_xml.sh TUTTI_INFO DIR
set -u
info="$1" dir="$2"
if ! command -v hwloc-info > /dev/null; then
  echo "SKIP: hwloc-info is not installed (Debian package hwloc-nox)"
  exit 77
fi
tmp=$(mktemp -d /tmp/tutti-hwloc-xml-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# hwloc's count of objects of type $2 in file $1 (0 when it has none).
count() {
  hwloc-info --if xml -i "$1" --filter io:important |
    awk -v t="$2" '{ for (i = 2; i <= NF; i++) if ($i == t && $(i + 1) ~ /^\(type/) n = $(i - 1) }
                   END { print n + 0 }'
}

files=0
while read -r f pkg numa cores pus pci gpus nics rdma _; do
  case "$f" in '#'* | '') continue ;; esac
  files=$((files + 1))
  x="$dir/$f"
  got="$(count "$x" Package) $(count "$x" NUMANode) $(count "$x" Core) $(count "$x" PU) $(count "$x" PCIDev)"
  [ "$got" = "$pkg $numa $cores $pus $pci" ] ||
    fail "$f: hwloc-info counts '$got', expected.txt '$pkg $numa $cores $pus $pci'"
  "$info" --topo-file "$x" > "$tmp/t.txt" 2>&1 || { fail "$f: --topo-file exited with $?"; continue; }
  for want in "CPUs: $pkg package(s), $numa NUMA node(s), $cores core(s), $pus hardware thread(s)" \
              "PCI: $pci device(s) kept by hwloc" "GPUs: $gpus;" "NICs: $nics ($rdma RDMA)"; do
    grep -qF -- "$want" "$tmp/t.txt" || fail "$f: tutti-info lacks '$want'"
  done
  for n in 1 5 16; do
    "$info" --topo-file "$x" --ranks "$n" > "$tmp/r.txt" 2>&1 || { fail "$f --ranks $n: exit $?"; continue; }
    # The table's rows: "  pos rank host ...": every rank 0..n-1 exactly once.
    ranks=$(awk '/^ring of/ { on = 1; next } on && /^  [0-9]/ { print $2 }' "$tmp/r.txt" | sort -n | tr '\n' ' ')
    [ "$ranks" = "$(seq -s ' ' 0 $((n - 1))) " ] || fail "$f --ranks $n: ring lists '$ranks'"
  done
done < "$dir/expected.txt"
[ "$files" -ge 8 ] || fail "only $files files in $dir/expected.txt"
[ "$fails" = 0 ] && echo "all $files hwloc test topologies passed"
exit $((fails > 0))
