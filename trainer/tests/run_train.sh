#!/bin/sh
# run_train.sh [--expect-fail PATTERN] TRAINER ARGS...: run tutti-train as a test.
# Skips (exit 77) when Fashion-MNIST is not installed (dataset-fashion-mnist). Plain: passes when
# the trainer exits 0. With --expect-fail: passes only when the trainer exits non-zero AND its
# output contains PATTERN (an extended regular expression), so a check that cannot fail, or that
# fails for another reason, does not pass.
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: $data/train-images-idx3-ubyte.gz not found (apt-get install dataset-fashion-mnist)"
    exit 77
fi
pattern=
if [ "$1" = "--expect-fail" ]; then
    pattern=$2
    shift 2
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
if [ -z "$pattern" ]; then
    exit $rc
fi
if [ $rc -eq 0 ]; then
    echo "FAIL: expected a non-zero exit"
    exit 1
fi
if ! grep -Eq -- "$pattern" "$out"; then
    echo "FAIL: exit $rc, but the output lacks: $pattern"
    exit 1
fi
echo "PASS: exit $rc with: $pattern"
