#!/usr/bin/env bash
# Run docs/example.c (the README example) as N local processes configured the way a user
# would: TUTTI_RANK, TUTTI_NRANKS, TUTTI_ROOT and a fresh TUTTI_SECRET. Fails if any rank fails.
set -u
prog="$1"
n="${2:-3}"
port=$(( 20000 + RANDOM % 20000 ))
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
pids=()
for r in $(seq 0 $((n - 1))); do
  TUTTI_RANK=$r TUTTI_NRANKS=$n TUTTI_ROOT=127.0.0.1:$port TUTTI_SECRET=$secret TUTTI_TIMEOUT=30s \
    "$prog" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
