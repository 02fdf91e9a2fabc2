#!/bin/sh
# run_train.sh [--without-data] [--gpu] [--expect-fail PATTERN] TRAINER ARGS...: run tutti-train
# as a test. The data: $FASHION_MNIST_DIR (then passed as --data), else Debian's path. Skips
# (exit 77) when Fashion-MNIST is not there (dataset-fashion-mnist), unless --without-data (a run that must end before the data is read). --gpu: the run needs a GPU;
# skips, with the trainer's line, when it says there is none or it was built without CUDA,
# unless an NVIDIA driver is loaded and no GPU hidden (then a GPU CUDA cannot use fails).
# Plain: passes when the trainer exits 0. With --expect-fail: passes only when the trainer exits
# non-zero AND its output contains PATTERN (an extended regular expression), so a check that
# cannot fail, or that fails for another reason, does not pass.
data=${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}
need_data=1
gpu=0
pattern=
while :; do
    case "$1" in
    --without-data) need_data=0; shift ;;
    --gpu) gpu=1; shift ;;
    --expect-fail) pattern=$2; shift 2 ;;
    *) break ;;
    esac
done
if [ $need_data -eq 1 ] && [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: $data/train-images-idx3-ubyte.gz not found (apt-get install" \
        "dataset-fashion-mnist, or set FASHION_MNIST_DIR)"
    exit 77
fi
if [ $need_data -eq 1 ] && [ -n "${FASHION_MNIST_DIR:-}" ]; then
    set -- "$@" --data "$data"
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$@" >"$out" 2>&1
rc=$?
cat "$out"
# why a GPU run cannot happen here: not built, or (no NVIDIA driver loaded, or GPUs hidden) none
nogpu='^tutti-train: --device cuda: '
nogpu="$nogpu(tutti-train was built without CUDA|tutti-train.s GPU module was not built)"
if [ ! -r /proc/driver/nvidia/version ] || [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
    nogpu="$nogpu|^tutti-train: --device cuda: no usable CUDA device"
fi
if [ $gpu -eq 1 ] && [ $rc -ne 0 ] && grep -Eq "$nogpu" "$out"; then
    echo "SKIP: $(grep -E "$nogpu" "$out" | head -1)"
    exit 77
fi
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
