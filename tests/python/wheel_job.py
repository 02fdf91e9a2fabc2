"""wheel_job.py - what scripts/wheel_check.sh runs in the bare root with the installed wheel:
two forked ranks all-reduce numpy arrays through the wheel's libtutti (which must be the one
inside the installed package), then two ranks of torch.distributed all-reduce over the
"tutti" backend. Prints "wheel_job: ... ok" lines; exits non-zero on any failure."""
import datetime
import multiprocessing as mp
import os
import sys
import tempfile


def numpy_rank(rank, uid):
    import numpy as np
    import tutti
    comm = tutti.Comm(2, uid, rank)
    x = np.full(1 << 16, rank + 1, dtype=np.float32)
    comm.allreduce(x)
    assert (x == 3).all(), x[:4]
    comm.destroy()


def torch_rank(rank, store):
    import torch
    import torch.distributed as dist
    import tutti.torch_backend  # noqa: F401
    dist.init_process_group("tutti", init_method=f"file://{store}", rank=rank, world_size=2,
                            timeout=datetime.timedelta(seconds=60))
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    assert (t == 3).all(), t[:4]
    dist.destroy_process_group()


def run(fn, arg):
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=fn, args=(r, arg)) for r in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    return all(p.exitcode == 0 for p in procs)


def main():
    os.environ.setdefault("TUTTI_SECRET", os.urandom(16).hex())  # the job's own, for its ranks
    import tutti
    here = os.path.realpath(os.path.dirname(tutti.__file__))
    lib = os.path.realpath(tutti._lib.path)
    assert lib.startswith(here + os.sep), (lib, here)
    print(f"wheel_job: tutti {tutti.__file__}, libtutti {lib}", flush=True)
    ok = run(numpy_rank, tutti.UniqueId.new())
    print(f"wheel_job: numpy all-reduce {'ok' if ok else 'FAILED'}", flush=True)
    import torch
    store = tempfile.mktemp()
    ok2 = run(torch_rank, store)
    print(f"wheel_job: torch backend {'ok' if ok2 else 'FAILED'} (torch {torch.__version__})",
          flush=True)
    sys.exit(0 if ok and ok2 else 1)


if __name__ == "__main__":
    main()
