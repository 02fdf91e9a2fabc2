#!/bin/sh
# test_compare.sh BUILD_DIR: compare.sh's smallest run (2 ranks, 1024 samples, 1 epoch, 1 launch)
# so that the benchmark scripts cannot rot, and a check that ddp_gloo.py really trains the same
# thing: from the same weights over the same batches, PyTorch DDP and tutti-train must end at the
# same test accuracy (to 0.5%) and nearly the same loss. Skips (77) without Fashion-MNIST or
# without python3-torch (scripts/install-deps.sh installs it; a machine without it skips).
data=/usr/share/datasets/fashion-mnist
if [ ! -r "$data/train-images-idx3-ubyte.gz" ]; then
    echo "SKIP: $data not installed (apt-get install dataset-fashion-mnist)"
    exit 77
fi
if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then
    echo "SKIP: /usr/bin/python3 cannot import torch (apt-get install python3-torch)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")" && pwd)
LIMIT=1024 EPOCHS=1 RANKS=2 LAUNCHES=1 OUT=$tmp/cmp.md "$here/../compare.sh" "$1" || exit 1
cat "$tmp/cmp.md"
python3 - "$tmp/cmp.json" <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))
t, d = runs["tutti-2"][0], runs["ddp-2"][0]
ta, da = t["summary"]["final_test_accuracy"], d["summary"]["final_test_accuracy"]
tl, dl = t["epochs"][0]["train_loss"], d["epochs"][0]["train_loss"]
print(f"final accuracy: tutti {ta:.4f}, DDP {da:.4f}; train loss: tutti {tl:.5f}, DDP {dl:.5f}")
ok = abs(ta - da) <= 0.005 and abs(tl - dl) <= 1e-3 * abs(dl)
print("PASS" if ok else "FAIL: the two trainers diverged")
sys.exit(0 if ok else 1)
PY
