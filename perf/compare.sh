#!/usr/bin/env bash
# compare.sh - tutti against its peers on one host: Open MPI, MPICH and Gloo (PyTorch's CPU
# backend), every collective, 2 and 4 ranks, over shared memory and over TCP.
#
# Usage: perf/compare.sh [--quick] [--colls "all_reduce ..."|all|new] [--ranks "2 4"]
#          [--transports "shm tcp"] [--peers "ompi mpich gloo"] [--launches N]
#          [--series "PERF OPTIONS"]... [--skew none|uniform|zipf[:S]] [--merge STEM]
#          [--no-install] [--build DIR] [--out DIR] [--timeout S] [--tutti-args "OPTIONS"]
#          [-- perf options for every launch]
#
# --colls all: the seven collectives of issue 3; new: alltoallv allgatherv gather scatter
# reduce_scatterv (MPI: MPI_Alltoallv, MPI_Allgatherv, MPI_Gather or MPI_Gatherv, MPI_Scatter or
# MPI_Scatterv, MPI_Reduce_scatter; Gloo has none of them here). --skew passes -v to tutti's and
# MPI's tools for those five, so both run the same count vectors (perf/README.md); with a skew
# other than none the file names carry it (<date>-<host>-zipf-<coll>.md).
#
# Installs the missing peers with apt unless --no-install. For each collective and rank count,
# launches the libraries in turn, launch after launch (tutti, ompi, mpich, gloo, tutti, ...; shared
# memory and TCP alternating), --launches times each (default 5). A launch runs every --series of
# sizes (default "-b 8 -e 4K -f 2 -n 10000 -w 1000", "-b 8K -e 1M -f 2" and "-b 4M -e 256M -f 4 -n
# 10 -w 2": 8 B to 4 KiB in powers of two with 10000 timed calls each, since a call there takes
# 0.1-1 us on shared memory and one interruption of a few us would otherwise be most of nccl-tests'
# 20; then to 1 MiB with nccl-tests' -n 20 -w 5; then 4, 16, 64 and 256 MiB with 10 timed calls;
# float sum; results checked; out of place, except where a peer has only the in-place form
# (broadcast: MPI_Bcast, torch's broadcast): there every library runs in place, so that like is
# compared with like, and the tables say so). A launch that runs past --timeout (default 600 s) per
# series runs once more; one that has written its results and does not exit within 30 s is ended and
# counts. Transports: shm is tutti's default, Open MPI's --mca btl self,vader and MPICH's default;
# tcp is TUTTI_TRANSPORT=tcp, --mca btl self,tcp and MPICH with MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp.
# Gloo is always TCP (over lo): it runs with the TCP launches and appears in both tables.
# Writes perf/results/<date>-<host>-<coll>.md (medians, ratios), .json (every run), .log (every
# table as printed), .png (busbw vs size), and <date>-<host>-summary.md (the goals of issues 38
# and 3: compare_goals.py).
# --tutti-args: options for tutti's launches only (e.g. "-R 2": buffers in windows), named in
# the tables' commands.
# --quick: a smoke run (2 launches of "-b 8 -e 1M -f 32 -n 5 -w 2") written under the build
# directory. --merge STEM (e.g. perf/results/2026-11-21-vm) writes into an earlier
# comparison: its runs are kept except those launched again, and the summary covers every
# collective of STEM, so a comparison can be run one collective at a time.
set -euo pipefail
cd "$(dirname "$0")/.."

ALL_COLLS="all_reduce all_gather broadcast reduce reduce_scatter alltoall sendrecv"
IN_PLACE_ONLY="broadcast" # a peer has only the in-place form (compare_table.py IN_PLACE_ONLY)
halves_of() { if [[ " $IN_PLACE_ONLY " == *" $1 "* ]]; then echo in; else echo out; fi; }
V_COLLS="alltoallv allgatherv gather scatter reduce_scatterv" # they take -v (--skew)
launches=5
ranks="2 4"
transports="shm tcp"
colls=all
peers="ompi mpich gloo"
install=1
build=build
out=""
quick=0
merge=""
timeout_s=600
series=()
perf_args=()
tutti_args=""
skew=none
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --launches) launches="$2"; shift ;;
    --ranks) ranks="$2"; shift ;;
    --transports) transports="$2"; shift ;;
    --colls|--coll) colls="$2"; shift ;;
    --peers) peers="$2"; shift ;;
    --series) series+=("$2"); shift ;;
    --skew) skew="$2"; shift ;;
    --merge) merge="$2"; shift ;;
    --no-install) install=0 ;;
    --build) build="$2"; shift ;;
    --out) out="$2"; shift ;;
    --timeout) timeout_s="$2"; shift ;;
    --tutti-args) tutti_args="$2"; shift ;;
    --) shift; perf_args=("$@"); break ;;
    -h|--help) sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "compare: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ "$colls" = all ] && colls="$ALL_COLLS"
[ "$colls" = new ] && colls="$V_COLLS"
if [ "$quick" = 1 ]; then
  [ "${#series[@]}" -gt 0 ] || series=("-b 8 -e 1M -f 32 -n 5 -w 2")
  [ "$launches" = 5 ] && launches=2
fi
[ "${#series[@]}" -gt 0 ] ||
  series=("-b 8 -e 4K -f 2 -n 10000 -w 1000" "-b 8K -e 1M -f 2" "-b 4M -e 256M -f 4 -n 10 -w 2")
[ -n "$out" ] || { [ "$quick" = 1 ] && out="$build/compare-quick" || out=perf/results; }
for c in $colls; do
  [[ " $ALL_COLLS $V_COLLS " == *" $c "* ]] ||
    { echo "compare: no collective $c ($ALL_COLLS $V_COLLS)" >&2; exit 2; }
done
case "$skew" in
  none|uniform|zipf|zipf:*) ;;
  *) echo "compare: --skew $skew is none, uniform, zipf or zipf:S" >&2; exit 2 ;;
esac
for p in $peers; do
  case "$p" in ompi|mpich|gloo) ;; *) echo "compare: peer $p is not ompi, mpich or gloo" >&2; exit 2 ;; esac
done
for tr in $transports; do
  case "$tr" in shm|tcp) ;; *) echo "compare: transport $tr is neither shm nor tcp" >&2; exit 2 ;; esac
done

# --- the peers: install what is missing, build their harness --------------------------------
declare -A packages=([ompi]="openmpi-bin libopenmpi-dev" [mpich]="mpich libmpich-dev"
                     [gloo]="python3-torch libgloo-dev")
if [ "$install" = 1 ]; then
  want="python3-matplotlib iperf3"
  for p in $peers; do want="$want ${packages[$p]}"; done
  missing=()
  for pkg in $want; do
    dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null | grep -q '^ii' || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "compare: installing ${missing[*]}"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
fi
python=/usr/bin/python3 # Debian's: torch and matplotlib are its packages
declare -A tool_of=([ompi]=mpi_coll_perf [mpich]=mpich_coll_perf)
for p in $peers; do
  if [ -n "${tool_of[$p]:-}" ] && [ ! -x "$build/perf/${tool_of[$p]}" ] && [ -d "$build" ]; then
    echo "compare: $build/perf/${tool_of[$p]} missing: reconfiguring $build"
    meson setup --reconfigure "$build" >/dev/null && ninja -C "$build" >/dev/null
  fi
done
need=("$build/perf/membw")
for c in $colls; do need+=("$build/perf/${c}_perf"); done
for p in $peers; do [ -n "${tool_of[$p]:-}" ] && need+=("$build/perf/${tool_of[$p]}"); done
for t in "${need[@]}"; do
  [ -x "$t" ] || { echo "compare: $t not built (meson setup $build && ninja -C $build)" >&2; exit 2; }
done
[[ " $peers " != *" ompi "* ]] || command -v mpirun.openmpi >/dev/null ||
  { echo "compare: no mpirun.openmpi (apt install openmpi-bin)" >&2; exit 2; }
[[ " $peers " != *" mpich "* ]] || command -v mpirun.mpich >/dev/null ||
  { echo "compare: no mpirun.mpich (apt install mpich)" >&2; exit 2; }
if [[ " $peers " == *" gloo "* ]] &&
   ! "$python" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  echo "compare: $python has no torch with Gloo (apt install python3-torch)" >&2; exit 2
fi

# --- how each library is launched ------------------------------------------------------------
# Open MPI as root, 4 ranks on few cores, no ssh: what this kind of machine needs.
ompi=(mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1)
# Placement, the same for every library: each rank pinned to its own CPU when the ranks fit the
# CPUs (Open MPI's default, tutti's -N default), else nobody pinned.
ncpus=$(nproc)
bind_of() {
  case "$1" in
    *[!0-9]*) echo "core|none" ;; # the template in the tables
    *) if [ "$1" -le "$ncpus" ]; then echo core; else echo none; fi ;;
  esac
}
if ! command -v ssh >/dev/null && ! command -v rsh >/dev/null; then
  ompi+=(--mca plm isolated)
fi
# vopt COLL: the skew option of a collective that takes one (the same for every library).
vopt() { [[ " $V_COLLS " != *" $1 "* ]] || echo "-v $skew"; }
# cmd_<lib> TRANSPORT NRANKS COLL: the command line of one launch, without sizes or --json
# (TRANSPORT "any": the template the tables print, shm|tcp).
cmd_tutti() {
  local env=(env -u TUTTI_TRANSPORT)
  [ "$1" = tcp ] && env=(env TUTTI_TRANSPORT=tcp)
  [ "$1" = any ] && env=(env "[TUTTI_TRANSPORT=tcp]")
  # shellcheck disable=SC2086 # tutti_args is a word list
  echo "${env[*]}" "$build/perf/$3_perf" -N "$2" --bind "$(bind_of "$2")" $(vopt "$3") $tutti_args
}
cmd_ompi() {
  local btl=self,vader
  [ "$1" = tcp ] && btl=self,tcp
  [ "$1" = any ] && btl="self,vader|self,tcp"
  echo "${ompi[*]}" --bind-to "$(bind_of "$2")" -np "$2" --mca btl "$btl" \
    "$build/perf/mpi_coll_perf" --coll "$3" $(vopt "$3")
}
cmd_mpich() {
  local env=(env -u MPIR_CVAR_NOLOCAL -u UCX_TLS)
  [ "$1" = tcp ] && env=(env MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp)
  [ "$1" = any ] && env=(env "[MPIR_CVAR_NOLOCAL=1 UCX_TLS=tcp]")
  echo "${env[*]}" mpirun.mpich -bind-to "$(bind_of "$2")" -np "$2" \
    "$build/perf/mpich_coll_perf" --coll "$3" $(vopt "$3")
}
cmd_gloo() {
  echo env GLOO_SOCKET_IFNAME=lo "$python" perf/gloo_perf.py --coll "$3" -N "$2" \
    --bind "$(bind_of "$2")"
}
# gloo_perf.py has no reduce-scatter (torch's Gloo lacks it) and none of the v collectives.
has_coll() { [ "$1" != gloo ] || [[ " reduce_scatter $V_COLLS " != *" $2 "* ]]; }

# linger_watch PID JSON: MPICH over UCX's TCP sometimes hangs in MPI_Finalize at 4 ranks, after
# its results are written. A launch still running LINGER_S seconds after its JSON is complete
# is ended (TERM to timeout, which passes it on), and its results count.
linger_s=30
linger_watch() {
  local polls=0
  while sleep 2; do
    kill -0 "$1" 2>/dev/null || return 0
    [ "$(tail -c 2 "$2" 2>/dev/null)" = "}" ] || continue
    polls=$((polls + 1))
    if [ $((polls * 2)) -ge "$linger_s" ]; then
      : >"$raw/lingered"
      kill -TERM "$1" 2>/dev/null || true
      return 0
    fi
  done
}

# --- one launch: every series of sizes; tables to the log, JSON to the raw folder -----------
raw="$(mktemp -d)"
trap 'rm -rf "$raw"' EXIT
failed=0
run_one() {
  local label="$1" cmd="$2" k=0 rc s summary="" attempt
  for s in "${series[@]}"; do
    k=$((k + 1))
    local full="$cmd $s --halves $halves ${perf_args[*]:-}"
    printf '\n=== %s series %d (%s, load %s): %s\n' "$label" "$k" "$(date -u +%TZ)" \
      "$(cut -d' ' -f1-3 /proc/loadavg)" "$full" >>"$log"
    local json="$raw/$label.s$k.json" launch watcher
    for attempt in 1 2; do # a launch that hangs runs again
      rc=0
      rm -f "$json" "$raw/lingered"
      # shellcheck disable=SC2086 # the command is a word list by design
      timeout "$timeout_s" $full --json "$json" >"$raw/out.txt" 2>&1 &
      launch=$!
      linger_watch "$launch" "$json" &
      watcher=$!
      wait "$launch" || rc=$?
      kill "$watcher" 2>/dev/null || true
      wait "$watcher" 2>/dev/null || true
      cat "$raw/out.txt" >>"$log"
      if [ -e "$raw/lingered" ]; then
        rc=0 # its results were complete and checked: the hang came after them
        printf '\n=== %s series %d: results written, then no exit within %s s: ended\n' \
          "$label" "$k" "$linger_s" | tee -a "$log" >&2
      fi
      if [ "$rc" != 124 ] || [ "$attempt" = 2 ]; then break; fi
      printf '\n=== %s series %d timed out after %s s: again\n' "$label" "$k" "$timeout_s" | tee -a "$log" >&2
    done
    summary="$summary $(sed -n 's/^# Out of bounds values : //p' "$raw/out.txt")"
    if [ "$rc" -ne 0 ]; then
      echo "compare: $label series $k failed (exit $rc$([ "$rc" = 124 ] && echo ", timed out")):" >&2
      tail -5 "$raw/out.txt" >&2
      failed=$((failed + 1))
      # A tool that found wrong results still wrote its JSON: keep it, its #wrong counts.
      [ "$rc" -ne 124 ] || rm -f "$raw/$label.s$k.json"
    fi
  done
  echo "== $label ($(date -u +%TZ)): wrong results:${summary:- none reported}"
}

host="$(hostname -s)"
if [ -n "$merge" ]; then
  stem="$(basename "$merge")"
  stem="${stem%.json}"; stem="${stem%.md}"; stem="${stem%-summary}"
  for c in $ALL_COLLS $V_COLLS; do stem="${stem%-"$c"}"; stem="${stem%-"${c//_/}"}"; done
  [ "$(dirname "$merge")" = . ] || out="$(dirname "$merge")"
else
  stem="$(date -u +%Y-%m-%d)-$host"
  [ "$quick" = 1 ] && stem="$stem-quick"
  # a skewed comparison of the v collectives keeps apart from the equal-block one
  for c in $colls; do
    [ "$skew" = none ] || [[ " $V_COLLS " != *" $c "* ]] || { stem="$stem-${skew//:/}"; break; }
  done
fi
mkdir -p "$out"
membw_args=()
[ "$quick" = 1 ] && membw_args=(-s 64 -r 3)
membw="$("$build/perf/membw" "${membw_args[@]}")"
echo "compare: $membw"
versions=(--meta "ompi_version=$(mpirun.openmpi --version 2>/dev/null | head -1 || true)"
  --meta "mpich_version=$(mpichversion 2>/dev/null | head -1 | tr -s ' \t' ' ' || true)"
  --meta "gloo_version=$("$python" -c 'import torch; print("PyTorch", torch.__version__, "(Gloo)")' 2>/dev/null || true)")
all_start=$(date +%s)
for coll in $colls; do
  halves=$(halves_of "$coll") # run_one's form of the call for this collective
  name="$stem-$coll"
  log="$out/$name.log"
  old=()
  if [ -n "$merge" ] && [ -f "$out/$name.json" ]; then
    old=("$out/$name.json")
    printf '\n##### merged rerun of %s %s %s, %s\n' "$ranks" "$transports" "$peers" "$(date -u +%FT%TZ)" >>"$log"
  else
    : >"$log"
  fi
  rm -f "$raw"/*.json
  failed_before=$failed
  load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
  start=$(date +%s)
  for n in $ranks; do
    for i in $(seq 1 "$launches"); do
      for tr in $transports; do
        run_one "tutti-$n-$tr-$i" "$(cmd_tutti "$tr" "$n" "$coll")"
        for p in $peers; do
          has_coll "$p" "$coll" || continue
          if [ "$p" = gloo ]; then # TCP only: with the TCP launches, else the first ones
            [ "$tr" = tcp ] || { [[ " $transports " != *" tcp "* ]] && [ "$tr" = "${transports%% *}" ]; } || continue
            run_one "gloo-$n-tcp-$i" "$(cmd_gloo tcp "$n" "$coll")"
          else
            run_one "$p-$n-$tr-$i" "$("cmd_$p" "$tr" "$n" "$coll")"
          fi
        done
      done
    done
  done
  elapsed=$(( $(date +%s) - start ))
  new=("$raw"/*.json)
  [ -e "${new[0]}" ] || new=()
  note=""
  [ -n "$merge" ] && note="Merged: the $ranks-rank $transports launches of $peers and tutti were \
run again on $(date -u +%FT%TZ) and replace the earlier ones; the paragraph above describes that rerun."
  cmds=()
  for lib in tutti $peers; do
    cmds+=(--meta "${lib}_cmd=$("cmd_$lib" any "<ranks>" "$coll") <series> --halves $halves --json F")
  done
  "$python" perf/compare_table.py coll --coll "$coll" --out-md "$out/$name.md" \
    --out-json "$out/$name.json" ${note:+--meta "note=$note"} \
    --meta "host=$host" --meta "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    --meta "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" \
    --meta "cores=$(nproc)" --meta "kernel=$(uname -r)" --meta "membw=$membw" \
    --meta "tutti_commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    "${versions[@]}" "${cmds[@]}" \
    --meta "series=$(printf '%s; ' "${series[@]}")" \
    $([[ " $V_COLLS " == *" $coll "* ]] && echo --meta "skew=$skew") \
    --meta "launches=$launches" --meta "elapsed_s=$elapsed" \
    --meta "failed_launches=$((failed - failed_before))" \
    --meta "load_before=$load_before" --meta "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" \
    ${old[@]+"${old[@]}"} "${new[@]}"
  if "$python" -c 'import matplotlib' 2>/dev/null; then
    "$python" perf/compare_plot.py --out-png "$out/$name.png" "$out/$name.json"
  else
    echo "compare: no matplotlib for $python (apt install python3-matplotlib): no $name.png" >&2
  fi
  echo "compare: wrote $out/$name.md, .json, .log (${elapsed}s)"
done
all_elapsed=$(( $(date +%s) - all_start ))

jsons=()
for c in $ALL_COLLS $V_COLLS; do [ -f "$out/$stem-$c.json" ] && jsons+=("$out/$stem-$c.json"); done
links=("$out"/*-"$host"-link.json)
link=""
[ -e "${links[-1]}" ] && link="${links[-1]}" # the newest: names start with the date
"$python" perf/compare_table.py summary --out-md "$out/$stem-summary.md" ${link:+--link "$link"} \
  --meta "host=$host" --meta "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" --meta "stem=$stem" \
  --meta "cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')" \
  --meta "cores=$(nproc)" --meta "kernel=$(uname -r)" --meta "membw=$membw" \
  --meta "tutti_commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --meta "wall_s=$all_elapsed" "${jsons[@]}"
echo "compare: wrote $out/$stem-summary.md (${all_elapsed}s in all, $failed failed launches)"
[ "$failed" -eq 0 ]
