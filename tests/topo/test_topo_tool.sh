#!/usr/bin/env bash
# tutti-info's topology commands, on this machine and on synthetic ones from gen_dgx_xml.py.
# usage: test_topo_tool.sh TUTTI_INFO PYTHON3 GEN [png]
# With "png" it checks only --png, and is skipped (exit 77) when dot(1) is not installed.
set -u
info="$1" py="$2" gen="$3" mode="${4:-}"
tmp=$(mktemp -d /tmp/tutti-topo-tool-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
has() { grep -qF -- "$2" "$1" || fail "$(basename "$1") lacks '$2'"; }

"$py" "$gen" > "$tmp/dgx.xml" || { echo "generator failed"; exit 1; }
"$py" "$gen" --nvlink-pairs 0-4,1-5,2-6,3-7 > "$tmp/pairs.xml" || exit 1

if [ "$mode" = png ]; then
  if ! command -v dot > /dev/null; then
    echo "SKIP: dot(1) is not installed (Debian package graphviz), so --png cannot be tested"
    exit 77
  fi
  "$info" --topo-file "$tmp/pairs.xml" --ranks 16 --png "$tmp/ring.png" > /dev/null ||
    fail "--png exited with $?"
  head -c 8 "$tmp/ring.png" | od -An -c | grep -q 'P   N   G' || fail "--png wrote no PNG"
  exit $((fails > 0))
fi

# This machine: what was found, and a "missing:" line for each part that is not there.
"$info" --topo > "$tmp/me.txt" 2>&1 || fail "--topo exited with $?"
has "$tmp/me.txt" "topology: this machine"
has "$tmp/me.txt" "NVML: "
if ! ls /dev/nvidia[0-9]* > /dev/null 2>&1; then
  has "$tmp/me.txt" "missing: GPU: no NVIDIA GPU"
fi
if [ -z "$(ls /sys/class/infiniband 2> /dev/null)" ]; then
  has "$tmp/me.txt" "missing: RDMA: no OpenFabrics (verbs) device"
fi

# --dump writes hwloc XML that loads back as the same machine.
"$info" --topo --dump "$tmp/me.xml" > /dev/null || fail "--dump exited with $?"
"$info" --topo-file "$tmp/me.xml" > "$tmp/me2.txt" || fail "reloading the dump failed"
for key in "PCI:" "GPUs:" "NICs:"; do
  [ "$(grep "^$key" "$tmp/me.txt")" = "$(grep "^$key" "$tmp/me2.txt")" ] ||
    fail "the dump changed the line '$key'"
done

# The DGX-like machine: 2 packages, 8 GPUs, 8 RDMA NICs, 4 PCIe switches.
"$info" --topo-file "$tmp/dgx.xml" > "$tmp/dgx.txt" || fail "--topo-file exited with $?"
has "$tmp/dgx.txt" "CPUs: 2 package(s), 2 NUMA node(s), 32 core(s)"
has "$tmp/dgx.txt" "4 PCIe switch(es)"
has "$tmp/dgx.txt" "GPUs: 8; NVLink: the file's NVLinkBandwidth matrix"
has "$tmp/dgx.txt" "NICs: 8 (8 RDMA)"
has "$tmp/dgx.txt" "gpu5 cuda5: 0000:74:00.0, package 1, NUMA 1, PCIe switch 2"
has "$tmp/dgx.txt" "nearest NIC mlx5_5 (PCIe switch)"
grep -q "^missing:" "$tmp/dgx.txt" && fail "the DGX machine lacks nothing: $(grep '^missing' "$tmp/dgx.txt")"

# Rings: 16 ranks are 2 hosts of 8; NVLink inside, one rail-aligned network hop each way.
"$info" --topo-file "$tmp/dgx.xml" --ranks 16 > "$tmp/ring.txt" || fail "--ranks exited with $?"
has "$tmp/ring.txt" "ring of 16 rank(s) on 2 host(s)"
has "$tmp/ring.txt" "links: 14 NVLink, 2 network"
has "$tmp/ring.txt" "network (mlx5_7 -> mlx5_7)"
has "$tmp/ring.txt" "network (mlx5_0 -> mlx5_0)"
TUTTI_TOPO_FILE="$tmp/pairs.xml" "$info" --rings 8 > "$tmp/pairs.txt" || fail "--rings exited with $?"
has "$tmp/pairs.txt" "links: 4 NVLink, 2 PCIe switch, 2 NUMA node"

# Graphviz: the machine with the ring, one red edge per hop.
"$info" --topo-file "$tmp/dgx.xml" --ranks 16 --dot - > "$tmp/ring.dot" || fail "--dot exited with $?"
head -1 "$tmp/ring.dot" | grep -q "^digraph" || fail "--dot - wrote no digraph"
[ "$(grep -c 'color=red' "$tmp/ring.dot")" = 16 ] || fail "--dot: not 16 ring edges"

# Bad files and options: clear errors, no output taken for a topology.
"$info" --topo-file /nonexistent/x.xml > "$tmp/o" 2> "$tmp/e"
[ $? = 1 ] || fail "a missing file must exit 1"
has "$tmp/e" "/nonexistent/x.xml: No such file or directory"
echo "<topology>" > "$tmp/bad.xml"
TUTTI_TOPO_FILE="$tmp/bad.xml" "$info" --topo > "$tmp/o" 2> "$tmp/e"
[ $? = 1 ] || fail "a bad TUTTI_TOPO_FILE must exit 1"
has "$tmp/e" "is not a valid hwloc XML topology"
"$info" --topo --ranks 0 > "$tmp/o" 2> "$tmp/e"
[ $? = 2 ] || fail "--ranks 0 must be a usage error"
has "$tmp/e" "--ranks '0' is not a number"

[ "$fails" = 0 ] && echo "all topology tool checks passed"
exit $((fails > 0))
