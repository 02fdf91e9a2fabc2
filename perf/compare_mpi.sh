#!/usr/bin/env bash
# compare_mpi.sh - tutti against Open MPI on this machine, all-reduce by default: for 2 and 4
# ranks, over shared memory (tutti's default; Open MPI --mca btl self,vader) and over TCP
# (TUTTI_TRANSPORT=tcp; --mca btl self,tcp), launches tutti and Open MPI alternately (tutti, mpi,
# tutti, mpi, ...) several times each, collects every --json output and writes
# perf/results/<UTC date>-<host>-<coll>.md (medians per size), the raw JSON of every run
# beside it (.json) and every run's table as printed (.log).
#
# Usage: perf/compare_mpi.sh [--quick] [--launches N] [--ranks "2 4"] [--transports "shm tcp"]
#                            [--coll all_reduce] [--build DIR] [--out DIR] [--merge OLD.json]
#                            [-- perf options]
# Perf options default to "-b 8 -e 256M -f 4" (nccl-tests' defaults otherwise: -n 20 -w 5, float
# sum, checked). --quick: 2 launches of "-b 8 -e 1M -f 8 -n 5 -w 2", written under the build
# directory instead of perf/results. --merge reruns part of an earlier comparison: its runs are
# kept except those launched again, and the log is appended to. Needs mpi_coll_perf (MPI found).
set -euo pipefail
cd "$(dirname "$0")/.."

launches=5
ranks="2 4"
transports="shm tcp"
coll=all_reduce
build=build
out=""
quick=0
merge=""
perf_args=(-b 8 -e 256M -f 4)
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; launches=2; perf_args=(-b 8 -e 1M -f 8 -n 5 -w 2) ;;
    --launches) launches="$2"; shift ;;
    --ranks) ranks="$2"; shift ;;
    --transports) transports="$2"; shift ;;
    --coll) coll="$2"; shift ;;
    --build) build="$2"; shift ;;
    --out) out="$2"; shift ;;
    --merge) merge="$2"; shift ;;
    --) shift; perf_args=("$@"); break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "compare_mpi: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -n "$out" ] || { [ "$quick" = 1 ] && out="$build/compare-quick" || out=perf/results; }

tool="$build/perf/${coll}_perf"
mpitool="$build/perf/mpi_coll_perf"
for t in "$tool" "$mpitool"; do
  [ -x "$t" ] || { echo "compare_mpi: $t not built (ninja -C $build; MPI found?)" >&2; exit 2; }
done

# Open MPI as root, 4 ranks on few cores, no ssh: what this kind of machine needs.
mpirun=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca pml ob1)
if ! command -v ssh >/dev/null && ! command -v rsh >/dev/null; then
  mpirun+=(--mca plm isolated)
fi

host="$(hostname -s)"
stamp="$(date -u +%Y-%m-%d)"
name="$stamp-$host-${coll//_/}"
[ "$quick" = 1 ] && name="$name-quick"
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
mkdir -p "$out"
log="$out/$name.log"
if [ -n "$merge" ]; then
  name="$(basename "$merge" .json)"
  log="$out/$name.log"
  note="Merged: the $ranks-rank $transports launches were run again on $(date -u +%FT%TZ) and \
replace the earlier ones in $(basename "$merge"); the paragraph above describes that rerun."
else
  : >"$log"
fi

# One launch: label, then the command. Its table goes to the log, its JSON to the raw folder.
run_one() {
  local label="$1" rc=0; shift
  echo "== $label: $*"
  printf '\n=== %s (load %s): %s\n' "$label" "$(cut -d' ' -f1-3 /proc/loadavg)" "$*" >>"$log"
  "$@" --json "$raw/$label.json" >"$raw/$label.txt" 2>&1 || rc=$?
  cat "$raw/$label.txt" >>"$log"
  if [ "$rc" -ne 0 ]; then
    echo "compare_mpi: $label failed (exit $rc):" >&2
    tail -20 "$raw/$label.txt" >&2
    return 1
  fi
  grep -E "^# (Out of bounds|Avg bus)" "$raw/$label.txt" | tr '\n' ' '
  echo
}

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
failed=0
for n in $ranks; do
  for tr in $transports; do
    case "$tr" in
      shm) tenv=(env -u TUTTI_TRANSPORT); btl=self,vader ;;
      tcp) tenv=(env TUTTI_TRANSPORT=tcp); btl=self,tcp ;;
      *) echo "compare_mpi: transport $tr is neither shm nor tcp" >&2; exit 2 ;;
    esac
    for i in $(seq 1 "$launches"); do
      run_one "tutti-$n-$tr-$i" "${tenv[@]}" "$tool" -N "$n" "${perf_args[@]}" || failed=1
      run_one "mpi-$n-$tr-$i" "${mpirun[@]}" -np "$n" --mca btl "$btl" \
        "$mpitool" --coll "$coll" "${perf_args[@]}" || failed=1
    done
  done
done
elapsed=$(( $(date +%s) - start ))

python3 perf/compare_table.py --coll "$coll" --out-md "$out/$name.md" --out-json "$out/$name.json" \
  ${merge:+--meta "note=$note"} \
  --meta "host=$host" --meta "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
  --meta "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" \
  --meta "cores=$(nproc)" --meta "kernel=$(uname -r)" \
  --meta "tutti_commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --meta "mpirun=$(mpirun --version | head -1)" \
  --meta "launches=$launches" --meta "elapsed_s=$elapsed" \
  --meta "load_before=$load_before" --meta "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" \
  --meta "tutti_cmd=[TUTTI_TRANSPORT=tcp] $tool -N <ranks> ${perf_args[*]}" \
  --meta "mpi_cmd=${mpirun[*]} -np <ranks> --mca btl self,vader|self,tcp $mpitool --coll $coll ${perf_args[*]}" \
  ${merge:+"$merge"} "$raw"/*.json
echo "compare_mpi: wrote $out/$name.md, .json and .log (${elapsed}s)"
exit "$failed"
