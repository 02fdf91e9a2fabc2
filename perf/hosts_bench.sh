#!/usr/bin/env bash
# hosts_bench.sh - algorithms across namespace "hosts": H network namespaces on a bridge
# (perf/netns_hosts.sh), each host's veth shaped with "tc qdisc add dev veth0 root tbf rate
# RATE burst 1mb latency 10ms" (what it sends), R ranks per host (shared memory inside a host,
# TCP across), launched rank by rank. For each collective, every algorithm in the list is forced
# in turn (TUTTI_ALGO=<coll>:<algo>), then the automatic choice runs with each tuner
# (TUTTI_TUNER=static, model); small sizes report the time per call (latency), large ones busbw.
# What each tuner picked per size (algorithm, chunk, channels) comes from a separate short
# launch with TUTTI_LOG_LEVEL=debug TUTTI_LOG_SUBSYS=tune on rank 0 ("allreduce of N float32:
# ALGO (chunk E, C channels)"), so the timed launches log nothing. Launches are interleaved
# (every variant once, then again, each round starting one variant later), and each cell is the
# median over the launches. Every run checks its results (-c 1).
#
# Usage: perf/hosts_bench.sh [--hosts H] [--ranks-per-host "1 2"] [--placement block|cyclic]
#          [--rate 10gbit|raw] [--colls "all_reduce broadcast"] [--algos "ring tree ..."]
#          [--tuners "static model"] [--small "16 64K"] [--large "1M 64M"] [--launches N]
#          [--iters-small N] [--iters-large N] [--build DIR] [--out FILE] [--quick]
# Defaults: 4 hosts, 1 rank per host, block placement, 10gbit, all_reduce and broadcast, every
# algorithm the build's catalog has for the collective (tutti-info --algos), both tuners, small
# 16 B .. 64 KiB and large 1 MiB .. 64 MiB by factors of 4, 3 launches, 20 / 5 iterations.
# A listed algorithm the collective does not have in this build is skipped with a note; one
# that does not apply to a size series (the one-hop algorithms need the message to fit one
# slot) reads "n/a". Writes FILE (default perf/results/<date>-hosts.md) and FILE's .tsv (every
# run). --quick: 2 hosts, small 16..1K, large 64K..256K, 1 launch, 3 iterations (the smoke test).
# Needs root, ip(8) and tc(8).
set -euo pipefail
cd "$(dirname "$0")/.."
cmdline="perf/hosts_bench.sh$(printf " %q" "$@")"

hosts=4
rphs="1"
placement=block
rate=10gbit
colls="all_reduce broadcast"
algos=""
tuners="static model"
small="16 64K"
large="1M 64M"
launches=3
iters_small=20
iters_large=5
build=build
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts="$2"; shift ;;
    --ranks-per-host) rphs="$2"; shift ;;
    --placement) placement="$2"; shift ;;
    --rate) rate="$2"; shift ;;
    --colls) colls="$2"; shift ;;
    --algos) algos="$2"; shift ;;
    --tuners) tuners="$2"; shift ;;
    --small) small="$2"; shift ;;
    --large) large="$2"; shift ;;
    --launches) launches="$2"; shift ;;
    --iters-small) iters_small="$2"; shift ;;
    --iters-large) iters_large="$2"; shift ;;
    --build) build="$2"; shift ;;
    --out) out="$2"; shift ;;
    --quick) hosts=2; small="16 1K"; large="64K 256K"; launches=1; iters_small=3; iters_large=3 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "hosts_bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out="perf/results/$(date -u +%F)-hosts.md"
case "$placement" in block|cyclic) ;; *) echo "hosts_bench: --placement block or cyclic" >&2; exit 2 ;; esac
for t in ip tc; do
  command -v "$t" >/dev/null || { echo "hosts_bench: needs $t (apt install iproute2)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "hosts_bench: network namespaces need root" >&2; exit 2; }
info="$build/src/tools/tutti-info"
[ -x "$info" ] || { echo "hosts_bench: $info not built" >&2; exit 2; }
for c in $colls; do
  [ -x "$build/perf/${c}_perf" ] || { echo "hosts_bench: $build/perf/${c}_perf not built" >&2; exit 2; }
done

# The catalog's algorithms of a collective (tutti-info --algos: the collective's name in the
# first column of its first line, the algorithm in the next).
cname() { # a perf tool's collective -> tutti's name (TUTTI_ALGO, tutti-info, the TUNE log)
  case "$1" in all_reduce) echo allreduce ;; all_gather) echo allgather ;; *) echo "$1" ;; esac
}

catalog() { # all_reduce -> "ring oneshot tree rd rabenseifner"
  "$info" --algos | awk -v c="$(cname "$1")" '
    /^[a-z_]+ +[a-z]/ { cur = $1; if (cur == c) print $2; next }
    /^ +[a-z]/ { if (cur == c) print $1 }' | tr '\n' ' '
}

. perf/netns_hosts.sh
work="$(mktemp -d)"
nsh_trap "$work"
nsh_make hosts "$hosts" 10.80.0
nsh_shape "$rate"

tsv="${out%.md}.tsv"
notes="$work/notes"
: >"$notes"
printf 'hosts\tper_host\tcoll\tseries\tvariant\tlaunch\tbytes\ttime_us\tbusbw\tpicked\n' >"$work/runs.tsv"

# One launch: COLL SERIES VARIANT LAUNCH PER; appends its rows to runs.tsv. VARIANT is
# "algo:NAME", "tuner:NAME" (timed), or "pick:NAME" (the tuner's choices, logged by rank 0).
run_one() {
  local coll="$1" series="$2" variant="$3" launch="$4" per="$5" n=$((hosts * $5)) rc=0
  local lo hi iters warm=5
  read -r lo hi <<<"$([ "$series" = small ] && echo "$small" || echo "$large")"
  iters=$([ "$series" = small ] && echo "$iters_small" || echo "$iters_large")
  [ "$series" = small ] || warm=1
  nsh_rank0_env=()
  case "$variant" in
    algo:*) nsh_env=(TUTTI_ALGO="$(cname "$coll"):${variant#algo:}") ;;
    tuner:*) nsh_env=(TUTTI_TUNER="${variant#tuner:}") ;;
    pick:*) nsh_env=(TUTTI_TUNER="${variant#pick:}"); iters=1; warm=0
            nsh_rank0_env=(TUTTI_LOG_LEVEL=debug TUTTI_LOG_SUBSYS=tune) ;;
  esac
  nsh_rank0_args=(--json "$work/run.json")
  rm -f "$work"/rank*.txt "$work/run.json"
  nsh_launch "$work" "$n" "$per" "$placement" "$build/perf/${coll}_perf" -b "$lo" -e "$hi" -f 4 \
    -n "$iters" -w "$warm" -c 1 --halves out || rc=$?
  cat "$work"/rank*.txt >>"$work/log"
  if [ "$rc" != 0 ]; then
    if grep -qh "does not apply" "$work"/rank*.txt; then
      echo "- $hosts hosts x $per: $coll ${variant#*:} does not apply to the $series series ($lo .. $hi): $(grep -h -m1 -o 'TUTTI_ALGO forces.*' "$work"/rank0.txt | head -1)" >>"$notes"
      printf '%s\t%s\t%s\t%s\t%s\t%s\tna\tna\tna\t\n' "$hosts" "$per" "$coll" "$series" "$variant" "$launch" >>"$work/runs.tsv"
      return 0
    fi
    echo "hosts_bench: $coll $variant $series, $hosts hosts x $per, launch $launch failed (exit $rc):" >&2
    tail -n 5 "$work"/rank*.txt >&2
    echo "- FAILED: $hosts hosts x $per: $coll $variant $series launch $launch (exit $rc)" >>"$notes"
    return 1
  fi
  /usr/bin/python3 - "$work/run.json" "$work/rank0.txt" "$hosts" "$per" "$coll" "$series" \
    "$variant" "$launch" >>"$work/runs.tsv" <<'EOF'
import json, re, sys
jf, log, hosts, per, coll, series, variant, launch = sys.argv[1:]
d = json.load(open(jf))
assert d["ok"], "wrong results"
picked = {}
if variant.startswith("pick:"):
    name = {"all_reduce": "allreduce", "all_gather": "allgather"}.get(coll, coll)
    # "allreduce of N float32: ALGO (chunk E, C channels)" -> ALGO/chunk bytes/channels
    for m in re.finditer(r"DEBUG/TUNE %s of (\d+) float32: (\S+) \(chunk (\d+), (\d+) chan" % name,
                         open(log).read()):
        per_rank = int(hosts) * int(per) if coll in ("all_gather", "reduce_scatter", "alltoall") else 1
        picked[int(m.group(1)) * 4 * per_rank] = "%s/%d/%s" % (m.group(2), int(m.group(3)) * 4,
                                                              m.group(4))
for r in d["results"]:
    h = r["out_of_place"]
    print("\t".join(map(str, [hosts, per, coll, series, variant, launch, r["bytes"],
                              h["time_us"], h["busbw"], picked.get(r["bytes"], "")])))
EOF
}

# The variants of a collective: the forced algorithms (those of the list this build has), then
# the tuners.
variants() { # COLL
  local have want a v=()
  have=" $(catalog "$1") "
  want="${algos:-$have}"
  for a in $want; do
    if [[ "$have" == *" $a "* ]]; then
      v+=("algo:$a")
    else
      grep -qx -- "- $1 has no algorithm $a in this build (tutti-info --algos): skipped" "$notes" ||
        echo "- $1 has no algorithm $a in this build (tutti-info --algos): skipped" >>"$notes"
    fi
  done
  for a in $tuners; do v+=("tuner:$a"); done
  echo "${v[*]}"
}

failed=0
start=$(date +%s)
for per in $rphs; do
  for coll in $colls; do
    vs=$(variants "$coll")
    for series in small large; do
      echo "== $hosts hosts x $per rank(s), $coll, $series: $vs" >&2
      for t in $tuners; do run_one "$coll" "$series" "pick:$t" 0 "$per" || failed=$((failed + 1)); done
      read -ra va <<<"$vs"
      for ((l = 1; l <= launches; l++)); do
        # Each round starts one variant later: no variant always follows the same one.
        k=$(( (l - 1) % ${#va[@]} ))
        for v in "${va[@]:k}" "${va[@]:0:k}"; do
          run_one "$coll" "$series" "$v" "$l" "$per" || failed=$((failed + 1))
        done
      done
    done
  done
done
elapsed=$(( $(date +%s) - start ))

mkdir -p "$(dirname "$out")"
cp "$work/runs.tsv" "$tsv"
{
  echo "# Algorithms across namespace hosts, $(date -u +%FT%TZ) on $(hostname -s)"
  echo
  echo "\`$cmdline\` (${elapsed} s, $failed failed launches)."
  echo
  echo "$hosts network namespaces on a bridge; each host's veth shaped with \`tc qdisc add dev veth0"
  echo "root tbf rate $rate burst 1mb latency 10ms\` (its egress; \`raw\`: none). $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'),"
  echo "$(nproc) cores, Linux $(uname -r), tutti $(git rev-parse --short HEAD 2>/dev/null || echo '?')."
  echo "Ranks placed $placement across hosts; shared memory inside a host, TCP across. Forced"
  echo "algorithms: \`TUTTI_ALGO=<coll>:<algo>\`; automatic: \`TUTTI_TUNER=static|model\`, with what it"
  echo "picked per size in brackets (a separate launch with rank 0's TUNE debug log). Each cell: the"
  echo "median over $launches interleaved launches of \`<coll>_perf -f 4 -c 1 --halves out\` (small:"
  echo "\`-b ${small% *} -e ${small#* } -n $iters_small -w 5\`, time per call in us; large: \`-b ${large% *} -e ${large#* }"
  echo "-n $iters_large -w 1\`, busbw in GB/s). Raw runs: \`$(basename "$tsv")\`."
  echo
  /usr/bin/python3 perf/bench_table.py "$work/runs.tsv"
  if [ -s "$notes" ]; then
    echo "Notes:"
    echo
    awk '!seen[$0]++' "$notes" # a series that does not apply is noted once, not per launch
  fi
} >"$out"
cat "$out"
echo "hosts_bench: wrote $out and $tsv (${elapsed}s, $failed failed)" >&2
[ "$failed" -eq 0 ]
