#!/bin/sh
# run_launcher.sh TRAINER NRANKS ARGS...: start NRANKS tutti-train processes the way a launcher
# does (TUTTI_RANK, TUTTI_NRANKS, TUTTI_ROOT, TUTTI_SECRET; no -N) and require all to exit 0.
# Skips (77) without Fashion-MNIST.
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: $data/train-images-idx3-ubyte.gz not found (apt-get install dataset-fashion-mnist)"
    exit 77
fi
trainer=$1 n=$2
shift 2
secret=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \n')
port=$((20000 + $$ % 20000))
pids=
r=0
while [ $r -lt "$n" ]; do
    TUTTI_RANK=$r TUTTI_NRANKS=$n TUTTI_ROOT=127.0.0.1:$port TUTTI_SECRET=$secret \
        timeout 120 "$trainer" "$@" &
    pids="$pids $!"
    r=$((r + 1))
done
fail=0
for p in $pids; do
    wait "$p" || fail=1
done
[ $fail -eq 0 ] && echo "PASS: $n launched ranks"
exit $fail
