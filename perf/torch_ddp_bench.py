#!/usr/bin/python3
"""torch_ddp_bench.py - DistributedDataParallel on the CPU with the "tutti" backend and with
"gloo", in one run: the communication time per training step of a ~25M-parameter transformer.

    TUTTI_LIBRARY=build/libtutti.so PYTHON perf/torch_ddp_bench.py -N 2 --launches 5 \\
        --out perf/results/NAME

The model: nn.TransformerEncoder, 8 layers, d_model 512, 8 heads, feed-forward 2048 (25.2M
parameters, 101 MB of float32 gradients in DDP's default 25 MB buckets); a batch of 4 x 32
tokens per rank; SGD. One compute thread per rank (torch.set_num_threads(1), as torchrun's OMP_NUM_THREADS=1). Per
step (medians over the timed steps, then over launches; each the slowest rank's):
- alone: the step's buckets (their sizes as DDP made them) all-reduced back to back after a
  barrier, nothing else running: what the communication of one step costs;
- exposed: step - compute, the communication the step waits for;
- busy: the union over the step's buckets of [bucket handed to the backend, its all-reduce
  done] (a comm hook that all-reduces as DDP's default does), overlapped with the backward
  pass, waits for the slower rank included;
- step: forward + backward + SGD with DDP; compute: the same with a hook that communicates
  nothing.
Launches alternate tutti, gloo, ... Writes NAME.md and NAME.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "src", "python"))
from torch_allreduce_bench import join_group, start_ranks  # noqa: E402


KEYS = ("alone", "exposed", "busy", "step", "compute")
ROWS = {"alone": "the step's gradient buckets all-reduced back to back, nothing else running",
        "exposed": "communication the step waits for (step - compute-only step)",
        "busy": "all-reduces in flight during the step (bucket ready to reduced)",
        "step": "training step (forward, backward, SGD) with DDP",
        "compute": "the same step with communication switched off"}


def _union(spans):
    total, end = 0.0, None
    for a, b in sorted(spans):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def rank_main(args):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    rank, n = join_group(args)
    torch.set_num_threads(1)  # one compute thread per rank, as torchrun sets OMP_NUM_THREADS
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True)
    model = DDP(nn.TransformerEncoder(layer, 8, enable_nested_tensor=False))
    spans, sizes, comm_on = [], {}, [True]

    def hook(state, bucket):
        buf = bucket.buffer()
        sizes[bucket.index()] = buf.numel()  # the buckets as DDP rebuilt them after step 1
        if not comm_on[0]:  # the compute-only steps: no communication at all
            fut = torch.futures.Future()
            fut.set_result(buf)
            return fut
        t0 = time.perf_counter()
        fut = dist.all_reduce(buf, async_op=True).get_future()

        def done(f):
            spans.append((t0, time.perf_counter()))
            return f.value()[0].div_(n)
        return fut.then(done)
    model.register_comm_hook(None, hook)
    opt = torch.optim.SGD(model.parameters(), lr=1e-4)
    x = torch.randn(4, 32, 512, generator=torch.Generator().manual_seed(rank))

    def steps(on):
        comm_on[0] = on
        busy, wall = [], []
        for i in range(args.warmup + args.steps):
            spans.clear()
            dist.barrier()
            t0 = time.perf_counter()
            opt.zero_grad()
            model(x).square().mean().backward()
            opt.step()
            t1 = time.perf_counter()
            if i >= args.warmup:
                busy.append(_union(spans))
                wall.append(t1 - t0)
        return statistics.median(busy), statistics.median(wall)
    busy, step = steps(True)
    _, compute = steps(False)
    # the step's buckets all-reduced back to back with nothing else running
    bufs = [torch.ones(sizes[i]) for i in sorted(sizes)]
    alone = []
    for i in range(args.warmup + args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        for w in [dist.all_reduce(b, async_op=True) for b in bufs]:
            w.wait()
        if i >= args.warmup:
            alone.append(time.perf_counter() - t0)
    med = torch.tensor([statistics.median(alone), step - compute, busy, step, compute],
                       dtype=torch.float64)
    dist.all_reduce(med, op=dist.ReduceOp.MAX)  # the slowest rank's
    params = sum(p.numel() for p in model.parameters())
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(dict(zip(KEYS, med.tolist()), params=params,
                               buckets=[sizes[i] for i in sorted(sizes)])),
              flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-N", type=int, default=2, help="ranks")
    ap.add_argument("--launches", type=int, default=5, help="launches per backend")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per launch")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--out", help="write OUT.md and OUT.json")
    ap.add_argument("--rank-of", dest="backend", help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()
    if args.backend:
        rank_main(args)
        return
    argv = sys.argv[1:]
    up0 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    runs = {"tutti": [], "gloo": []}
    for i in range(args.launches):
        for backend in ("tutti", "gloo"):
            runs[backend].append(start_ranks(__file__, backend, argv, args.N))
            print(f"launch {i + 1}/{args.launches} {backend} done", file=sys.stderr, flush=True)
    up1 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    import torch
    med = {b: {k: statistics.median(r[k] for r in runs[b]) for k in KEYS} for b in runs}
    params = runs["tutti"][0]["params"]
    lines = [f"# DDP on the CPU, tutti vs gloo (torch {torch.__version__}), {args.N} ranks, "
             f"a {params / 1e6:.1f}M-parameter transformer", "",
             f"command: `TUTTI_LIBRARY=build/libtutti.so {sys.executable} "
             f"perf/torch_ddp_bench.py {' '.join(argv)}`", "",
             f"load before: `{up0}`", f"load after: `{up1}`", "",
             f"medians over {args.steps} steps, then over {args.launches} launches per backend "
             "(alternating)", "",
             "| | tutti (ms) | gloo (ms) | gloo / tutti |", "|---|---:|---:|---:|"]
    for k, what in ROWS.items():
        t, g = med["tutti"][k] * 1e3, med["gloo"][k] * 1e3
        lines.append(f"| {what} | {t:.1f} | {g:.1f} | {g / t:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out + ".md", "w") as f:
            f.write(text)
        with open(args.out + ".json", "w") as f:
            json.dump({"argv": argv, "uptime_before": up0, "uptime_after": up1, "runs": runs,
                       "medians": med}, f, indent=1)


if __name__ == "__main__":
    main()
