#!/usr/bin/env bash
# soak.sh - a long run of mixed collectives (not in CI): N fault_rank processes (--coll mixed:
# every call a collective, size, datatype, op and root drawn from one seed alike on every rank,
# every result checked exactly) for --minutes, launched with TUTTI_RANK / TUTTI_NRANKS /
# TUTTI_ROOT / TUTTI_SECRET on loopback. Every --interval seconds it samples each rank's
# resident memory (VmRSS) and open fds from /proc/<pid>, and prints them. It fails when a rank
# fails or gets a wrong result, or when, from the first sample at or after --warmup to the last
# one, any rank's fd count changed or its RSS grew by more than --rss-bound KiB.
#
# Usage: tests/faults/soak.sh [--minutes 10] [--ranks 3] [--transport shm|tcp] [--interval 60]
#          [--warmup 60] [--bytes 1048576] [--rss-bound 2048] [--seed N] [--bin DIR]
set -uo pipefail
cd "$(dirname "$0")/../.."

minutes=10 nranks=3 tr=shm interval=60 warmup=60 bytes=1048576 bound=2048
seed=$(( $(date +%s) % 100000 ))
bin=build/tests/faults
while [ $# -gt 0 ]; do
  case "$1" in
    --minutes) minutes="$2"; shift ;;
    --ranks) nranks="$2"; shift ;;
    --transport) tr="$2"; shift ;;
    --interval) interval="$2"; shift ;;
    --warmup) warmup="$2"; shift ;;
    --bytes) bytes="$2"; shift ;;
    --rss-bound) bound="$2"; shift ;;
    --seed) seed="$2"; shift ;;
    --bin) bin="$2"; shift ;;
    -h|--help) sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "soak: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$bin/fault_rank" ] || { echo "soak: $bin/fault_rank not built (ninja -C build)" >&2; exit 2; }
case "$tr" in
  shm) trenv=() ;;
  tcp) trenv=(TUTTI_TRANSPORT=tcp) ;;
  *) echo "soak: --transport shm or tcp" >&2; exit 2 ;;
esac
work=$(mktemp -d /tmp/tutti-soak.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

secs=$((minutes * 60))
port=$((20000 + RANDOM % 12000))
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
echo "soak: $nranks ranks, $tr, $minutes min of mixed collectives up to $bytes bytes, seed $seed"
for ((r = 0; r < nranks; r++)); do
  env TUTTI_RANK=$r TUTTI_NRANKS="$nranks" TUTTI_ROOT=127.0.0.1:$port TUTTI_SECRET="$secret" \
    TUTTI_SOCKET_IFNAME=lo TUTTI_TIMEOUT=60s "${trenv[@]}" \
    "$bin/fault_rank" --coll mixed --bytes "$bytes" --iters 0 --seconds "$((secs + 5))" \
    --seed "$seed" >"$work/out.$r" 2>"$work/err.$r" &
  pids+=($!)
done

# rss_kb PID, fds PID
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo -1; }
fds() { ls "/proc/$1/fd" 2>/dev/null | wc -l; }

declare -A rss fd
start=$SECONDS
samples=()
for ((k = 0; k * interval <= secs; k++)); do
  while [ $((SECONDS - start)) -lt $((k * interval)) ]; do sleep 1; done
  line=$(printf 't=%4ds' $((SECONDS - start)))
  for ((r = 0; r < nranks; r++)); do
    rss[$k,$r]=$(rss_kb "${pids[$r]}")
    fd[$k,$r]=$(fds "${pids[$r]}")
    line+=$(printf ' | rank %d rss %6s KiB fds %3s' $r "${rss[$k,$r]}" "${fd[$k,$r]}")
  done
  samples+=("$k")
  echo "$line"
done

rc=0
for ((r = 0; r < nranks; r++)); do
  wait "${pids[$r]}"
  code=$?
  grep '^RESULT' "$work/out.$r" | sed 's/ msg: (0 wrong elements)$//'
  if [ $code != 0 ]; then
    echo "soak: rank $r exited $code: $(tail -c 500 "$work/err.$r")"
    rc=1
  fi
done
pids=()

# growth from the first sample at or after the warm-up to the last one
base=$(( (warmup + interval - 1) / interval ))
last=$(( ${#samples[@]} - 1 ))
if [ "$base" -ge "$last" ]; then
  echo "soak: no sample after the warm-up to compare (run longer than --warmup + --interval)"
  exit 1
fi
for ((r = 0; r < nranks; r++)); do
  dr=$(( ${rss[$last,$r]} - ${rss[$base,$r]} ))
  df=$(( ${fd[$last,$r]} - ${fd[$base,$r]} ))
  echo "rank $r: from t=$((base * interval))s to t=$((last * interval))s rss ${dr} KiB, fds ${df}"
  if [ "$df" != 0 ] || [ "$dr" -gt "$bound" ]; then
    echo "soak: rank $r grew (bound: 0 fds, $bound KiB)"
    rc=1
  fi
done
[ $rc = 0 ] && echo "soak: passed" || echo "soak: FAILED"
exit $rc
