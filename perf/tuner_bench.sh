#!/usr/bin/env bash
# tuner_bench.sh - the tuners against every algorithm on one host: for each configuration
# (transport and rank count, ranks forked by the perf tool's -N) and collective, every algorithm
# of the build's catalog is forced in turn (TUTTI_ALGO=<coll>:<algo>), then the automatic choice
# runs with each tuner (TUTTI_TUNER=static, model); small sizes report the time per call, large
# ones busbw. What each tuner picked per size (algorithm, chunk, channels) comes from a
# separate short launch with TUTTI_LOG_LEVEL=debug TUTTI_LOG_SUBSYS=tune, which must be the
# same on every rank (a disagreement fails the run). Launches are interleaved (every variant once, then again, each
# round starting one variant later) and each cell is the median over the launches; every run checks its results (-c 1). The tables
# are perf/bench_table.py's, as hosts_bench.sh's (which does the same across namespace hosts).
#
# Usage: perf/tuner_bench.sh [--configs "shm:2 shm:4 tcp:2 tcp:4"] [--colls "all_reduce ..."]
#          [--algos "ring tree ..."] [--tuners "static model"] [--small "8 64K"] [--large "256K 64M"]
#          [--launches N] [--iters-small N] [--iters-large N] [--build DIR] [--out FILE] [--quick]
# Defaults: those four configurations; all_reduce, broadcast, reduce_scatter, all_gather and
# alltoall; every algorithm the catalog has for the collective (tutti-info --algos); both tuners;
# small 8 B .. 64 KiB by factors of 8, large 256 KiB .. 64 MiB by factors of 4; 5 launches; 50 /
# 5 iterations. An algorithm that does not apply to a series (the one-hop ones beyond a slot)
# reads "n/a". Writes FILE (default perf/results/<date>-tuner.md) and FILE's .tsv (every run).
# --quick: shm:2 and tcp:2, all_reduce, small 8..512, large 256K..1M, 1 launch, 3 iterations.
# Wrap it in `flock /work/cpu.lock` (or your machine's equivalent) so nothing else runs beside.
set -euo pipefail
cd "$(dirname "$0")/.."
cmdline="perf/tuner_bench.sh$(printf " %q" "$@")"

configs="shm:2 shm:4 tcp:2 tcp:4"
colls="all_reduce broadcast reduce_scatter all_gather alltoall"
algos=""
tuners="static model"
small="8 64K"
large="256K 64M"
launches=5
iters_small=50
iters_large=5
build=build
out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --configs) configs="$2"; shift ;;
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
    --quick) configs="shm:2 tcp:2"; colls=all_reduce; small="8 512"; large="256K 1M"
             launches=1; iters_small=3; iters_large=3 ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "tuner_bench: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || out="perf/results/$(date -u +%F)-tuner.md"
info="$build/src/tools/tutti-info"
[ -x "$info" ] || { echo "tuner_bench: $info not built" >&2; exit 2; }
for c in $colls; do
  [ -x "$build/perf/${c}_perf" ] || { echo "tuner_bench: $build/perf/${c}_perf not built" >&2; exit 2; }
done
for cf in $configs; do
  case "$cf" in shm:[0-9]*|tcp:[0-9]*) ;; *) echo "tuner_bench: a configuration is shm:N or tcp:N, not $cf" >&2; exit 2 ;; esac
done

cname() { # a perf tool's collective -> tutti's name (TUTTI_ALGO, tutti-info, the TUNE log)
  case "$1" in all_reduce) echo allreduce ;; all_gather) echo allgather ;; *) echo "$1" ;; esac
}

catalog() { # all_reduce -> "ring oneshot tree rd rabenseifner hier"
  "$info" --algos | awk -v c="$(cname "$1")" '
    /^[a-z_]+ +[a-z]/ { cur = $1; if (cur == c) print $2; next }
    /^ +[a-z]/ { if (cur == c) print $1 }' | tr '\n' ' '
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
tsv="${out%.md}.tsv"
notes="$work/notes"
: >"$notes"
printf 'hosts\tper_host\tcoll\tseries\tvariant\tlaunch\tbytes\ttime_us\tbusbw\tpicked\tnet\n' >"$work/runs.tsv"

# One launch: CONFIG COLL SERIES VARIANT LAUNCH; appends its rows to runs.tsv.
run_one() {
  local cf="$1" coll="$2" series="$3" variant="$4" launch="$5" rc=0
  local net="${1%%:*}" n="${1#*:}" lo hi iters warm=5 factor=8 env=()
  read -r lo hi <<<"$([ "$series" = small ] && echo "$small" || echo "$large")"
  iters=$([ "$series" = small ] && echo "$iters_small" || echo "$iters_large")
  [ "$series" = small ] || { warm=1; factor=4; }
  [ "$net" = tcp ] && env+=(TUTTI_TRANSPORT=tcp)
  case "$variant" in
    algo:*) env+=(TUTTI_ALGO="$(cname "$coll"):${variant#algo:}") ;;
    tuner:*) env+=(TUTTI_TUNER="${variant#tuner:}") ;;
    pick:*) env+=(TUTTI_TUNER="${variant#pick:}" TUTTI_LOG_LEVEL=debug TUTTI_LOG_SUBSYS=tune)
            iters=1; warm=0 ;;
  esac
  rm -f "$work/run.json"
  env "${env[@]}" timeout -k 5 600 "$build/perf/${coll}_perf" -N "$n" -b "$lo" -e "$hi" \
    -f "$factor" -n "$iters" -w "$warm" -c 1 --halves out --json "$work/run.json" \
    >"$work/out.txt" 2>&1 || rc=$?
  cat "$work/out.txt" >>"$work/log"
  if [ "$rc" != 0 ]; then
    if grep -q "does not apply" "$work/out.txt"; then
      grep -qF -- "- $cf: $coll ${variant#*:} does not apply to the $series series" "$notes" ||
        echo "- $cf: $coll ${variant#*:} does not apply to the $series series ($lo .. $hi)" >>"$notes"
      return 0
    fi
    echo "tuner_bench: $cf $coll $variant $series launch $launch failed (exit $rc):" >&2
    tail -n 5 "$work/out.txt" >&2
    echo "- FAILED: $cf: $coll $variant $series launch $launch (exit $rc)" >>"$notes"
    return 1
  fi
  /usr/bin/python3 - "$work/run.json" "$work/out.txt" "$n" "$coll" "$series" "$variant" \
    "$launch" "$net" >>"$work/runs.tsv" <<'EOF'
import json, re, sys
jf, log, n, coll, series, variant, launch, net = sys.argv[1:]
d = json.load(open(jf))
assert d["ok"], "wrong results"
picked = {}
if variant.startswith("pick:"):
    name = {"all_reduce": "allreduce", "all_gather": "allgather"}.get(coll, coll)
    per_rank = int(n) if coll in ("all_gather", "reduce_scatter", "alltoall") else 1
    seen = {}
    # "[rank] DEBUG/TUNE allreduce of N float32: ALGO (chunk E, C channels)"
    pat = r"\[(\d+)\] DEBUG/TUNE %s of (\d+) float32: (\S+) \(chunk (\d+), (\d+) chan" % name
    for m in re.finditer(pat, open(log).read()):
        b = int(m.group(2)) * 4 * per_rank
        seen.setdefault(b, {})[m.group(1)] = "%s/%d/%s" % (m.group(3), int(m.group(4)) * 4,
                                                          m.group(5))
    for b, by_rank in seen.items():
        assert len(set(by_rank.values())) == 1, "ranks disagree at %d bytes: %s" % (b, by_rank)
        picked[b] = next(iter(by_rank.values()))
for r in d["results"]:
    h = r["out_of_place"]
    print("\t".join(map(str, [1, n, coll, series, variant, launch, r["bytes"], h["time_us"],
                              h["busbw"], picked.get(r["bytes"], ""), net])))
EOF
}

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
load0="$(cut -d' ' -f1-3 /proc/loadavg)"
for cf in $configs; do
  for coll in $colls; do
    vs=$(variants "$coll")
    for series in small large; do
      echo "== $cf, $coll, $series: $vs" >&2
      for t in $tuners; do run_one "$cf" "$coll" "$series" "pick:$t" 0 || failed=$((failed + 1)); done
      read -ra va <<<"$vs"
      for ((l = 1; l <= launches; l++)); do
        # Each round starts one variant later: no variant always follows the same one (a
        # launch right after a short or a failed one ran measurably faster).
        k=$(( (l - 1) % ${#va[@]} ))
        for v in "${va[@]:k}" "${va[@]:0:k}"; do
          run_one "$cf" "$coll" "$series" "$v" "$l" || failed=$((failed + 1))
        done
      done
    done
  done
done
elapsed=$(( $(date +%s) - start ))
load1="$(cut -d' ' -f1-3 /proc/loadavg)"

mkdir -p "$(dirname "$out")"
cp "$work/runs.tsv" "$tsv"
{
  echo "# Algorithms and tuners on one host, $(date -u +%FT%TZ) on $(hostname -s)"
  echo
  echo "\`$cmdline\` (${elapsed} s, $failed failed launches; load average $load0 at the start, $load1 at the end)."
  echo
  echo "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores, Linux $(uname -r),"
  echo "tutti $(git rev-parse --short HEAD 2>/dev/null || echo '?'). Ranks forked by the perf tool (\`-N\`, bound to a CPU each"
  echo "when they fit); \`shm\`: shared memory, \`tcp\`: \`TUTTI_TRANSPORT=tcp\` (loopback). Forced algorithms:"
  echo "\`TUTTI_ALGO=<coll>:<algo>\`; automatic: \`TUTTI_TUNER=static|model\`, with what it picked per size"
  echo "in brackets (a separate launch with the TUNE debug log, the same on every rank). Each cell:"
  echo "the median over $launches interleaved launches of \`<coll>_perf -c 1 --halves out\` (small: \`-b ${small% *}"
  echo "-e ${small#* } -f 8 -n $iters_small -w 5\`, time per call in us; large: \`-b ${large% *} -e ${large#* } -f 4 -n $iters_large -w 1\`,"
  echo "busbw in GB/s). Raw runs: \`$(basename "$tsv")\`."
  echo
  /usr/bin/python3 perf/bench_table.py "$work/runs.tsv"
  if [ -s "$notes" ]; then
    echo "Notes:"
    echo
    cat "$notes"
  fi
} >"$out"
cat "$out"
echo "tuner_bench: wrote $out and $tsv (${elapsed}s, $failed failed)" >&2
[ "$failed" -eq 0 ]
