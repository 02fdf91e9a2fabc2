"""PyTorch on tutti through the NCCL shim (scripts/gpu_check.sh runs it, LD_PRELOAD=libnccl.so.2).

    torch_shim.py MODE RANK NRANKS STORE      (MODE: allreduce, ddp or gloo)

allreduce: collectives of CUDA tensors on cuda:0 (every rank shares the one GPU, which NCCL
refuses and tutti allows) with backend "nccl", each result checked exactly: all_reduce SUM
(float32, int32), AVG (bfloat16), MAX (float16) in sizes from 1 element to 16 Mi + 3, broadcast,
all_gather_into_tensor and reduce_scatter_tensor; then NCCL's symbols must resolve to the shim
(a second libnccl that PyTorch maps by path is allowed: it is never called). ddp / gloo: five
DistributedDataParallel steps of a small MLP on cuda:0 over the shim, or on the CPU over gloo,
from the same seed and data; rank 0 saves the final weights to $WEIGHTS for the comparison. Without a GPU it says "no GPU: ..." and exits 1.
"""
import datetime
import os
import sys

import torch
import torch.distributed as dist


def check_mapped(shim):
    """The shim is mapped and answers for NCCL's symbols in the global scope. PyTorch 2.11 maps
    its wheel's libnccl.so.2 by path as well (torch/__init__.py loads it), but a preloaded
    library comes first in every lookup, so that copy is mapped and never called; dladdr on the
    address the global scope gives for ncclAllReduce names the library that runs."""
    import ctypes

    class DlInfo(ctypes.Structure):
        _fields_ = [("fname", ctypes.c_char_p), ("fbase", ctypes.c_void_p),
                    ("sname", ctypes.c_char_p), ("saddr", ctypes.c_void_p)]

    maps = open("/proc/self/maps").read()
    libs = {line.split()[-1] for line in maps.splitlines() if "libnccl" in line}
    real = os.path.realpath(shim)
    assert any(os.path.realpath(p) == real for p in libs), f"the shim is not mapped: {libs}"
    libc = ctypes.CDLL(None)
    for sym in ("ncclAllReduce", "ncclCommInitRankConfig", "ncclGroupEnd"):
        addr = ctypes.cast(getattr(libc, sym), ctypes.c_void_p).value
        info = DlInfo()
        assert libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)), f"dladdr({sym}) failed"
        where = os.path.realpath(info.fname.decode())
        assert where == real, f"{sym} resolves to {where}, not the shim {real}"
    others = sorted(p for p in libs if os.path.realpath(p) != real)
    print(f"rank {dist.get_rank()}: NCCL symbols resolve to the shim" +
          (f"; also mapped, not called: {others}" if others else ""), flush=True)


def collectives(rank, n, dev):
    total = n * (n + 1) // 2
    for count in (1, 1000, 1 << 20, (1 << 24) + 3):
        t = torch.full((count,), float(rank + 1), device=dev)
        dist.all_reduce(t)
        assert (t == total).all().item(), ("sum float32", count, t[:4])
        t = torch.full((count,), rank + 1, device=dev, dtype=torch.int32)
        dist.all_reduce(t)
        assert (t == total).all().item(), ("sum int32", count, t[:4])
        t = torch.full((count,), float(2 * rank + 1), device=dev, dtype=torch.bfloat16)
        dist.all_reduce(t, op=dist.ReduceOp.AVG)
        assert (t == n).all().item(), ("avg bfloat16", count, t[:4])
        t = torch.full((count,), float(rank), device=dev, dtype=torch.float16)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        assert (t == n - 1).all().item(), ("max float16", count, t[:4])
        b = torch.arange(count, device=dev, dtype=torch.float32) * (rank + 1)
        dist.broadcast(b, src=n - 1)
        assert torch.equal(b, torch.arange(count, device=dev, dtype=torch.float32) * n)
        g = torch.empty(count * n, device=dev)
        dist.all_gather_into_tensor(g, torch.full((count,), float(rank), device=dev))
        want = torch.arange(n, device=dev, dtype=torch.float32).repeat_interleave(count)
        assert torch.equal(g, want), ("all_gather", count)
        out = torch.empty(count, device=dev)
        dist.reduce_scatter_tensor(out, torch.full((count * n,), float(rank + 1), device=dev))
        assert (out == total).all().item(), ("reduce_scatter", count, out[:4])
    torch.cuda.synchronize()


def ddp(rank, dev):
    torch.manual_seed(7)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)).to(dev)
    net = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(net.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(100 + rank)
    for _ in range(5):
        x = torch.randn(32, 64, generator=g).to(dev)
        y = torch.randint(0, 10, (32,), generator=g).to(dev)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(net(x), y).backward()
        opt.step()
    return torch.cat([p.detach().reshape(-1).cpu() for p in model.parameters()])


def main():
    mode, rank, n, store = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    gloo = mode == "gloo"
    if not gloo:
        if not torch.cuda.is_available():
            print("no GPU: torch.cuda.is_available() is False", flush=True)
            sys.exit(1)
        torch.cuda.set_device(0)
    dev = torch.device("cpu" if gloo else "cuda:0")
    dist.init_process_group("gloo" if gloo else "nccl", init_method=f"file://{store}",
                            rank=rank, world_size=n, timeout=datetime.timedelta(seconds=120))
    if mode == "allreduce":
        print(f"rank {rank}: torch {torch.__version__}, NCCL version reported "
              f"{torch.cuda.nccl.version()}", flush=True)
        collectives(rank, n, dev)
        check_mapped(os.environ["SHIM"])
        print(f"rank {rank}: every collective correct")
    else:
        w = ddp(rank, dev)
        if rank == 0:
            torch.save(w, os.environ["WEIGHTS"])
        print(f"rank {rank}: {mode}: 5 DDP steps, weight sum {w.sum().item():.6f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
