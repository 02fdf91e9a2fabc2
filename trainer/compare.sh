#!/usr/bin/env bash
# compare.sh [BUILD_DIR]: tutti-train against PyTorch DistributedDataParallel on Gloo
# (trainer/ddp_gloo.py: the same model, initial weights, data order, shards and
# hyper-parameters) at 1, 2 and 4 ranks on this machine. The two are launched alternately, the
# order flipping every round, LAUNCHES rounds; the table of medians goes to
# perf/results/<date>-vm-trainer.md, every run's JSON to the .json beside it.
# Environment: LAUNCHES (3), RANKS ("1 2 4"), EPOCHS (3), BATCH (128), LIMIT (0: all samples),
# OUT (the markdown path); OPENBLAS_DIR: a directory holding an optimised libblas.so.3: DDP then
# also runs with it first on LD_LIBRARY_PATH (and OPENBLAS_NUM_THREADS=1), as a third column.
# Debian's torch calls the system libblas.so.3, the reference BLAS unless an optimised one is
# installed; without installing one system-wide:
#   apt-get download libopenblas0-pthread && dpkg -x libopenblas0-pthread_*.deb /tmp/ob
#   OPENBLAS_DIR=/tmp/ob/usr/lib/x86_64-linux-gnu/openblas-pthread trainer/compare.sh
# DDP_DEFAULT_BLAS=0 leaves out the run with the system BLAS (it is slow: ~2.6 GFLOP/s).
# Needs python3-torch for /usr/bin/python3.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
launches=${LAUNCHES:-3}
ranks=${RANKS:-1 2 4}
epochs=${EPOCHS:-3}
batch=${BATCH:-128}
limit=${LIMIT:-0}
out=${OUT:-perf/results/$(date +%Y-%m-%d)-vm-trainer.md}
tool=$build/trainer/tutti-train
py=/usr/bin/python3
if [ ! -x "$tool" ]; then
    echo "compare.sh: $tool not found: build first (meson setup $build && ninja -C $build)" >&2
    exit 1
fi
if ! "$py" -c 'import torch' 2>/dev/null; then
    echo "compare.sh: $py cannot import torch (apt-get install python3-torch)" >&2
    exit 1
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(-e "$epochs" -b "$batch")
tutti_extra=() ddp_extra=()
if [ "$limit" -gt 0 ]; then
    tutti_extra=(--limit "$limit")
    ddp_extra=(--limit "$limit")
fi
run_tutti() { # ranks launch
    echo "== tutti-train -N $1 ${common[*]} ${tutti_extra[*]} (launch $2)"
    "$tool" -N "$1" "${common[@]}" "${tutti_extra[@]}" -q --json "$tmp/tutti-$1-$2.json" \
        | tail -n 2
}
run_ddp() {
    if [ "${DDP_DEFAULT_BLAS:-1}" != 0 ]; then
        echo "== ddp_gloo.py -N $1 ${common[*]} ${ddp_extra[*]} (launch $2)"
        "$py" trainer/ddp_gloo.py -N "$1" "${common[@]}" "${ddp_extra[@]}" \
            --json "$tmp/ddp-$1-$2.json" | tail -n 1
    fi
    if [ -n "${OPENBLAS_DIR:-}" ]; then
        echo "== LD_LIBRARY_PATH=$OPENBLAS_DIR ddp_gloo.py -N $1 ${common[*]} (launch $2)"
        LD_LIBRARY_PATH=$OPENBLAS_DIR OPENBLAS_NUM_THREADS=1 "$py" trainer/ddp_gloo.py -N "$1" \
            "${common[@]}" "${ddp_extra[@]}" --json "$tmp/ddpob-$1-$2.json" | tail -n 1
    fi
}
for l in $(seq 1 "$launches"); do
    for n in $ranks; do
        if [ $((l % 2)) -eq 1 ]; then
            run_tutti "$n" "$l"
            run_ddp "$n" "$l"
        else
            run_ddp "$n" "$l"
            run_tutti "$n" "$l"
        fi
    done
done
mkdir -p "$(dirname "$out")"
cmd="LAUNCHES=$launches RANKS=\"$ranks\" EPOCHS=$epochs BATCH=$batch LIMIT=$limit"
cmd="$cmd${OPENBLAS_DIR:+ OPENBLAS_DIR=$OPENBLAS_DIR}"
cmd="$cmd${DDP_DEFAULT_BLAS:+ DDP_DEFAULT_BLAS=$DDP_DEFAULT_BLAS} trainer/compare.sh"
python3 trainer/compare_table.py "$tmp" "$out" "$cmd"
echo "compare.sh: wrote $out and ${out%.md}.json"
