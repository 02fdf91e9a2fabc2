#!/usr/bin/env bash
# link_efficiency.sh - how much of a network link tutti's TCP transport uses: two network
# namespaces joined by a veth pair (perf/netns_hosts.sh: names unique to this run, removed on
# exit, nothing in the root namespace), shaped on both ends with "tc qdisc add dev <veth> root
# tbf rate 10gbit burst 1mb latency 10ms", then raw.
# On each link: iperf3 from namespace A to B (the reference; also --bidir), then tutti's
# all_reduce_perf, sendrecv_perf and broadcast_perf (--colls) with 2 ranks (one per namespace)
# and 4 ranks (two per
# namespace, shared memory inside one), launched rank by rank with TUTTI_RANK / TUTTI_NRANKS /
# TUTTI_ROOT / TUTTI_SECRET, and Open MPI's TCP (mpirun in A, its ranks in B entered with
# ip netns exec) for comparison.
#
# Wire rate: the bytes a veth end transmits (/sys/class/net/<veth>/statistics/tx_bytes, frames
# as the kernel counts them) per second of collective. A tool run makes -n timed calls plus one
# untimed and one checked call (-w 0): bytes per call = counter delta / (n + 2), and the rate =
# bytes per call / the tool's time per call (the timed loop). iperf3's rate is measured the same
# way (counter delta over its run), so both count headers alike. With 2 ranks, A's end carries
# rank 0's traffic; with 4, whatever the ranks of A send across.
#
# Two references: a collective that sends both ways at once (all-reduce, send/recv with 2
# ranks) is held against iperf3 --bidir's rate in the same direction, a one-way one (broadcast
# from rank 0, in A) against one iperf3 stream; the "matched" column is that ratio, and the JSON's
# worst_efficiency the lowest of it over tutti's 2-rank rows on the shaped link.
#
# Usage: perf/link_efficiency.sh [--quick] [--sizes "64M 256M"] [--iters N] [--ranks "2 4"]
#          [--colls "all_reduce sendrecv broadcast"] [--time S] [--no-ompi] [--build DIR]
#          [--out DIR]
# Writes <out>/<date>-<host>-link.md and .json (default out: perf/results; --quick: 64M only,
# 5 iterations, 2 ranks, 2 s of iperf3, written under the build directory). Needs root, ip(8),
# tc(8) and iperf3.
set -euo pipefail
cd "$(dirname "$0")/.."

sizes="64M 256M"
iters=10
ranks="2 4"
colls="all_reduce sendrecv broadcast"
secs=5
ompi=1
build=build
out=""
quick=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; sizes=64M; iters=5; ranks=2; secs=2 ;;
    --sizes) sizes="$2"; shift ;;
    --iters) iters="$2"; shift ;;
    --ranks) ranks="$2"; shift ;;
    --colls) colls="$2"; shift ;;
    --time) secs="$2"; shift ;;
    --no-ompi) ompi=0 ;;
    --build) build="$2"; shift ;;
    --out) out="$2"; shift ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "link_efficiency: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || { [ "$quick" = 1 ] && out="$build/link-quick" || out=perf/results; }
for t in ip tc iperf3; do
  command -v "$t" >/dev/null || { echo "link_efficiency: needs $t (apt install iproute2 iperf3)" >&2; exit 2; }
done
for c in $colls; do
  case "$c" in
    all_reduce|sendrecv|broadcast) ;;
    *) echo "link_efficiency: --colls: $c is not one of all_reduce sendrecv broadcast" >&2; exit 2 ;;
  esac
  [ -x "$build/perf/${c}_perf" ] || { echo "link_efficiency: $build/perf/${c}_perf not built" >&2; exit 2; }
done
if [ "$ompi" = 1 ] && { [ ! -x "$build/perf/mpi_coll_perf" ] || ! command -v mpirun.openmpi >/dev/null; }; then
  echo "link_efficiency: no Open MPI or mpi_coll_perf: Open MPI left out" >&2
  ompi=0
fi

# --- the namespaces, always removed ---------------------------------------------------------
. perf/netns_hosts.sh
work="$(mktemp -d)"
nsh_trap "$work"
nsh_make link 2 10.79.0
ns=("${nsh_ns[@]}")
addr=("${nsh_addr[@]}")
tx() { nsh_tx "$1"; }
bytes() { # "64M" -> 67108864
  numfmt --from=iec "$1"
}

log="$work/log"
rows=()   # markdown rows
jrows=()  # JSON objects
ratio() { awk -v a="$1" -v r="$2" 'BEGIN { if (r > 0) printf "%.2f", a / r; else print "-" }'; }
# link what ranks size time_us rateA rateB iperf_ref [bidir_ref_A: a two-way collective]
add_row() {
  local eff bidir="-" matched
  eff=$(ratio "$6" "$8")
  [ -n "${9:-}" ] && bidir=$(ratio "$6" "$9")
  matched=$eff
  [ -n "${9:-}" ] && matched=$bidir
  rows+=("| $1 | $2 | $3 | $4 | $5 | $6 | $7 | $eff | $bidir | $matched |")
  jrows+=("{\"link\": \"$1\", \"what\": \"$2\", \"ranks\": $3, \"size\": \"$4\", \"time_us\": $5, \
\"wire_gbs_a\": $6, \"wire_gbs_b\": $7, \"efficiency\": ${eff/-/null}, \
\"efficiency_bidir\": ${bidir/-/null}, \"efficiency_matched\": ${matched/-/null}}")
}

# iperf3 from A to B for $secs seconds; prints "<wire GB/s A->B> <iperf3's own GB/s>" (one
# direction) or, with --bidir, the wire GB/s of A->B and of B->A.
iperf() {
  local a0 a1 b0 b1 server port=$((5201 + RANDOM % 1000))
  ip netns exec "${ns[1]}" iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
  server=$!
  for _ in $(seq 50); do
    ip netns exec "${ns[1]}" ss -ltn | grep -q ":$port " && break
    sleep 0.1
  done
  a0=$(tx 0); b0=$(tx 1)
  ip netns exec "${ns[0]}" iperf3 -c "${addr[1]}" -p "$port" -t "$secs" -J "$@" >"$work/iperf.json" || true
  a1=$(tx 0); b1=$(tx 1)
  kill "$server" 2>/dev/null || true # gone already, unless the client failed
  wait "$server" || true
  /usr/bin/python3 - "$work/iperf.json" "$((a1 - a0))" "$((b1 - b0))" "$@" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))["end"]
secs = d["sum_sent"]["seconds"]
if "--bidir" in sys.argv[4:]:
    print("%.3f %.3f" % (int(sys.argv[2]) / secs / 1e9, int(sys.argv[3]) / secs / 1e9))
else:
    print("%.3f %.3f" % (int(sys.argv[2]) / secs / 1e9, d["sum_sent"]["bits_per_second"] / 8e9))
EOF
}

# One tutti run: COLL NRANKS SIZE; prints "<time_us> <wire GB/s A> <wire GB/s B>".
tutti_run() {
  local coll="$1" n="$2" size="$3" a0 a1 b0 b1 rc=0
  nsh_rank0_args=(--json "$work/tutti.json")
  rm -f "$work"/rank*.txt
  a0=$(tx 0); b0=$(tx 1)
  nsh_launch "$work" "$n" $((n / 2)) block "$build/perf/${coll}_perf" -b "$size" -e "$size" \
    -n "$iters" -w 0 -c 1 --halves out || rc=$?
  a1=$(tx 0); b1=$(tx 1)
  cat "$work"/rank*.txt >>"$log"
  if [ "$rc" -ne 0 ]; then
    echo "link_efficiency: tutti $coll $n ranks $size failed (exit $rc)" >&2
    tail -5 "$work"/rank*.txt >&2
    return 1
  fi
  rates "$work/tutti.json" "$((a1 - a0))" "$((b1 - b0))"
}

# Open MPI over TCP: mpirun in A (its PMIx server reachable from B on A's veth address), the
# ranks of B entered with ip netns exec. Prints as tutti_run.
ompi_run() {
  local coll="$1" n="$2" size="$3" a0 a1 b0 b1 rc=0 half=$(($2 / 2))
  local tool=("$build/perf/mpi_coll_perf" --coll "$coll" -b "$size" -e "$size" -n "$iters" -w 0
              -c 1 --halves out)
  a0=$(tx 0); b0=$(tx 1)
  ip netns exec "${ns[0]}" env PMIX_MCA_ptl_tcp_remote_connections=1 \
    PMIX_MCA_ptl_tcp_if_include="$NSH_IF" \
    mpirun.openmpi --allow-run-as-root --oversubscribe --bind-to none --mca plm isolated \
    --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include 10.79.0.0/24 \
    --mca oob_tcp_if_include "$NSH_IF" \
    -np "$half" "${tool[@]}" --json "$work/ompi.json" : \
    -np "$half" ip netns exec "${ns[1]}" "${tool[@]}" >"$work/ompi.txt" 2>&1 || rc=$?
  a1=$(tx 0); b1=$(tx 1)
  cat "$work/ompi.txt" >>"$log"
  if [ "$rc" -ne 0 ]; then
    echo "link_efficiency: Open MPI $coll $n ranks $size failed (exit $rc)" >&2
    tail -5 "$work/ompi.txt" >&2
    return 1
  fi
  rates "$work/ompi.json" "$((a1 - a0))" "$((b1 - b0))"
}

# JSON of a tool run, counter deltas of A and B -> "<time_us> <GB/s A> <GB/s B>".
rates() {
  /usr/bin/python3 - "$@" "$iters" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
half = d["results"][0]["out_of_place"]
assert d["ok"], "wrong results"
calls = int(sys.argv[4]) + 2  # timed, plus the untimed and the checked call
t = half["time_us"]
print("%.1f %.3f %.3f" % (t, int(sys.argv[2]) / calls / t / 1e3, int(sys.argv[3]) / calls / t / 1e3))
EOF
}

failed=0
start=$(date +%s)
for link in tbf raw; do
  nsh_shape "$([ "$link" = tbf ] && echo 10gbit || echo raw)"
  name="veth, tbf 10gbit"
  [ "$link" = raw ] && name="veth, raw"
  read -r ref own < <(iperf)
  read -r bidir_a bidir_b < <(iperf --bidir)
  echo "== $name: iperf3 ${ref} GB/s on the wire (iperf3 says ${own}); --bidir ${bidir_a} + ${bidir_b}"
  rows+=("| $name | iperf3 -c, A to B | - | - | - | $ref | - | 1.00 | - | - |"
         "| $name | iperf3 -c --bidir | - | - | - | $bidir_a | $bidir_b | - | 1.00 | - |")
  jrows+=("{\"link\": \"$name\", \"what\": \"iperf3\", \"wire_gbs_a\": $ref, \"goodput_gbs\": $own}"
          "{\"link\": \"$name\", \"what\": \"iperf3 --bidir\", \"wire_gbs_a\": $bidir_a, \"wire_gbs_b\": $bidir_b}")
  for coll in $colls; do
    two_way=$bidir_a
    [ "$coll" = broadcast ] && two_way=""
    for n in $ranks; do
      for size in $sizes; do
        if read -r t a b < <(tutti_run "$coll" "$n" "$(bytes "$size")"); then
          echo "== $name: tutti $coll $n ranks $size: $t us, wire $a GB/s A to B, $b B to A"
          add_row "$name" "tutti $coll" "$n" "$size" "$t" "$a" "$b" "$ref" "$two_way"
        else
          failed=$((failed + 1))
        fi
        [ "$ompi" = 1 ] || continue
        if read -r t a b < <(ompi_run "$coll" "$n" "$(bytes "$size")"); then
          echo "== $name: Open MPI $coll $n ranks $size: $t us, wire $a GB/s A to B, $b B to A"
          add_row "$name" "Open MPI $coll" "$n" "$size" "$t" "$a" "$b" "$ref" "$two_way"
        else
          failed=$((failed + 1))
        fi
      done
    done
  done
done
elapsed=$(( $(date +%s) - start ))

host="$(hostname -s)"
stem="$(date -u +%Y-%m-%d)-$host-link"
mkdir -p "$out"
cp "$log" "$out/$stem.log"
{
  echo "# Link efficiency of tutti's TCP transport, $(date -u +%FT%TZ) on $host"
  echo
  echo "Two network namespaces joined by a veth pair; \`tc qdisc add dev <veth> root tbf rate 10gbit"
  echo "burst 1mb latency 10ms\` on both ends (then none: raw veth). $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'),"
  echo "$(nproc) cores, Linux $(uname -r), tutti $(git rev-parse --short HEAD 2>/dev/null || echo '?'),"
  echo "$(iperf3 --version | head -1 | cut -d' ' -f1-2). Generated by \`perf/link_efficiency.sh\` in ${elapsed} s."
  echo
  echo "Wire rate: bytes the veth end of namespace A (B) transmits per second, from its tx_bytes"
  echo "counter: for iperf3 over its run, for a collective over its calls (-n $iters timed calls, one"
  echo "untimed, one checked; bytes per call over the tool's time per call). Efficiency: the"
  echo "rate from A over iperf3's, measured the same way on the same link: one stream A to B, and"
  echo "iperf3 --bidir's A-to-B rate (for collectives that send both ways at once: all-reduce and"
  echo "send/recv). Matched: the --bidir ratio for those, the one-stream ratio for broadcast (root"
  echo "rank 0, in A). With 2 ranks, A's end carries rank 0's traffic; with 4, what ranks 0 and 1"
  echo "send across (shared memory between them)."
  echo
  echo "- tutti: \`ip netns exec <ns> env TUTTI_RANK=r TUTTI_NRANKS=n TUTTI_ROOT=${addr[0]}:<port> TUTTI_SECRET=<32 hex> TUTTI_SOCKET_IFNAME=$NSH_IF $build/perf/<coll>_perf -b <size> -e <size> -n $iters -w 0 -c 1 --halves out\`"
  [ "$ompi" = 1 ] && echo "- Open MPI: \`ip netns exec A mpirun.openmpi ... --mca btl self,tcp -np n/2 mpi_coll_perf ... : -np n/2 ip netns exec B mpi_coll_perf ...\` (PMIx reachable from B: PMIX_MCA_ptl_tcp_remote_connections=1)"
  echo
  echo "| link | what | ranks | size | time per call (us) | wire GB/s A to B | wire GB/s B to A | vs iperf3 | vs iperf3 --bidir | matched |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Failed runs: $failed. Every run checked its results (#wrong = 0, or it counts as failed)."
} >"$out/$stem.md"
{
  printf '{"host": "%s", "date": "%s", "iters": %s, "ranks": "%s", "failed": %s, "rows": [\n' \
    "$host" "$(date -u +%FT%TZ)" "$iters" "${ranks// /, }" "$failed"
  (IFS=$',\n'; echo "${jrows[*]}")
  echo "]}"
} >"$work/link.json"
/usr/bin/python3 - "$work/link.json" "$out/$stem.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
# The goal is set for 2 ranks (one per namespace); 4-rank rows are reported, not judged.
tb = [r for r in d["rows"] if r["link"].endswith("tbf 10gbit") and r["what"].startswith("tutti")
      and r.get("ranks") == 2 and r.get("efficiency_matched") is not None]
if tb:
    w = min(tb, key=lambda r: r["efficiency_matched"])
    d["worst_efficiency"] = w["efficiency_matched"]
    d["worst_case"] = "%s, %d ranks, %s" % (w["what"], w["ranks"], w["size"])
json.dump(d, open(sys.argv[2], "w"), indent=1)
EOF
echo "link_efficiency: wrote $out/$stem.md and .json (${elapsed}s, $failed failed)"
[ "$failed" -eq 0 ]
