#!/usr/bin/python3
"""ddp_gloo.py - the tutti-train model, data and schedule in PyTorch DistributedDataParallel
over the Gloo backend, for the side-by-side benchmark (trainer/compare.sh).

The same as tutti-train by construction, not only in kind:
  - the MLP 784-512-256-10 (ReLU, softmax cross-entropy), SGD with momentum, same lr/batch/epochs
    and the same learning-rate schedule, set before every step (lr_at, as train_lr_at in C);
  - the same initial weights: tutti-train's splitmix64 stream of the seed, drawn in its order
    (each layer's W as in x out, then b), uniform in +-1/sqrt(in) as nn.Linear's own init;
  - the same data: Fashion-MNIST read from the IDX gz files here (pixel / 255), the same epoch
    order (splitmix64 Fisher-Yates), rank r taking samples [r*B/N, (r+1)*B/N) of each global
    batch, the last partial batch included;
  - the gradient: the sum of per-sample losses / global batch, times N because DDP averages.
One thread per rank (torch.set_num_threads(1)), as each tutti-train rank is single-threaded, and
ranks pinned to CPUs the way tutti-train pins them.
Usage: ddp_gloo.py [-N RANKS] [-e EPOCHS] [-b BATCH] [--lr X] [--lr-schedule S] [--momentum X]
                   [--seed N] [--data DIR] [--limit N] [--bind core|none] [--json FILE]
Needs Debian's python3-torch (1.13) and python3-numpy; run it with /usr/bin/python3.
"""
import argparse
import gzip
import json
import math
import os
import socket
import struct
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

M64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def read_idx(path, ndims):
    """An IDX file of unsigned bytes (gzip), checked like tutti-train's reader."""
    try:
        with gzip.open(path, "rb") as f:
            raw = f.read()
    except OSError as e:
        sys.exit(f"ddp_gloo.py: {path}: {e}")
    if len(raw) < 4 + 4 * ndims or raw[0:3] != b"\x00\x00\x08" or raw[3] != ndims:
        sys.exit(f"ddp_gloo.py: {path}: not an IDX file of unsigned bytes with {ndims} dims")
    dims = struct.unpack(">" + "I" * ndims, raw[4:4 + 4 * ndims])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndims)
    if data.size != int(np.prod(dims)):
        sys.exit(f"ddp_gloo.py: {path}: {data.size} data bytes, the header says {np.prod(dims)}")
    return data.reshape(dims)


def load(data_dir, prefix):
    x = read_idx(f"{data_dir}/{prefix}-images-idx3-ubyte.gz", 3)
    y = read_idx(f"{data_dir}/{prefix}-labels-idx1-ubyte.gz", 1)
    if len(x) != len(y):
        sys.exit(f"ddp_gloo.py: {prefix}: {len(x)} images but {len(y)} labels")
    x = torch.from_numpy(x.reshape(len(x), -1).astype(np.float32) * np.float32(1.0 / 255.0))
    return x, torch.from_numpy(y.astype(np.int64))


def splitmix64_stream(seed, n):
    """The first n values of splitmix64 from state `seed` (vectorised, wrapping uint64)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.uint64(GOLDEN) * np.arange(1, n + 1, dtype=np.uint64)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def shuffle(seed, epoch, n):
    """tutti-train's train_shuffle(): Fisher-Yates driven by splitmix64."""
    state = (seed ^ (0xD1B54A32D192ED03 * (epoch + 1))) & M64
    perm = list(range(n))
    for i in range(n, 1, -1):
        state = (state + GOLDEN) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        z ^= z >> 31
        j = (z * i) >> 64
        perm[i - 1], perm[j] = perm[j], perm[i - 1]
    return torch.tensor(perm, dtype=torch.int64)


def make_model(sizes, seed):
    """nn.Linear layers holding tutti-train's initial weights for this seed."""
    layers = []
    nparams = sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:]))
    u = (splitmix64_stream(seed, nparams) >> np.uint64(40)).astype(np.float32) * np.float32(2.0**-24)
    at = 0
    for i, o in zip(sizes[:-1], sizes[1:]):
        bound = np.float32(1.0 / np.sqrt(float(i)))
        vals = (np.float32(2.0) * u[at:at + i * o + o] - np.float32(1.0)) * bound
        lin = nn.Linear(i, o)
        with torch.no_grad():
            lin.weight.copy_(torch.from_numpy(vals[:i * o].reshape(i, o).T.copy()))
            lin.bias.copy_(torch.from_numpy(vals[i * o:].copy()))
        layers += [lin, nn.ReLU()]
        at += i * o + o
    return nn.Sequential(*layers[:-1])


def evaluate(model, x, y, rank, nranks):
    lo, hi = len(x) * rank // nranks, len(x) * (rank + 1) // nranks
    with torch.no_grad():
        logits = model(x[lo:hi])
        sums = torch.tensor([float((logits.argmax(1) == y[lo:hi]).sum()),
                             float(nn.functional.cross_entropy(logits, y[lo:hi], reduction="sum"))],
                            dtype=torch.float64)
    dist.all_reduce(sums)
    return sums[0].item() / len(x), sums[1].item() / len(x)


def bind(rank, nranks):
    """Pin rank r to the r-th allowed CPU when every rank gets its own (tutti-train --bind core)."""
    cpus = sorted(os.sched_getaffinity(0))
    if nranks <= len(cpus):
        os.sched_setaffinity(0, {cpus[rank]})


def lr_at(schedule, lr, k, total):
    """tutti-train's train_lr_at: the rate of step k (0-based) of total, rounded to float32."""
    f = 1.0
    if total > 0 and schedule == "cosine":
        f = 0.5 * (1.0 + math.cos(math.pi * k / total))
    elif total > 0 and schedule == "step":
        f = 0.01 if 4 * k >= 3 * total else 0.1 if 2 * k >= total else 1.0
    return float(np.float32(float(np.float32(lr)) * f))


def run_rank(rank, args, port):
    if args.bind == "core":
        bind(rank, args.nranks)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=args.nranks)
    n = args.nranks
    xtr, ytr = load(args.data, "train")
    xte, yte = load(args.data, "t10k")
    if args.limit:
        xtr, ytr = xtr[:args.limit], ytr[:args.limit]
    sizes = [xtr.shape[1], 512, 256, 10]
    model = DDP(make_model(sizes, args.seed), bucket_cap_mb=args.bucket_kb / 1024)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    B = args.batch
    steps_per_epoch = (len(xtr) + B - 1) // B
    total = steps_per_epoch * args.epochs
    epochs, step_s, steps = [], 0.0, 0
    for ep in range(args.epochs):
        perm = shuffle(args.seed, ep, len(xtr))  # not timed: C draws it in about a millisecond
        dist.barrier()
        t0 = time.perf_counter()
        loss_sum = 0.0
        for s in range(steps_per_epoch):
            first = s * B
            b = min(B, len(xtr) - first)
            lo, hi = first + b * rank // n, first + b * (rank + 1) // n
            idx = perm[lo:hi]
            for g in opt.param_groups:
                g["lr"] = lr_at(args.lr_schedule, args.lr, steps, total)
            ts = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            out = model(xtr[idx])
            loss = nn.functional.cross_entropy(out, ytr[idx], reduction="sum")
            (loss * (n / b)).backward()  # DDP divides by n: the sum over the batch / b
            opt.step()
            step_s += time.perf_counter() - ts
            steps += 1
            loss_sum += loss.item()
        t_epoch = time.perf_counter() - t0
        tot = torch.tensor([loss_sum], dtype=torch.float64)
        dist.all_reduce(tot)
        acc, test_loss = evaluate(model, xte, yte, rank, n)
        epochs.append({"epoch": ep + 1, "time_s": t_epoch, "train_loss": tot.item() / len(xtr),
                       "test_accuracy": acc, "test_loss": test_loss})
        if rank == 0:
            print(f"epoch {ep + 1}: test accuracy {100 * acc:.2f}%, test loss {test_loss:.4f}, "
                  f"train loss {tot.item() / len(xtr):.4f}, {t_epoch:.2f} s", flush=True)
    t = torch.tensor([step_s], dtype=torch.float64)
    dist.all_reduce(t)
    if rank == 0:
        summary = {"tool": "ddp_gloo", "torch_version": torch.__version__,
                   "blas": blas_libraries(),
                   "config": {"nranks": n, "global_batch": B, "epochs": args.epochs, "lr": args.lr,
                              "lr_schedule": args.lr_schedule,
                              "momentum": args.momentum, "seed": args.seed,
                              "bucket_kb": args.bucket_kb},
                   "epochs": epochs,
                   "summary": {"steps": steps, "step_ms": 1e3 * t.item() / n / max(steps, 1),
                               "epoch_s": sum(e["time_s"] for e in epochs) / len(epochs),
                               "final_test_accuracy": epochs[-1]["test_accuracy"]}}
        print(f"summary: {steps} steps, step {summary['summary']['step_ms']:.2f} ms, "
              f"{summary['summary']['epoch_s']:.2f} s per epoch, final test accuracy "
              f"{100 * epochs[-1]['test_accuracy']:.2f}%", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(summary, f, indent=1)
    dist.destroy_process_group()


def blas_libraries():
    """The BLAS libraries this process has mapped (Debian's torch calls the system libblas.so.3:
    the reference BLAS unless an optimised one is installed or put first on LD_LIBRARY_PATH)."""
    torch.ones(2, 2) @ torch.ones(2, 2)
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in os.path.basename(path):
                libs.add(os.path.realpath(path))
    return sorted(libs)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("-N", "--nranks", type=int, default=1)
    p.add_argument("-e", "--epochs", type=int, default=3)
    p.add_argument("-b", "--batch", type=int, default=128)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--lr-schedule", choices=["cosine", "step", "none"], default="cosine")
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("-s", "--seed", type=int, default=1)
    p.add_argument("--bucket-kb", type=int, default=1024)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    p.add_argument("--limit", type=int, default=0, help="train on the first N samples only")
    p.add_argument("--bind", choices=["core", "none"], default="core",
                   help="pin rank r to the r-th allowed CPU when the ranks fit (as tutti-train)")
    p.add_argument("--json")
    args = p.parse_args()
    print(f"ddp_gloo.py: {args.nranks} ranks, torch {torch.__version__} (gloo), MLP 784-512-256-10, "
          f"batch {args.batch}, lr {args.lr} ({args.lr_schedule}), momentum {args.momentum}, {args.epochs} epochs, "
          f"seed {args.seed}", flush=True)
    mp.spawn(run_rank, args=(args, free_port()), nprocs=args.nranks, join=True)


if __name__ == "__main__":
    main()
