"""torchrun_job.py BACKEND - one worker of a torchrun launch (tests/python/test_torchrun.sh):
init from torchrun's environment (env://), an all-reduce and a broadcast checked, a line that
says so, a clean teardown."""
import os
import sys

import torch
import torch.distributed as dist

import tutti.torch_backend  # noqa: F401  (registers "tutti")

backend = sys.argv[1]
dist.init_process_group(backend)
rank, n = dist.get_rank(), dist.get_world_size()
t = torch.full((1000,), float(rank + 1))
dist.all_reduce(t)
b = torch.arange(10.0) if rank == 0 else torch.zeros(10)
dist.broadcast(b, 0)
ok = bool((t == n * (n + 1) / 2).all()) and torch.equal(b, torch.arange(10.0))
print(f"torchrun {backend}: rank {rank} of {n} (LOCAL_RANK {os.environ['LOCAL_RANK']}): "
      f"{'ok' if ok else 'WRONG'}", flush=True)
dist.destroy_process_group()
sys.exit(0 if ok else 1)
