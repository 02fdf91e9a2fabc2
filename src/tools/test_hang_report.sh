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

# A mismatch: rank 0 found rank 1's broadcast data in its all-reduce; both failed with
# ERR_MISMATCH. The report names both calls before the table.
cat > "$d/m0.log" <<'LOG'
h:21:21 [0] WARN tutti: mismatch rank=0 nranks=2 comm=00000000000000bb peer=1 mine=allreduce#2:1000xint32:sum theirs=broadcast#1:1000xint32:root=1 leftover=1
h:21:21 [0] WARN tutti: hang rank=0 nranks=2 comm=00000000000000bb pid=21 status=ERR_MISMATCH coll=allreduce seq=2 seq_posted=2 seq_done=1 waiting_on=1 step=1/2 channel=0
LOG
cat > "$d/m1.log" <<'LOG'
h:22:22 [1] WARN tutti: hang rank=1 nranks=2 comm=00000000000000bb pid=22 status=ERR_MISMATCH coll=allreduce seq=2 seq_posted=2 seq_done=1 waiting_on=0 step=1/2 channel=0
LOG
out=$("$info" --hang "$d/m0.log" "$d/m1.log")
echo "$out"
echo "$out" | grep -q "^communicator 00000000000000bb: mismatched calls: rank 0's allreduce#2:1000xint32:sum received leftover data of rank 1's broadcast#1:1000xint32:root=1$"
echo "$out" | grep -q 'rank 1: allreduce #2 ERR_MISMATCH'
