#!/usr/bin/env bash
# Fault-tolerant training under torchft (tests/python/torchft_train.py) on BACKEND (tutti:
# tutti.torchft_pg.ProcessGroupTutti; gloo: torchft's ProcessGroupGloo): a lighthouse, two
# one-process replicas; replica 1 kills itself (SIGKILL) in the middle of step KILL_AT, is
# started again, fetches the live replica's state and trains on. Passes when replica 0 trained
# every step, went from 2 participants to 1 (the kill) and back to 2 (the rejoin), and the
# restarted replica 1 finished too, all within the time limit (nothing hangs).
#   test_torchft.sh PYTHON BACKEND
set -u
py=$1
backend=$2
steps=${STEPS:-60}
kill_at=${KILL_AT:-10}
here=$(cd "$(dirname "$0")" && pwd)
lighthouse=$(dirname "$py")/torchft_lighthouse
if ! "$py" -c 'import torchft' 2>/dev/null || [ ! -x "$lighthouse" ]; then
  echo "SKIP: $py has no torchft (bash scripts/torch-venv.sh installs torchft 0.2.0)"
  exit 77
fi
work=$(mktemp -d)
pids=()
trap 'kill "${pids[@]}" 2>/dev/null; rm -rf "$work"' EXIT
port() { "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
lh=$(port)
"$lighthouse" --min_replicas 1 --quorum_tick_ms 100 --join_timeout_ms 1000 \
  --heartbeat_timeout_ms 2000 --bind "127.0.0.1:$lh" >"$work/lighthouse.log" 2>&1 &
pids+=($!)
export TORCHFT_LIGHTHOUSE=http://127.0.0.1:$lh
p0=$(port)
p1=$(port)
replica() {  # replica() ID PORT LOG [KILL_AT]
  MASTER_PORT=$2 timeout 300 "$py" -W ignore "$here/torchft_train.py" "$backend" "$1" "$steps" \
    ${4:-} >"$3" 2>&1
}
start=$SECONDS
replica 0 "$p0" "$work/r0.log" &
r0=$!
pids+=($r0)
replica 1 "$p1" "$work/r1.log" "$kill_at"
echo "replica 1 ended (exit $?) after $((SECONDS - start)) s: $(grep 'killing' "$work/r1.log")"
replica 1 "$p1" "$work/r1b.log" &
r1=$!
pids+=($r1)
wait "$r0"
rc0=$?
wait "$r1"
rc1=$?
echo "== $backend: replica 0 (exit $rc0), replica 1 restarted (exit $rc1), $((SECONDS - start)) s"
grep -E "^replica" "$work/r0.log" | sed 's/^/  r0: /'
grep -E "^replica" "$work/r1b.log" | sed 's/^/  r1 again: /' | head -5
fails=0
expect() {  # expect DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
parts() { sed -n 's/^replica 0 step [0-9]* loss [0-9.]* participants \([0-9]*\) committed$/\1/p' "$work/r0.log" | uniq | tr '\n' ' '; }
expect "replica 0 trained all $steps steps" grep -q "replica 0: done at step $steps" "$work/r0.log"
expect "replica 1 started again and finished" grep -q "replica 1: done at step $steps" "$work/r1b.log"
expect "replica 0's quorum went 2 -> 1 -> 2 participants (saw: $(parts))" \
  grep -q "2 1 2" <<<"$(parts)"
if [ "$fails" -gt 0 ]; then
  for f in r0 r1 r1b; do echo "--- $f.log"; grep -v gpuGetDevice "$work/$f.log" | tail -25; done
fi
[ -n "${TORCHFT_LOGS:-}" ] && mkdir -p "$TORCHFT_LOGS" && cp "$work"/*.log "$TORCHFT_LOGS"/
echo "Synthesis: Tested: 3 | Passing: $((3 - fails)) | Failing: $fails | Crashing: 0"
[ "$fails" -eq 0 ]
