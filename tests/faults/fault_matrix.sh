#!/usr/bin/env bash
# fault_matrix.sh - the fault matrix of issue 5: real jobs of fault_rank processes (one per rank,
# launched with TUTTI_RANK / TUTTI_NRANKS / TUTTI_ROOT / TUTTI_SECRET like a user's job) over
# each transport, with one fault injected per run, and what every surviving rank must then do.
#
# Transports: shm (ranks on one host), tcp (TUTTI_TRANSPORT=tcp on loopback), netns (two
# network namespaces joined by a veth pair, 10.78.0.1 and .2, made by this script and removed on
# exit; ranks alternate between them, so shared memory inside a namespace and TCP across).
# Faults, per collective (all_reduce broadcast reduce reduce_scatter all_gather alltoall
# sendrecv alltoallv allgatherv gather scatter reduce_scatterv; alltoallv, allgatherv and
# reduce_scatterv run with Zipf-sized blocks (fault_rank --skew zipf), gather and scatter with
# equal ones, as tutti_gather and tutti_scatter, except under mismatch_vcounts):
#   kill           SIGKILL of a random rank, 0-300 ms into its collectives
#   stop           SIGSTOP of a random rank (a stuck peer), SIGKILLed after the run
#   cut            (netns) ip link set down on B's veth end
#   slow           (netns) tbf 1mbit burst 1mb latency 10ms on both veth ends (no netem here)
#   strangers      at the root before the others join, and at every listening port of every rank
#                  during the collectives: garbage, half-open, wrong secret, wrong protocol
#                  version, and at a port that serves (not the shrink listener) a flood of 300
#                  silent connections (fault_stranger); the job must go on with right results and the same
#                  fd count and about the same RSS after as before (fault_rank's fds/rss_kb)
#   foreign        another user of the host (tutti-intruder, made with useradd; intruder.py run
#                  with runuser) against the job for its whole life: it reads every tutti-* name
#                  in /dev/shm and each rank's /proc/<pid>/mem and environ, signals the ranks,
#                  and plants, for the communicator id it learns from a first identical job (a
#                  probe: a root address and secret give the same id every time), the names of
#                  its segments and its topology share file and lock, open to all; the job must
#                  run as if nobody were there (as strangers), and the intruder must have read
#                  nothing, delivered no signal and found something to plant (issue 36)
#   wrong_secret   one rank joins with another TUTTI_SECRET
#   wrong_nranks   one rank joins with TUTTI_NRANKS + 1 (env launch): the root sees the
#                  authenticated nranks and fails every rank at once, naming the mismatch
#   wrong_nranks_id  the same through a unique id (tutti_comm_init_rank)
#   mismatch_count, mismatch_dtype, mismatch_dtype_same   the highest rank calls with
#                  2 x count + n, a datatype of another size, or one of the same size
#   mismatch_op    (reducing collectives) the highest rank reduces with another op
#   mismatch_root  (rooted collectives) the highest rank names another root
#   mismatch_coll  the highest rank calls the next collective of the list, with the same bytes
#   mismatch_peer  (sendrecv) the highest rank sends to rank + 2 instead of rank + 1
#   mismatch_vcounts (alltoallv, allgatherv, reduce_scatterv; gather and scatter as gatherv and
#                  scatterv) the highest rank's count vector differs from what its peers expect:
#                  alltoallv's block for rank 0 empty where rank 0 expects data, the others' own
#                  block one element larger (fault_rank.c)
# Expected: every surviving rank returns an error within TUTTI_TIMEOUT (3 s) + slack, whose
# message names another rank ("rank N (host H, pid P)" after set-up; "rank N" during it); no
# crash (a signal other than the injected one, or exit 2); no hang (a run still going after
# the outer timeout is killed and counted as a hang). A slow link must complete with right
# results: the data keeps moving, so a timeout there is a false alarm, counted as "slow-link
# timeout" (clean, but not what a user wants; see docs/design/call-path.md, beats). A mismatch must
# end every rank with an error in time that names another rank (a rank whose calls all
# returned OK makes one more call: one that only sent cannot tell, its next call must; see
# fault_rank.c), and some rank's error must be TUTTI_ERR_MISMATCH naming the calls
# ("mismatched calls", operation fingerprints, src/exec/fp.h), except where the data goes to a
# rank that never reads it and the ranks waiting for data time out: mismatch_peer, and
# mismatch_root and mismatch_coll of gather and scatter (each rank only sends to the root or only
# receives from it, so the rank that differs may exchange no data with a rank that reads it;
# seen: 6 of 12 such runs ended by TUTTI_TIMEOUT alone; see no_reader below). The
# others fail with the notice of a rank that failed (ERR_MISMATCH with its message) or, where
# no connection carries it (TCP), with what they see of that rank (closed, gone). A rank that
# ends without an error (or with wrong results) is counted as "mismatch undetected".
#
# Usage: tests/faults/fault_matrix.sh [--quick | --full] [--bin DIR] [--seed N] [--only REGEX]
#          [--slack S] [--keep]
#   --quick  the CI subset (default; about 2 minutes on 2 cores)
#   --full   every transport x collective x fault
#   --bin    where fault_rank and fault_stranger are (default build/tests/faults)
#   --only   run only cases whose "transport/collective/fault" matches REGEX
#   --keep   keep the per-run logs (printed path)
# Prints one line per run, then "runs N, faults injected N, errors reported correctly N, hangs N,
# wrong N" (and skips, undetected mismatches, slow-link timeouts). Exits 1 if hangs or wrong
# > 0, 2 on usage.
# Namespace cases need root and ip(8) (tc(8) for slow), foreign cases root, useradd and runuser:
# without them they are skipped, saying why.
set -uo pipefail
cd "$(dirname "$0")/../.."

mode=quick
bin=build/tests/faults
seed=$(( $(date +%s) % 100000 ))
only=""
slack=7
keep=0
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) mode=quick ;;
    --full) mode=full ;;
    --bin) bin="$2"; shift ;;
    --seed) seed="$2"; shift ;;
    --only) only="$2"; shift ;;
    --slack) slack="$2"; shift ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,/^set -uo/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
    *) echo "fault_matrix: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for t in fault_rank fault_stranger; do
  [ -x "$bin/$t" ] || { echo "fault_matrix: $bin/$t not built (ninja -C build)" >&2; exit 2; }
done
RANDOM=$seed
T=3                          # TUTTI_TIMEOUT of every run, seconds
outer=$((T + slack + 25))    # a run still going after this is a hang
work=$(mktemp -d /tmp/tutti-faults.XXXXXX)
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
echo "fault_matrix: $mode, seed $seed, TUTTI_TIMEOUT ${T}s, slack ${slack}s, logs in $work"

# ------------------------------------------------------------------ network namespaces
ns=("tutti-fm-$$-a" "tutti-fm-$$-b")
veth=("tfm$$a" "tfm$$b")
addr=(10.78.0.1 10.78.0.2)
ns_ok=0
ns_why=""
have_tc=0
ns_teardown() {
  for n in "${ns[@]}"; do ip netns delete "$n" 2>/dev/null || true; done
  ip link delete "${veth[0]}" 2>/dev/null || true
}
ns_setup() {
  if [ "$(id -u)" != 0 ]; then ns_why="not root (network namespaces need CAP_SYS_ADMIN)"; return; fi
  command -v ip >/dev/null || { ns_why="ip(8) not installed (apt install iproute2)"; return; }
  local err
  if ! err=$( { ip netns add "${ns[0]}" && ip netns add "${ns[1]}" &&
        ip link add "${veth[0]}" type veth peer name "${veth[1]}" &&
        for i in 0 1; do
          ip link set "${veth[$i]}" netns "${ns[$i]}" &&
          ip -n "${ns[$i]}" addr add "${addr[$i]}/24" dev "${veth[$i]}" &&
          ip -n "${ns[$i]}" link set "${veth[$i]}" up &&
          ip -n "${ns[$i]}" link set lo up || exit 1
        done; } 2>&1); then
    ns_why="cannot make network namespaces: ${err//$'\n'/ }"
    ns_teardown
    return
  fi
  ns_ok=1
  command -v tc >/dev/null && have_tc=1
}
# ------------------------------------------------------------------ another user
intruder=tutti-intruder
foreign_why=""
foreign_setup() {
  if [ "$(id -u)" != 0 ]; then foreign_why="not root (needs a second user: useradd, runuser)"; return; fi
  command -v runuser >/dev/null || { foreign_why="runuser(1) not installed (util-linux)"; return; }
  command -v python3 >/dev/null || { foreign_why="python3 not installed"; return; }
  id -u "$intruder" >/dev/null 2>&1 ||
    useradd --system --no-create-home --shell /usr/sbin/nologin "$intruder" 2>/dev/null ||
    { foreign_why="useradd $intruder failed"; return; }
}
# The intruder, as its user, until the file $1 exists; its line in $2. The script goes on stdin:
# the clone may be where that user cannot read.
start_intruder() {
  runuser -u "$intruder" -w INTRUDER_VERBOSE -- python3 - --seconds 120 --until "$1" \
    <tests/faults/intruder.py >"$2" 2>&1 &
  intruder_pid=$!
}

cleanup() {
  [ "$ns_ok" = 1 ] && ns_teardown
  [ "$keep" = 1 ] || rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ------------------------------------------------------------------ one job
# Kill a rank's wrapper subshell and what it started (by pid).
kill_rank() {
  local c
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill -KILL "$c" 2>/dev/null; done
  kill -KILL "$1" 2>/dev/null
}

# start_rank DIR RANK NRANKS TRANSPORT PORT [fault_rank args...]; extra env in EXTRA_ENV (array)
start_rank() {
  local dir=$1 r=$2 n=$3 tr=$4 port=$5
  shift 5
  local pre=() env=(TUTTI_TIMEOUT=${T}s TUTTI_SECRET="$secret")
  local side=$((r % 2))
  case "$tr" in
    shm) env+=(TUTTI_SOCKET_IFNAME=lo TUTTI_ROOT=127.0.0.1:$port) ;;
    tcp) env+=(TUTTI_TRANSPORT=tcp TUTTI_SOCKET_IFNAME=lo TUTTI_ROOT=127.0.0.1:$port) ;;
    netns) pre=(ip netns exec "${ns[$side]}")
           env+=(TUTTI_SOCKET_IFNAME="${veth[$side]}" TUTTI_ROOT=${addr[0]}:$port) ;;
  esac
  [[ " $* " == *" --idfile "* ]] || env+=(TUTTI_RANK=$r TUTTI_NRANKS=$n)
  env+=("${EXTRA_ENV[@]}")
  ( "${pre[@]}" env "${env[@]}" "$bin/fault_rank" "$@" >"$dir/out.$r" 2>"$dir/err.$r"
    echo $? >"$dir/rc.$r" ) 2>/dev/null &
  wrapper[$r]=$!
}

# Wait until every rank of the run has printed READY (or exited); 0 when all are ready.
await_ready() {
  local dir=$1 n=$2 end=$((SECONDS + 30)) r ready
  while [ $SECONDS -lt $end ]; do
    ready=0
    for ((r = 0; r < n; r++)); do
      grep -q '^READY' "$dir/out.$r" 2>/dev/null && ready=$((ready + 1))
      [ -e "$dir/rc.$r" ] && return 1
    done
    [ $ready = "$n" ] && return 0
    sleep 0.05
  done
  return 1
}

rank_pid() { sed -n 's/^READY rank [0-9]* pid \([0-9]*\).*/\1/p' "$1/out.$2"; }

# Wait for every rank to exit within the outer timeout; 1 (and everything killed) on a hang.
await_exit() {
  local dir=$1 n=$2 end=$((SECONDS + outer)) r left
  while :; do
    left=0
    for ((r = 0; r < n; r++)); do [ -e "$dir/rc.$r" ] || left=$((left + 1)); done
    [ $left = 0 ] && return 0
    if [ $SECONDS -ge $end ]; then
      for ((r = 0; r < n; r++)); do [ -e "$dir/rc.$r" ] || kill_rank "${wrapper[$r]}"; done
      wait
      return 1
    fi
    sleep 0.1
  done
}

now() { date +%s.%N; }

# ------------------------------------------------------------------ verdicts
# field OUT N: word N of the RESULT line ("RESULT rank R pid P status S iters N t_end T fds A B
# rss_kb A B msg: ...": 7 status, 11 t_end, 13/14 fds, 16/17 rss_kb)
field() { awk -v n="$2" '/^RESULT/ { print $n }' "$1"; }

# Is rank r's ending an error, in time (and with NAMES 1: naming another rank; 2: and its
# host)? Prints the reason when not.   check_error DIR R T_INJECT NAMES
check_error() {
  local dir=$1 r=$2 t0=$3 names=$4 rc st t msg
  rc=$(cat "$dir/rc.$r")
  st=$(field "$dir/out.$r" 7)
  t=$(field "$dir/out.$r" 11)
  msg=$(sed -n 's/^RESULT.* msg: //p' "$dir/out.$r")
  if [ "$rc" != 1 ] || [ -z "$st" ] || [ "$st" = OK ]; then
    echo "rank $r: exit $rc, status ${st:-none} (wanted an error): $(tail -c 300 "$dir/err.$r" | tr '\n' ' ')"
    return 1
  fi
  if ! awk -v t="$t" -v t0="$t0" -v lim=$((T + slack)) 'BEGIN { exit !(t - t0 <= lim) }'; then
    echo "rank $r: error came $(awk -v t="$t" -v t0="$t0" 'BEGIN { printf "%.1f", t - t0 }') s after the fault (limit $((T + slack)) s): $msg"
    return 1
  fi
  if [ "$names" -ge 1 ] && ! grep -Eo 'ranks? [0-9]+' <<<"$msg" | grep -Eqv "^rank $r\$"; then
    echo "rank $r: the message names no other rank: $msg"
    return 1
  fi
  if [ "$names" = 2 ] && ! grep -Eq 'rank [0-9]+ \(host [^,]+, pid' <<<"$msg" &&
     ! grep -Eq 'rank [0-9]+ reports' <<<"$msg"; then
    echo "rank $r: the message names no host: $msg"
    return 1
  fi
  check_fini "$dir" "$r"
}

# Did rank r's tutti_comm_destroy give back every fd (FINI: fds before init = after destroy)
# and return within TUTTI_TIMEOUT + slack?
check_fini() {
  local out="$1/out.$2" a b d
  read -r a b d <<<"$(awk '/^FINI/ { print $5, $7, $9 }' "$out")"
  if [ -z "$a" ]; then echo "rank $2: no FINI line (destroy did not return)"; return 1; fi
  if [ "$a" != "$b" ]; then echo "rank $2: $a fds before init, $b after destroy"; return 1; fi
  if ! awk -v d="$d" -v lim=$((T + slack)) 'BEGIN { exit !(d <= lim) }'; then
    echo "rank $2: tutti_comm_destroy took $d s"; return 1
  fi
}

# A rank that must have finished every call right, with RSS growth below 4 MiB and its fds
# bounded (fds/rss_kb: after the second call, and at the end). A rank advances handshakes only
# while it waits inside a call, so strangers accepted during its last wait may still be held
# when its calls end: at most the listeners' cap on handshakes in progress (256: tcp.h
# TCP_MAX_INCOMING, bootstrap.h TUTTI_BOOT_MAX_HANDSHAKES) plus the silent one. On a loaded
# machine a flood fills that cap (seen: 10 -> 265). FINI then checks that destroy closed every
# one of them, so a leak still fails.
MAX_PENDING_FDS=257
check_clean() {
  local dir=$1 r=$2 rc
  rc=$(cat "$dir/rc.$r")
  if [ "$rc" != 0 ]; then
    echo "rank $r: exit $rc: $(sed -n 's/^RESULT.* msg: //p' "$dir/out.$r") $(tail -c 300 "$dir/err.$r" | tr '\n' ' ')"
    return 1
  fi
  local f0 f1 r0 r1
  f0=$(field "$dir/out.$r" 13) f1=$(field "$dir/out.$r" 14)
  r0=$(field "$dir/out.$r" 16) r1=$(field "$dir/out.$r" 17)
  if [ "$f1" -gt $((f0 + MAX_PENDING_FDS)) ]; then
    echo "rank $r: fds $f0 -> $f1, more than the $MAX_PENDING_FDS handshakes a rank may hold"
    return 1
  fi
  if [ $((r1 - r0)) -gt 4096 ]; then echo "rank $r: RSS $r0 -> $r1 KiB"; return 1; fi
  check_fini "$dir" "$r"
}

# Mismatches whose data may reach no rank that reads it (see the header): every rank must still
# fail in time naming another rank, but none need report ERR_MISMATCH.   no_reader COLL FAULT
no_reader() {
  case "$1/$2" in
    */mismatch_peer|gather/mismatch_root|gather/mismatch_coll|scatter/mismatch_root) return 0 ;;
    scatter/mismatch_coll) return 0 ;;
    *) return 1 ;;
  esac
}

runs=0 injected=0 correct=0 hangs=0 wrongs=0 skips=0 undetected=0 slow_timeouts=0
declare -A skip_reason
report() { # case verdict detail
  printf '%-40s %-10s %s\n' "$1" "$2" "$3"
}

# ------------------------------------------------------------------ one run
# run_case TRANSPORT COLL FAULT
run_case() {
  local tr=$1 coll=$2 fault=$3 name="$1/$2/$3"
  [ -n "$only" ] && ! [[ "$name" =~ $only ]] && return
  if [ "$tr" = netns ] && [ "$ns_ok" != 1 ]; then
    skips=$((skips + 1)); skip_reason["netns: $ns_why"]=1; return
  fi
  if [ "$fault" = foreign ] && [ -n "$foreign_why" ]; then
    skips=$((skips + 1)); skip_reason["foreign: $foreign_why"]=1; return
  fi
  if [ "$fault" = slow ] && [ "$have_tc" != 1 ]; then
    skips=$((skips + 1)); skip_reason["slow: tc(8) not installed"]=1; return
  fi
  runs=$((runs + 1))
  local dir="$work/run$runs" n=3 port=$((20000 + RANDOM % 12000)) r victim t0="" why=""
  local args=(--coll "$coll" --bytes 65536 --iters 1000000 --seconds 20)
  mkdir -p "$dir"
  wrapper=()
  EXTRA_ENV=()
  victim=$((RANDOM % n))
  case "$fault" in
    kill|stop|cut) ;;
    slow) args=(--coll "$coll" --bytes 262144 --iters 6 --seconds 0) ;;
    strangers|foreign) args=(--coll "$coll" --bytes 65536 --iters 200 --seconds $((T + 4))) ;;
    wrong_*) victim=$((1 + RANDOM % (n - 1))) ;; # rank 0 hosts the root
    mismatch_*) args=(--coll "$coll" --bytes 65536 --iters 20 --seconds 0
                      --mismatch "${fault#mismatch_}"); victim=$((n - 1)) ;;
  esac
  args+=(--skew "$(skew_of "$coll" "$fault")")
  [ "$fault" = wrong_nranks_id ] && args+=(--idfile "$dir/id")

  # a slow link is slow from the start: tbf lets its 1 MB burst through at full speed first
  if [ "$fault" = slow ]; then
    for i in 0 1; do
      ip netns exec "${ns[$i]}" tc qdisc add dev "${veth[$i]}" root tbf rate 1mbit burst 1mb latency 10ms
    done
  fi
  # another user, there before the job: it learns the job's communicator id from a probe (a job
  # with the same root and secret, so the same id) and plants that id's names
  local stop_file=""
  if [ "$fault" = foreign ]; then
    stop_file=$(mktemp -u /tmp/tutti-intruder-stop.XXXXXX)
    start_intruder "$stop_file" "$dir/intruder"
    mkdir -p "$dir/probe"
    local w=("${wrapper[@]}")
    for ((r = 0; r < n; r++)); do
      start_rank "$dir/probe" $r $n "$tr" $port --coll "$coll" --bytes 64 --iters 1 --seconds 0 \
        --skew "$(skew_of "$coll" "$fault")"
    done
    await_exit "$dir/probe" $n || { hangs=$((hangs + 1)); report "$name" HANG "the probe job"; touch "$stop_file"; return; }
    wrapper=("${w[@]}")
    sleep 0.3 # the intruder plants what it saw
  fi
  # start: rank 0 first (it serves the root), strangers at the root, then the others
  local rank_args=("${args[@]}")
  [ "$fault" = wrong_nranks_id ] && rank_args+=(--rank 0 --nranks $n)
  start_rank "$dir" 0 $n "$tr" $port "${rank_args[@]}"
  local strangers=()
  if [ "$fault" = strangers ]; then
    local pre=() pre0=() root=127.0.0.1:$port
    if [ "$tr" = netns ]; then # the root listens in A; the stranger comes from B
      pre=(ip netns exec "${ns[1]}") pre0=(ip netns exec "${ns[0]}") root=${addr[0]}:$port
    fi
    for _ in $(seq 100); do
      "${pre0[@]}" ss -Hltn "sport = :$port" 2>/dev/null | grep -q . && break
      sleep 0.05
    done
    "${pre[@]}" "$bin/fault_stranger" "$root" --hold 1 >"$dir/stranger.root" 2>&1 &
    strangers+=($!)
    sleep 0.2
  fi
  local order=()
  for ((r = 1; r < n; r++)); do [ "$r" = "$victim" ] || order+=($r); done
  [ "$victim" = 0 ] || order+=($victim) # the victim last
  for r in "${order[@]}"; do
    EXTRA_ENV=()
    rank_args=("${args[@]}")
    if [ "$r" = "$victim" ]; then
      # the others are waiting at the root when the misconfigured rank comes (a rank that
      # arrives after the root gave up only learns that its handshake failed)
      [[ "$fault" == wrong_* ]] && sleep 0.5
      case "$fault" in
        wrong_secret) EXTRA_ENV=(TUTTI_SECRET="$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')") ;;
        wrong_nranks) EXTRA_ENV=(TUTTI_NRANKS=$((n + 1))) ;;
      esac
    fi
    if [ "$fault" = wrong_nranks_id ]; then
      rank_args+=(--rank $r --nranks $([ "$r" = "$victim" ] && echo $((n + 1)) || echo $n))
    fi
    start_rank "$dir" $r $n "$tr" $port "${rank_args[@]}"
  done
  EXTRA_ENV=()

  # inject
  case "$fault" in
    kill|stop|cut|strangers)
      if ! await_ready "$dir" $n; then
        await_exit "$dir" $n || { hangs=$((hangs + 1)); report "$name" HANG "before the fault"; return; }
        wrongs=$((wrongs + 1)); report "$name" WRONG "a rank failed before the fault: $(cat "$dir"/out.* | grep RESULT | head -1)"
        return
      fi ;;
  esac
  local vpid
  case "$fault" in
    kill|stop)
      vpid=$(rank_pid "$dir" $victim)
      sleep "0.$(printf '%03d' $((RANDOM % 300)))"
      t0=$(now)
      if [ "$fault" = kill ]; then kill -KILL "$vpid"; else kill -STOP "$vpid"; fi ;;
    cut) t0=$(now); ip -n "${ns[1]}" link set "${veth[1]}" down ;;
    strangers)
      t0=$(now)
      for ((r = 0; r < n; r++)); do
        local pid cid shp side=$((r % 2)) pre=() p lo
        pid=$(rank_pid "$dir" $r)
        cid=$(sed -n 's/^READY.* comm_id \([0-9a-f]*\).*/\1/p' "$dir/out.$r")
        # the shrink listener is read only when a shrink needs it: strangers there go unanswered
        shp=$(sed -n 's/^READY.* shrink_port \([0-9-]*\).*/\1/p' "$dir/out.$r")
        [ "$tr" = netns ] && pre=(ip netns exec "${ns[$side]}")
        # (ss shows a listener tied to TUTTI_SOCKET_IFNAME as addr%dev:port: drop the %dev)
        for p in $("${pre[@]}" ss -Hltnp 2>/dev/null | grep "pid=$pid," |
                   awk '{a = $4; sub(/%[^:]*:/, ":", a); print a}'); do
          lo=(--flood 300); [ "${p##*:}" = "$shp" ] && lo=(--listen-only)
          "${pre[@]}" "$bin/fault_stranger" "$p" "${lo[@]}" --secret "$secret" --comm-id "$cid" \
            --hold $((T + 2)) >"$dir/stranger.$r.${p##*:}" 2>&1 &
          strangers+=($!)
        done
      done ;;
    *) t0=$(now) ;;
  esac
  injected=$((injected + 1))

  # the ranks end (the stopped one is killed once the others have)
  if [ "$fault" = stop ]; then
    local end=$((SECONDS + outer))
    while [ $SECONDS -lt $end ]; do
      local done_=1
      for ((r = 0; r < n; r++)); do [ "$r" = "$victim" ] || [ -e "$dir/rc.$r" ] || done_=0; done
      [ $done_ = 1 ] && break
      sleep 0.1
    done
    kill -KILL "$vpid" 2>/dev/null
  fi
  local hung=0
  await_exit "$dir" $n || hung=1
  local srv_rc=0 s
  for s in "${strangers[@]}"; do wait "$s" || srv_rc=1; done
  if [ -n "$stop_file" ]; then
    touch "$stop_file"
    wait "$intruder_pid" || srv_rc=1
    rm -f "$stop_file"
  fi
  case "$fault" in
    cut) ip -n "${ns[1]}" link set "${veth[1]}" up ;;
    slow) for i in 0 1; do ip netns exec "${ns[$i]}" tc qdisc del dev "${veth[$i]}" root; done ;;
  esac
  if [ $hung = 1 ]; then
    hangs=$((hangs + 1)); report "$name" HANG "a rank ran past $outer s (killed)"; return
  fi

  # verdict
  local verdict=ok named=0
  why=""
  for ((r = 0; r < n; r++)); do
    local rc msg
    rc=$(cat "$dir/rc.$r")
    case "$fault" in
      kill|stop)
        if [ "$r" = "$victim" ]; then
          [ "$rc" = 137 ] || { why+="victim rank $r: exit $rc (expected SIGKILL); "; verdict=wrong; }
        else
          msg=$(check_error "$dir" $r "$t0" 2) || { why+="$msg; "; verdict=wrong; }
        fi ;;
      cut)
        msg=$(check_error "$dir" $r "$t0" 2) || { why+="$msg; "; verdict=wrong; } ;;
      wrong_*) # the misconfigured rank cannot know who the others are
        msg=$(check_error "$dir" $r "$t0" $([ "$r" = "$victim" ] && echo 0 || echo 1)) ||
          { why+="$msg; "; verdict=wrong; } ;;
      strangers|foreign)
        msg=$(check_clean "$dir" $r) || { why+="$msg; "; verdict=wrong; } ;;
      slow)
        if [ "$rc" != 0 ]; then # data still moves: a timeout here is a false alarm
          why+="rank $r failed on the slow link (exit $rc): $(sed -n 's/.* msg: //p' "$dir/out.$r" | cut -c1-100); "
          msg=$(check_error "$dir" $r "$t0" 2) || { why+="$msg; "; verdict=wrong; }
          [ $verdict = ok ] && verdict=slow_timeout
        fi ;;
      mismatch_*)
        if [ "$rc" -ge 128 ] || [ "$rc" = 2 ] || ! grep -q '^RESULT' "$dir/out.$r"; then
          why+="rank $r: crashed (exit $rc); "; verdict=wrong
        elif [ "$rc" = 0 ] || [ "$rc" = 3 ]; then
          [ $verdict = ok ] && verdict=undetected
          why+="rank $r: $([ "$rc" = 0 ] && echo "no error" || echo "wrong results, no error"); "
        elif ! msg=$(check_error "$dir" $r "$t0" 1); then
          why+="$msg; "; verdict=wrong
        elif [ "$(field "$dir/out.$r" 7)" = ERR_MISMATCH ] &&
             grep -q '^RESULT.* msg: .*mismatched calls' "$dir/out.$r"; then
          named=$((named + 1))
        fi ;;
    esac
  done
  if [[ "$fault" == mismatch_* ]] && [ $verdict = ok ]; then
    if ! no_reader "$coll" "$fault" && [ $named = 0 ]; then
      verdict=wrong; why+="no rank reports ERR_MISMATCH naming the calls; "
    fi
    why+="$named of $n ranks report ERR_MISMATCH naming the calls: $(grep -h '^RESULT.* status ERR_MISMATCH' "$dir"/out.* | head -1 | sed 's/^RESULT.* msg: //' | cut -c1-110)"
  fi
  if [ "$fault" = strangers ]; then
    [ $srv_rc = 0 ] || { verdict=wrong; why+="a stranger was let in or kept: $(cat "$dir"/stranger.* | tr '\n' ' '); "; }
    local attacked want=$((n + 1)) # the root, and with TCP each rank's listener
    [ "$tr" = shm ] && want=1
    attacked=$(cat "$dir"/stranger.* 2>/dev/null | grep -c '^STRANGER')
    [ "$attacked" -ge $want ] || { verdict=wrong; why+="only $attacked ports found to attack (ss -ltnp), expected $want; "; }
    why+="$(cat "$dir"/stranger.* 2>/dev/null | grep -c '^STRANGER') ports attacked, all shut out; "
    why+="rank 0 fds $(field "$dir/out.0" 13)->$(field "$dir/out.0" 14), rss $(field "$dir/out.0" 16)->$(field "$dir/out.0" 17) KiB over $(field "$dir/out.0" 9) calls"
  fi
  if [ "$fault" = foreign ]; then
    local line planted
    line=$(grep '^INTRUDER' "$dir/intruder")
    planted=$(awk '{ for (i = 2; i < NF; i += 2) if ($i == "planted") print $(i + 1) }' <<<"$line")
    [ $srv_rc = 0 ] || { verdict=wrong; why+="the intruder got in: $(tr '\n' ' ' <"$dir/intruder"); "; }
    [ "${planted:-0}" -gt 0 ] || { verdict=wrong; why+="the intruder found no id to plant: ${line:-$(tr '\n' ' ' <"$dir/intruder")}; "; }
    why+="${line#INTRUDER }; rank 0 over $(field "$dir/out.0" 9) calls"
  fi
  case $verdict in
    ok) correct=$((correct + 1)) ;;
    undetected) undetected=$((undetected + 1)) ;;
    slow_timeout) slow_timeouts=$((slow_timeouts + 1)) ;;
    wrong) wrongs=$((wrongs + 1)) ;;
  esac
  [ $verdict = ok ] && [ "$fault" != slow ] && [ "$fault" != strangers ] && [ "$fault" != foreign ] &&
    [[ "$fault" != mismatch_* ]] && why=""
  [ -z "$why" ] && why=$(sed -n 's/^RESULT rank [-0-9]* pid [0-9]* status \([A-Z_]*\).* msg: \(.\{0,110\}\).*/\1 \2/p' \
                         "$dir/out.$(( (victim + 1) % n ))")
  report "$name" "$verdict" "$why"
}

# ------------------------------------------------------------------ the matrix
colls=(all_reduce broadcast reduce reduce_scatter all_gather alltoall sendrecv
       alltoallv allgatherv gather scatter reduce_scatterv)
ns_setup
foreign_setup
# The mismatches that apply to a collective.
mismatches() {
  local m=(mismatch_count mismatch_dtype mismatch_dtype_same mismatch_coll)
  case "$1" in
    all_reduce|reduce_scatter) m+=(mismatch_op) ;;
    broadcast) m+=(mismatch_root) ;;
    reduce) m+=(mismatch_op mismatch_root) ;;
    sendrecv) m+=(mismatch_peer) ;;
    alltoallv|allgatherv) m+=(mismatch_vcounts) ;;
    reduce_scatterv) m+=(mismatch_op mismatch_vcounts) ;;
    gather|scatter) m+=(mismatch_root mismatch_vcounts) ;;
  esac
  echo "${m[@]}"
}
# The block sizes of a run (fault_rank --skew): Zipf for the v collectives, and for gather and
# scatter when the fault is in their count vectors (their v forms); equal blocks otherwise.
skew_of() {
  case "$1/$2" in
    alltoallv/*|allgatherv/*|reduce_scatterv/*|*/mismatch_vcounts) echo zipf ;;
    *) echo none ;;
  esac
}
if [ "$mode" = full ]; then
  for tr in shm tcp netns; do
    for c in "${colls[@]}"; do
      for f in kill stop strangers wrong_secret wrong_nranks wrong_nranks_id $(mismatches "$c"); do
        run_case $tr "$c" $f
      done
      [ $tr = netns ] || run_case $tr "$c" foreign
      [ $tr = netns ] && { run_case $tr "$c" cut; run_case $tr "$c" slow; }
    done
  done
else
  for c in "${colls[@]}"; do run_case shm "$c" kill; done
  for c in "${colls[@]}"; do run_case tcp "$c" kill; done
  run_case shm all_reduce stop
  run_case tcp alltoall stop
  run_case tcp all_reduce strangers
  run_case shm all_gather strangers
  run_case shm all_reduce foreign
  run_case tcp broadcast foreign
  run_case shm broadcast wrong_secret
  run_case tcp reduce wrong_nranks
  run_case tcp all_reduce wrong_nranks_id
  run_case shm all_reduce mismatch_count
  run_case tcp reduce_scatter mismatch_dtype
  run_case shm broadcast mismatch_dtype_same
  run_case tcp reduce mismatch_root
  run_case shm all_reduce mismatch_op
  run_case tcp alltoall mismatch_coll
  run_case shm sendrecv mismatch_peer
  run_case shm alltoallv mismatch_vcounts
  run_case tcp allgatherv mismatch_vcounts
  run_case netns all_reduce kill
  run_case netns sendrecv cut
  run_case netns all_reduce slow
  run_case netns reduce slow
  run_case netns alltoall strangers
fi
for why in "${!skip_reason[@]}"; do echo "skipped: $why"; done
echo "runs $runs, faults injected $injected, errors reported correctly $correct, hangs $hangs, wrong $wrongs (skipped $skips, mismatch undetected $undetected, slow-link timeouts $slow_timeouts)"
[ $hangs = 0 ] && [ $wrongs = 0 ]
