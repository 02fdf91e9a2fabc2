#!/bin/sh
# tutti-info --hang on hand-written records: the rank without a record is behind, and the
# wait-for chain from the rank that timed out ends at it.
set -eu
info="$1"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
cat > "$d/r0.log" <<'LOG'
h:11:11 [0] WARN TUTTI_ERR_TIMEOUT: allreduce #3: rank 0 was waiting on ...
h:11:11 [0] WARN tutti: hang rank=0 nranks=3 comm=00000000000000aa pid=11 status=ERR_TIMEOUT coll=allreduce seq=3 seq_posted=3 seq_done=2 waiting_on=2 step=4/4 channel=0
LOG
cat > "$d/r2.log" <<'LOG'
h:13:13 [2] WARN tutti: hang rank=2 nranks=3 comm=00000000000000aa pid=13 status=ERR_REMOTE coll=allreduce seq=3 seq_posted=3 seq_done=2 waiting_on=1 step=1/4 channel=0
LOG
out=$("$info" --hang "$d/r0.log" "$d/r2.log")
echo "$out"
echo "$out" | grep -q '^behind: 1$'
echo "$out" | grep -q '^wait-for chain: 0 -> 2 -> 1$'
echo "$out" | grep -q 'rank 1: no record'
