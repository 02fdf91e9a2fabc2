#!/bin/sh
# run_kill.sh TRAINER NRANKS VICTIM [ARGS...]: rank VICTIM of NRANKS SIGKILLs itself at step 5.
# Every other rank must exit by itself, within the time limit, with an error naming the dead
# rank; the trainer must exit non-zero. Skips (77) without Fashion-MNIST.
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: $data/train-images-idx3-ubyte.gz not found (apt-get install dataset-fashion-mnist)"
    exit 77
fi
trainer=$1 n=$2 victim=$3
shift 3
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s)
timeout 120 "$trainer" -N "$n" --limit 4096 --test-limit 500 --steps 50 -q \
    --debug-die-at "5:$victim" "$@" >"$out" 2>&1
rc=$?
took=$(( $(date +%s) - start ))
cat "$out"
fail=0
if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
    echo "FAIL: trainer exit $rc (expected a failure, not success or a hang)"
    fail=1
fi
r=0
while [ $r -lt "$n" ]; do
    if [ $r -ne "$victim" ]; then
        # e.g. "tutti-train: rank 0: gradient sync at step 5 failed: ERR_REMOTE: ... rank 2 (host
        # vm, pid 123) died"
        if ! grep -Eq "^tutti-train: rank $r: .*failed: .*rank $victim \(host [^,]*, pid [0-9]+\)" "$out"; then
            echo "FAIL: rank $r did not report the death of rank $victim"
            fail=1
        fi
    fi
    r=$((r + 1))
done
if grep -q "sent SIGTERM\|killed by signal 15" "$out"; then
    echo "FAIL: a surviving rank had to be killed"
    fail=1
fi
[ $fail -eq 0 ] && echo "PASS: every surviving rank named rank $victim and exited in ${took}s"
exit $fail
