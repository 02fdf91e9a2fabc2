#!/usr/bin/env bash
# scale_hosts.sh - issue 20's scale benchmark across hosts: H network namespaces on a bridge
# (perf/netns_hosts.sh), R ranks of perf/scale_probe in each (shared memory inside a host, TCP
# across), launched rank by rank as a launcher would. Prints rank 0's line (launch to ready is
# each rank's own start to its communicator being ready; first and second 8-byte all-reduce;
# peak RSS) and the peak of /dev/shm. Needs root and ip(8).
#
# Usage: perf/scale_hosts.sh [--hosts H] [--per R] [--build DIR]   (defaults: 16 x 16, build/)
set -euo pipefail
cd "$(dirname "$0")/.."
hosts=16; per=16; build=build
while [ $# -gt 0 ]; do
    case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --per) per=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    *) echo "scale_hosts.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
# shellcheck source=perf/netns_hosts.sh
. perf/netns_hosts.sh
work=$(mktemp -d)
nsh_trap "$work"
nsh_make scale "$hosts" 10.77.0
n=$((hosts * per))
peakf=$work/peak; echo 0 >"$peakf"
base=$(df -B1 --output=used /dev/shm | tail -1)
( peak=0; while [ ! -f "$peakf.stop" ]; do u=$(df -B1 --output=used /dev/shm | tail -1)
    [ "$u" -gt "$peak" ] && peak=$u && echo "$peak" >"$peakf"; sleep 0.05; done ) &
sampler=$!
nsh_env=(TUTTI_TIMEOUT=600 TUTTI_LOG_LEVEL=info TUTTI_LOG_SUBSYS=init)
t0=$(date +%s.%N)
rc=0
NSH_TIMEOUT=900 nsh_launch "$work" "$n" "$per" block "$build/perf/scale_probe" "$n" || rc=$?
t1=$(date +%s.%N)
touch "$peakf.stop"; wait "$sampler"
echo "hosts $hosts x $per ranks: exit $rc, wall $(echo "$t1 - $t0" | bc) s, /dev/shm peak $(( ($(cat "$peakf") - base) / 1048576 )) MiB"
grep -h '^ranks ' "$work/rank0.txt" || tail -5 "$work/rank0.txt"
sed -n 's/.*init phases (ms): rendezvous \([0-9.]*\), detection \([0-9.]*\), local set-up \([0-9.]*\), record exchange \([0-9.]*\), connect \([0-9.]*\);.*/\1 \2 \3 \4 \5/p' "$work"/rank*.txt |
    awk '{for(i=1;i<=5;i++)s[i]+=$i} END{if(NR>0) printf "init phases, mean over %d ranks (ms): rendezvous %.0f, detection %.0f, local set-up %.0f, record exchange %.0f, connect %.0f\n", NR, s[1]/NR, s[2]/NR, s[3]/NR, s[4]/NR, s[5]/NR}'
exit "$rc"
