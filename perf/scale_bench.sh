#!/usr/bin/env bash
# scale_bench.sh - issue 20's scale benchmark on one host: for each rank count, N forked local
# ranks of perf/scale_probe (launch-to-ready time, the first and second 8-byte all-reduce, each
# rank's peak resident memory), while /dev/shm's use is sampled every 50 ms (df), and each
# rank's init phases come from its info line (TUTTI_LOG_LEVEL=info TUTTI_LOG_SUBSYS=init).
# Writes OUT.md (a table), OUT.tsv (every launch) and OUT.svg (init time and memory per rank
# against the rank count, log-log).
#
# Usage: perf/scale_bench.sh [--ranks "8 32 128 256 512"] [--launches N] [--build DIR] [--out OUT]
# Defaults: those counts, 1 launch each, build/, perf/results/<date>-scale.
set -euo pipefail
cd "$(dirname "$0")/.."
ranks="8 32 128 256 512"; launches=1; build=build
out="perf/results/$(date +%F)-scale"
while [ $# -gt 0 ]; do
    case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --launches) launches=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "scale_bench.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
probe=$build/perf/scale_probe
[ -x "$probe" ] || { echo "scale_bench.sh: $probe not built" >&2; exit 2; }
tsv=$out.tsv
printf 'ranks\tlaunch\twall_s\tinit_max_s\tinit_med_s\tfirst_ms\tsecond_ms\thwm_max_mib\thwm_med_mib\tshm_peak_mib\twrong\trendezvous_ms\tdetect_ms\tlocal_ms\trecords_ms\tconnect_ms\n' >"$tsv"
log=$(mktemp); peakf=$(mktemp)
trap 'rm -f "$log" "$peakf" "$peakf.stop"' EXIT
for n in $ranks; do
    for l in $(seq 1 "$launches"); do
        base=$(df -B1 --output=used /dev/shm | tail -1)
        rm -f "$peakf.stop"; echo 0 >"$peakf"
        ( peak=0; while [ ! -f "$peakf.stop" ]; do u=$(df -B1 --output=used /dev/shm | tail -1)
            [ "$u" -gt "$peak" ] && peak=$u && echo "$peak" >"$peakf"; sleep 0.05; done ) &
        sampler=$!
        t0=$(date +%s.%N)
        rc=0
        TUTTI_LOG_LEVEL=info TUTTI_LOG_SUBSYS=init TUTTI_TIMEOUT=600 timeout 900 "$probe" "$n" \
            >"$log" 2>&1 || rc=$?
        t1=$(date +%s.%N)
        touch "$peakf.stop"; wait "$sampler"
        shm=$(( ($(cat "$peakf") - base) / 1048576 )); [ "$shm" -lt 0 ] && shm=0
        line=$(grep '^ranks ' "$log" || echo "ranks $n init_s - - first_ms - second_ms - hwm_mib - - wrong -")
        # Mean of each init phase over the ranks' info lines.
        phases=$(sed -n 's/.*init phases (ms): rendezvous \([0-9.]*\), detection \([0-9.]*\), local set-up \([0-9.]*\), record exchange \([0-9.]*\), connect \([0-9.]*\);.*/\1 \2 \3 \4 \5/p' "$log" |
            awk '{for(i=1;i<=5;i++)s[i]+=$i} END{if(NR==0){print "-\t-\t-\t-\t-"} else printf "%.0f\t%.0f\t%.0f\t%.0f\t%.0f\n", s[1]/NR, s[2]/NR, s[3]/NR, s[4]/NR, s[5]/NR}')
        set -- $line
        printf '%s\t%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$n" "$l" \
            "$(echo "$t1 - $t0" | bc)" "$4" "$5" "$7" "$9" "${11}" "${12}" "$shm" "${14}" "$phases" >>"$tsv"
        echo "ranks $n launch $l: exit $rc, $(tail -1 "$tsv" | cut -f3-11 | tr '\t' ' ')" >&2
        [ "$rc" -eq 0 ] || tail -5 "$log" >&2
    done
done
/usr/bin/python3 perf/scale_plot.py "$tsv" "$out.svg" "$out.md" "perf/scale_bench.sh --ranks \"$ranks\" --launches $launches"
echo "wrote $out.md, $tsv, $out.svg" >&2
