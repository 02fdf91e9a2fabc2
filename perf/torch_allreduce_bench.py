#!/usr/bin/python3
"""torch_allreduce_bench.py - dist.all_reduce through torch.distributed with the "tutti"
backend (tutti.torch_backend) and with "gloo", in one run: latency and busbw per size.

    TUTTI_LIBRARY=build/libtutti.so PYTHON perf/torch_allreduce_bench.py \
        -N 2 --launches 5 -b 8 -e 64M -f 8 --out perf/results/NAME

A launch starts N fresh rank processes for one backend (FileStore rendezvous, float32 SUM, in
place); per size: warm-up calls, then timed calls (time.perf_counter around dist.all_reduce,
which waits) until at least --min-time seconds and --iters calls, the time per call averaged
over the calls (a number all ranks agree on, enough for --min-time) and then the largest over the
ranks (a collective ends when its slowest rank
does). Launches alternate tutti, gloo, tutti, gloo... so both see the same machine state;
the table gives each size's median over the launches. busbw = size / time x 2 (N - 1) / N
(nccl-tests' all-reduce bus factor). Every result is checked (exact small integers) after the
timing. Writes NAME.md (the table, the command, uptime before and after) and NAME.json.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src", "python"))


def parse_size(s):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    mult = units.get(s[-1:].lower(), 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def sizes(args):
    out, b = [], args.b
    while b <= args.e:
        out.append(b)
        b *= args.f
    return out


def join_group(args):
    """This rank (BENCH_RANK) of a launch of start_ranks joins args.backend's default group;
    returns (rank, size)."""
    import datetime
    import torch.distributed as dist
    if args.backend == "tutti":
        import tutti.torch_backend  # noqa: F401
    rank, n = int(os.environ["BENCH_RANK"]), args.N
    dist.init_process_group(args.backend, init_method=f"file://{args.store}", rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=300))
    return rank, n


def rank_main(args):
    """One rank of one launch: prints a JSON line {size: seconds per call} (rank 0 only)."""
    import torch
    import torch.distributed as dist
    rank, n = join_group(args)
    result = {}
    for size in sizes(args):
        count = max(1, size // 4)
        t = torch.ones(count, dtype=torch.float32)
        for _ in range(args.warmup):
            dist.all_reduce(t)
        # how many calls: enough for --min-time at the warm-up's pace, agreed by all ranks
        t0 = time.perf_counter()
        for _ in range(3):
            dist.all_reduce(t)
        guess = (time.perf_counter() - t0) / 3
        calls = torch.tensor([max(args.iters, min(100000, int(args.min_time / guess) + 1))])
        dist.all_reduce(calls, op=dist.ReduceOp.MAX)
        calls = int(calls.item())
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(calls):
            dist.all_reduce(t)
        per_call = (time.perf_counter() - t0) / calls
        worst = torch.tensor([per_call], dtype=torch.float64)
        dist.all_reduce(worst, op=dist.ReduceOp.MAX)
        t.fill_(rank + 1)
        dist.all_reduce(t)
        if not bool((t == n * (n + 1) / 2).all()):
            print(json.dumps({"error": f"wrong result at {size} bytes"}), flush=True)
            sys.exit(1)
        result[size] = worst.item()
    dist.destroy_process_group()
    if rank == 0:
        print(json.dumps(result), flush=True)


def start_ranks(script, backend, argv, n):
    """Run `script --rank-of BACKEND --store S ARGV` as n rank processes (BENCH_RANK set);
    the JSON object rank 0 prints last."""
    tmp = tempfile.mkdtemp(prefix="tutti-bench-")
    cmd = [sys.executable, os.path.abspath(script), "--rank-of", backend, "--store",
           os.path.join(tmp, "store")] + list(argv)
    env = dict(os.environ, GLOO_SOCKET_IFNAME=os.environ.get("GLOO_SOCKET_IFNAME", "lo"))
    procs = [subprocess.Popen(cmd, env=dict(env, BENCH_RANK=str(r)), stdout=subprocess.PIPE,
                              text=True) for r in range(n)]
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    if any(p.returncode != 0 for p in procs):
        sys.exit(f"{backend}: a rank failed: {[p.returncode for p in procs]} {outs}")
    return json.loads(outs[0].strip().splitlines()[-1])


def launch(args, backend):
    """Start N ranks of one backend; their result {size: seconds}."""
    out = start_ranks(__file__, backend, args.argv, args.N)
    return {int(k): v for k, v in out.items()}


def fmt_size(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return f"{b // div}{unit}"
    return str(b)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-N", type=int, default=2, help="ranks")
    ap.add_argument("-b", type=parse_size, default=8, help="smallest size in bytes")
    ap.add_argument("-e", type=parse_size, default=64 << 20, help="largest size in bytes")
    ap.add_argument("-f", type=int, default=8, help="size factor")
    ap.add_argument("--launches", type=int, default=5, help="launches per backend")
    ap.add_argument("--iters", type=int, default=20, help="least timed calls per size")
    ap.add_argument("--min-time", type=float, default=0.2, help="least timed seconds per size")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--out", help="write OUT.md and OUT.json")
    ap.add_argument("--rank-of", dest="backend", help=argparse.SUPPRESS)
    ap.add_argument("--store", help=argparse.SUPPRESS)
    args, _ = ap.parse_known_args()
    if args.backend:
        rank_main(args)
        return
    args.argv = [a for a in sys.argv[1:]]
    up0 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    runs = {"tutti": [], "gloo": []}
    for i in range(args.launches):
        for backend in ("tutti", "gloo"):
            runs[backend].append(launch(args, backend))
            print(f"launch {i + 1}/{args.launches} {backend} done", file=sys.stderr, flush=True)
    up1 = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    n = args.N
    bus = 2.0 * (n - 1) / n
    lines = [f"# dist.all_reduce, tutti vs gloo (torch {torch_version()}), {n} ranks, float32 "
             "sum in place", "",
             f"command: `TUTTI_LIBRARY=build/libtutti.so {sys.executable} "
             f"perf/torch_allreduce_bench.py {' '.join(args.argv)}`", "",
             f"load before: `{up0}`", f"load after: `{up1}`", "",
             f"medians over {args.launches} launches per backend, launched alternately", "",
             "| size | tutti time (us) | gloo time (us) | tutti busbw (GB/s) | gloo busbw (GB/s) "
             "| gloo time / tutti time |",
             "|---:|---:|---:|---:|---:|---:|"]
    table = []
    for size in sizes(args):
        t = statistics.median(r[size] for r in runs["tutti"])
        g = statistics.median(r[size] for r in runs["gloo"])
        table.append({"size": size, "tutti_us": t * 1e6, "gloo_us": g * 1e6,
                      "tutti_busbw": size / t * bus / 1e9, "gloo_busbw": size / g * bus / 1e9})
        lines.append(f"| {fmt_size(size)} | {t * 1e6:.1f} | {g * 1e6:.1f} | "
                     f"{size / t * bus / 1e9:.3f} | {size / g * bus / 1e9:.3f} | {g / t:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out + ".md", "w") as f:
            f.write(text)
        with open(args.out + ".json", "w") as f:
            json.dump({"argv": args.argv, "uptime_before": up0, "uptime_after": up1,
                       "launches": runs, "medians": table}, f, indent=1)


def torch_version():
    import torch
    return torch.__version__


if __name__ == "__main__":
    main()
