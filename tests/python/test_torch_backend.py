#!/usr/bin/python3
"""test_torch_backend.py - torch.distributed with the "tutti" backend (tutti.torch_backend) on
forked ranks: every collective the backend claims, checked exactly (synchronous and
async_op=True), subgroups, the refusals it promises; then DistributedDataParallel on a small
model trained with "gloo" and with "tutti" from the same start: the same gradients at every
step (allclose) and the same final weights.

    TUTTI_LIBRARY=build/libtutti.so /usr/bin/python3 tests/python/test_torch_backend.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

N = 3


SECRET = "00112233445566778899aabbccddeeff"
OTHER_SECRET = "00112233445566778899aabbccddeefe"


def _init(backend, rank, n, store_file, seconds=60):
    import datetime
    import torch.distributed as dist
    import tutti.torch_backend  # noqa: F401  (registers "tutti")
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    dist.init_process_group(backend, init_method=f"file://{store_file}", rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=seconds))


def check_collectives(rank, n, stores):
    import torch
    import torch.distributed as dist
    _init("tutti", rank, n, stores[0])
    assert dist.get_backend() == "tutti"
    R = dist.ReduceOp
    for op, want in ((R.SUM, n * (n + 1) // 2), (R.PRODUCT, 6 if n == 3 else None),
                     (R.MIN, 1), (R.MAX, n), (R.AVG, (n + 1) // 2)):
        t = torch.full((1000,), rank + 1, dtype=torch.int64)
        dist.all_reduce(t, op=op)
        assert want is None or (t == want).all(), (op, t[:3])
    # more calls than the group keeps Works for (KEEP_WORKS), the oldest ones sends and
    # receives (their Works flush the batch: dropping them must not take the lock again)
    for i in range(40):
        dist.isend(torch.ones(1), (rank + 1) % n)
        dist.irecv(torch.zeros(1), (rank - 1) % n).wait()
    k = torch.zeros(1, dtype=torch.int64)
    for i in range(1100):
        dist.all_reduce(k)
    t = torch.full((4097,), float(rank), dtype=torch.float32)
    work = dist.all_reduce(t, async_op=True)
    work.wait()
    assert work.is_completed() and (t == n * (n - 1) / 2).all()
    ts = [torch.full((5,), float(rank)), torch.full((3, 2), float(2 * rank))]
    dist.all_reduce_coalesced(ts)
    assert (ts[0] == n * (n - 1) / 2).all() and (ts[1] == n * (n - 1)).all()
    ins = [torch.full((4,), float(rank)), torch.arange(6, dtype=torch.float32).view(2, 3) + rank]
    outs = [[torch.zeros(4), torch.zeros(2, 3)] for _ in range(n)]
    dist.all_gather_coalesced(outs, ins)
    for r in range(n):
        assert (outs[r][0] == r).all(), (r, outs[r][0])
        assert torch.equal(outs[r][1], torch.arange(6, dtype=torch.float32).view(2, 3) + r)
    for root in range(n):
        b = torch.arange(100, dtype=torch.int32) if rank == root else torch.zeros(100,
                                                                                dtype=torch.int32)
        dist.broadcast(b, src=root)
        assert (b == torch.arange(100, dtype=torch.int32)).all()
        r = torch.full((50,), float(rank))
        dist.reduce(r, dst=root)
        if rank == root:
            assert (r == n * (n - 1) / 2).all(), r[:3]
        g = [torch.zeros(7, dtype=torch.int16) for _ in range(n)] if rank == root else None
        dist.gather(torch.full((7,), rank, dtype=torch.int16), gather_list=g, dst=root)
        if rank == root:
            assert all((g[i] == i).all() for i in range(n))
        out = torch.zeros(6)
        dist.scatter(out, scatter_list=[torch.full((6,), 10.0 * i) for i in range(n)]
                     if rank == root else None, src=root)
        assert (out == 10.0 * rank).all(), out
    outs = [torch.zeros(2, 3) for _ in range(n)]
    dist.all_gather(outs, torch.full((2, 3), float(rank)))
    assert all((outs[i] == i).all() for i in range(n))
    flat = torch.zeros(n * 4, dtype=torch.float64)
    dist.all_gather_into_tensor(flat, torch.full((4,), float(rank), dtype=torch.float64))
    assert flat.tolist() == [float(i) for i in range(n) for _ in range(4)]
    rs = torch.zeros(3)
    dist.reduce_scatter(rs, [torch.full((3,), float(rank + i)) for i in range(n)])
    assert (rs == sum(r + rank for r in range(n))).all(), rs
    rst = torch.zeros(2, dtype=torch.int32)
    dist.reduce_scatter_tensor(rst, torch.arange(2 * n, dtype=torch.int32))
    assert rst.tolist() == [n * (2 * rank), n * (2 * rank + 1)], rst
    # all-to-all: even, uneven splits, lists of unequal tensors
    a2a_in = torch.arange(n * 2) + 100 * rank
    a2a_out = torch.zeros(n * 2, dtype=a2a_in.dtype)
    dist.all_to_all_single(a2a_out, a2a_in)
    assert a2a_out.tolist() == [100 * s + 2 * rank + k for s in range(n) for k in range(2)]
    in_splits = [j + 1 for j in range(n)]          # rank sends j+1 rows to j
    out_splits = [rank + 1] * n                    # and gets rank+1 rows from everyone
    u_in = torch.cat([torch.full((j + 1, 2), 10 * rank + j) for j in range(n)])
    u_out = torch.zeros(sum(out_splits), 2, dtype=u_in.dtype)
    dist.all_to_all_single(u_out, u_in, out_splits, in_splits)
    want = torch.cat([torch.full((rank + 1, 2), 10 * s + rank) for s in range(n)])
    assert torch.equal(u_out, want), (u_out, want)
    l_out = [torch.zeros(rank + 1) for _ in range(n)]
    dist.all_to_all(l_out, [torch.full((j + 1,), float(rank)) for j in range(n)])
    assert all((l_out[s] == s).all() for s in range(n))
    # uneven splits go through tutti_alltoallv with exactly their elements: never padded
    # to the largest block, never an all-to-all of equal blocks
    import tutti
    calls = []
    real_v, real_even = tutti.Comm.alltoallv, tutti.Comm.alltoall

    def spy_v(self, sendbuf, sendcounts, recvbuf, recvcounts, *a, **k):
        calls.append((list(sendcounts), list(recvcounts), sendbuf.numel(), recvbuf.numel()))
        return real_v(self, sendbuf, sendcounts, recvbuf, recvcounts, *a, **k)

    def no_even(self, *a, **k):
        raise AssertionError("an uneven all_to_all_single ran as an even all-to-all")
    tutti.Comm.alltoallv, tutti.Comm.alltoall = spy_v, no_even
    try:
        u_out.zero_()
        dist.all_to_all_single(u_out, u_in, out_splits, in_splits)
    finally:
        tutti.Comm.alltoallv, tutti.Comm.alltoall = real_v, real_even
    assert torch.equal(u_out, want)
    assert calls == [([2 * k for k in in_splits], [2 * k for k in out_splits], u_in.numel(),
                      u_out.numel())], calls
    # the bitwise ops, bool, uneven all-gather, gather and scatter of unequal tensors
    bits = torch.tensor([1 << rank, 0xF0, rank], dtype=torch.int32)
    x = bits.clone()
    dist.all_reduce(x, op=R.BOR)
    assert x[0].item() == (1 << n) - 1 and x[1].item() == 0xF0, x
    x = bits.clone()
    dist.all_reduce(x, op=R.BAND)
    assert x[1].item() == 0xF0 and x[0].item() == (1 if n == 1 else 0), x
    x = bits.clone()
    dist.all_reduce(x, op=R.BXOR)
    want_x = 0
    for r in range(n):
        want_x ^= r
    assert x[2].item() == want_x, x
    flags = torch.tensor([rank == 0, True, False])
    dist.all_reduce(flags)  # SUM on bool is "or", as torch's nccl backend maps it
    assert flags.tolist() == [True, True, False], flags
    ug = [torch.zeros(j + 2, dtype=torch.float64) for j in range(n)]
    dist.all_gather(ug, torch.full((rank + 2,), float(rank), dtype=torch.float64))
    assert all(torch.equal(ug[j], torch.full((j + 2,), float(j), dtype=torch.float64))
               for j in range(n)), ug
    root = n - 1
    gl = [torch.zeros(j + 1, dtype=torch.int64) for j in range(n)] if rank == root else None
    dist.gather(torch.full((rank + 1,), rank, dtype=torch.int64), gather_list=gl, dst=root)
    if rank == root:
        assert all(gl[j].tolist() == [j] * (j + 1) for j in range(n)), gl
    so = torch.zeros(rank + 1)
    dist.scatter(so, scatter_list=[torch.full((j + 1,), 5.0 * j) for j in range(n)]
                 if rank == 0 else None, src=0)
    assert (so == 5.0 * rank).all(), so
    # point to point, blocking and not
    if rank == 0:
        dist.send(torch.arange(10.0), dst=1)
        w = dist.isend(torch.arange(3), dst=n - 1)
        w.wait()
    elif rank == 1:
        got = torch.zeros(10)
        dist.recv(got, src=0)
        assert (got == torch.arange(10.0)).all()
    if rank == n - 1:
        got = torch.zeros(3, dtype=torch.int64)
        dist.irecv(got, src=0).wait()
        assert got.tolist() == [0, 1, 2]
    dist.barrier()
    # a ring exchange of 4 MiB both ways at once: isend/irecv, waited in the "wrong" order, and
    # batch_isend_irecv (separate requests run one after the other would deadlock here)
    big = 1 << 20
    right, left = (rank + 1) % n, (rank - 1) % n
    out_r, out_l = torch.full((big,), float(rank)), torch.full((big,), float(-rank))
    in_l, in_r = torch.zeros(big), torch.zeros(big)
    works = [dist.isend(out_r, right), dist.isend(out_l, left), dist.irecv(in_l, left),
             dist.irecv(in_r, right)]
    for w in reversed(works):
        w.wait()
    assert (in_l == left).all() and (in_r == -right).all(), (in_l[:2], in_r[:2])
    in_l.zero_()
    ops = [dist.P2POp(dist.isend, out_r, right), dist.P2POp(dist.irecv, in_l, left)]
    for w in dist.batch_isend_irecv(ops):
        w.wait()
    assert (in_l == left).all()
    # objects ride on all_gather and broadcast
    objs = [None] * n
    dist.all_gather_object(objs, {"rank": rank})
    assert [o["rank"] for o in objs] == list(range(n))
    # a subgroup of ranks 1..n-1
    sub = dist.new_group(list(range(1, n)))
    if rank > 0:
        s = torch.ones(1)
        dist.all_reduce(s, group=sub)
        assert s.item() == n - 1
    # refusals: clear errors, the group still usable
    premul = None
    if hasattr(dist, "_make_nccl_premul_sum") and torch.__version__.startswith("1."):
        # torch 1.13 keeps PREMUL_SUM's factor in C++: refused, naming why
        premul = lambda: dist.all_reduce(torch.ones(2), op=dist._make_nccl_premul_sum(2.0))  # noqa
    for bad in [b for b in (lambda: dist.all_reduce(torch.ones(2), op=R.BXOR),
                            lambda: dist.recv(torch.zeros(1)), premul) if b is not None]:
        try:
            bad()
            raise AssertionError("not refused")
        except (ValueError, RuntimeError) as e:
            assert "tutti backend" in str(e) or "need an integer type" in str(e), str(e)
    t = torch.ones(3)
    dist.all_reduce(t)
    assert (t == n).all()
    dist.destroy_process_group()


def check_failure_raises(rank, n, stores):
    """A failed collective raises from wait(): a rank dies, the others' all_reduce fails with
    tutti's error naming it (synchronous and async_op), instead of returning quietly."""
    import torch
    import torch.distributed as dist
    import tutti
    _init("tutti", rank, n, stores[0])
    dist.barrier()
    if rank == n - 1:
        os._exit(0)
    for async_op in (False, True):
        try:
            w = dist.all_reduce(torch.ones(8), async_op=async_op)
            if async_op:
                w.wait()
            raise AssertionError("all_reduce with a dead rank did not raise")
        except tutti.Error as e:
            assert e.status == "ERR_REMOTE" and f"rank {n - 1}" in str(e), str(e)
    os._exit(0)  # the group cannot be torn down politely with a rank gone


def check_timeout_reads_as_torch_says(rank, n, stores):
    """Rank 0 waits at a barrier rank 1 never reaches: its error says " Timed out " (torch's
    tests match " (Timed out|closed|timeout) ") and is still a tutti.Error."""
    import time
    import torch.distributed as dist
    import tutti
    _init("tutti", rank, n, stores[0], seconds=2)
    if rank != 0:
        time.sleep(6)
        os._exit(0)
    t0 = time.time()
    try:
        dist.barrier()
        raise AssertionError("a barrier without its peer returned")
    except tutti.Error as e:
        assert e.status == "ERR_TIMEOUT" and " Timed out " in str(e), str(e)
    assert 1.5 < time.time() - t0 < 30, time.time() - t0
    os._exit(0)


# A rank that leaves without destroy_process_group: python exits on its own (no os._exit).
_EXIT_SCRIPT = """
import datetime, os, sys, torch, torch.distributed as dist
import tutti.torch_backend
rank, n, store, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
dist.init_process_group("tutti", init_method="file://" + store, rank=rank, world_size=n,
                        timeout=datetime.timedelta(seconds=120))
dist.all_reduce(torch.ones(4))
if mode == "in_flight":
    if rank == 1:
        os._exit(0)  # gone: rank 0's next all-reduce never completes
    dist.all_reduce(torch.ones(1 << 20), async_op=True)
print("leaving", flush=True)
"""


def check_exit_without_destroy(rank, n, stores):
    """The interpreter exits with the group alive: no exception at exit, the communicator
    closed (destroyed, or aborted at once with work in flight, not held until the timeout)."""
    import subprocess
    import sys
    import time
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for mode, store in (("idle", stores[0]), ("in_flight", stores[1])):
        t0 = time.time()
        p = subprocess.run([sys.executable, "-c", _EXIT_SCRIPT, str(rank), str(n), store, mode],
                           capture_output=True, text=True, timeout=60, env=env)
        took = time.time() - t0
        assert p.returncode == 0, (mode, p.returncode, p.stderr[-2000:])
        for bad in ("Exception ignored", "Traceback", "NoneType"):
            assert bad not in p.stderr, (mode, p.stderr[-2000:])
        # idle: destroyed at exit, not aborted (no work was in flight)
        assert mode != "idle" or "aborted" not in p.stderr, p.stderr[-2000:]
        assert took < 45, (mode, took)


def _train(backend, rank, n, store_file, steps=6):
    """A few DDP steps of a small MLP; the per-step gradients and the final weights."""
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    _init(backend, rank, n, store_file)
    torch.manual_seed(1234)  # the same start on every rank and for both backends
    model = torch.nn.Sequential(torch.nn.Linear(20, 32), torch.nn.Tanh(),
                                torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    ddp = DDP(model, bucket_cap_mb=0.002)  # several buckets: overlapped all-reduces
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1, momentum=0.9)
    gen = torch.Generator().manual_seed(99 + rank)  # each rank its own data
    grads = []
    for _ in range(steps):
        x = torch.randn(16, 20, generator=gen)
        y = torch.randint(0, 4, (16,), generator=gen)
        opt.zero_grad()
        torch.nn.functional.cross_entropy(ddp(x), y).backward()
        grads.append([p.grad.clone() for p in model.parameters()])
        opt.step()
    weights = [p.detach().clone() for p in model.parameters()]
    # every rank holds the same weights (the gradients were synchronized)
    for w in weights:
        ref = w.clone()
        dist.broadcast(ref, src=0)
        assert torch.equal(ref, w), f"{backend}: ranks disagree on the weights"
    return grads, weights  # (no teardown: the process ends with os._exit)


def check_ddp_matches_gloo(rank, n, stores):
    import torch
    g_grads, g_w = harness.in_child(_train, "gloo", rank, n, stores[0])
    t_grads, t_w = harness.in_child(_train, "tutti", rank, n, stores[1])
    for step, (gs, ts) in enumerate(zip(g_grads, t_grads)):
        for i, (g, t) in enumerate(zip(gs, ts)):
            assert torch.allclose(g, t, rtol=1e-5, atol=1e-7), \
                f"step {step} param {i}: max diff {(g - t).abs().max().item()}"
    for g, t in zip(g_w, t_w):
        assert torch.allclose(g, t, rtol=1e-5, atol=1e-6), (g - t).abs().max().item()
    if rank == 0:
        diff = max((g - t).abs().max().item() for g, t in zip(g_w, t_w))
        print(f"  ddp: {len(g_grads)} steps, gradients allclose at every step; largest "
              f"final weight difference gloo vs tutti {diff:.3g}", flush=True)


def _spy_unique_ids():
    """Record the raw bytes of every unique id this process makes."""
    import tutti
    made = []
    new = tutti.UniqueId.new.__func__

    def spy(cls):
        uid = new(cls)
        made.append(bytes(uid))
        return uid
    tutti.UniqueId.new = classmethod(spy)
    return made


def check_store_holds_no_usable_secret(rank, n, stores):
    """Issue 18 item 11: with TUTTI_SECRET set, what the backend puts in torch's store (read
    here from the FileStore's own file, as anyone who can read the store would) holds neither
    the unique id nor its secret; the job works."""
    import torch
    import torch.distributed as dist
    os.environ["TUTTI_SECRET"] = SECRET
    made = _spy_unique_ids()
    _init("tutti", rank, n, stores[0])
    t = torch.ones(4)
    dist.all_reduce(t)
    assert (t == n).all(), t
    if rank == 0:
        with open(stores[0], "rb") as f:
            stored = f.read()
        assert len(made) == 1, f"rank 0 made {len(made)} unique ids"
        raw = made[0]
        assert raw not in stored, "the unique id is in the store in the clear"
        for off in range(0, len(raw) - 8 + 1):
            window = raw[off:off + 8]
            if window != bytes(8) and window in stored:
                raise AssertionError(f"bytes {off}..{off + 7} of the unique id are in the store")
    dist.barrier()
    dist.destroy_process_group()


def check_other_secret_is_refused(rank, n, stores):
    """A rank with another TUTTI_SECRET cannot open what rank 0 put in the store: it fails at
    once naming TUTTI_SECRET (the others time out waiting for it)."""
    import tutti
    os.environ["TUTTI_SECRET"] = OTHER_SECRET if rank == 1 else SECRET
    os.environ["TUTTI_TIMEOUT"] = "5s"  # rank 0 waits that long for rank 1 in the bootstrap
    try:
        _init("tutti", rank, n, stores[0], seconds=5)
    except (tutti.Error, RuntimeError, ValueError) as e:
        if rank == 1:
            assert "TUTTI_SECRET" in str(e), str(e)
        os._exit(0)  # no group to tear down
    raise AssertionError("init_process_group with another TUTTI_SECRET succeeded")


def check_clear_id_is_refused_with_a_secret(rank, n, stores):
    """Rank 0 runs without TUTTI_SECRET, rank 1 with one: rank 1 refuses the id in the clear
    (whoever can write the store could otherwise replace a sealed id with one of their own)."""
    import tutti
    if rank == 0:
        os.environ.pop("TUTTI_SECRET", None)
    else:
        os.environ["TUTTI_SECRET"] = SECRET
    os.environ["TUTTI_TIMEOUT"] = "5s"
    try:
        _init("tutti", rank, n, stores[0], seconds=5)
    except (tutti.Error, RuntimeError, ValueError) as e:
        if rank == 1:
            assert "TUTTI_SECRET" in str(e), str(e)
        os._exit(0)
    raise AssertionError("a rank with TUTTI_SECRET joined a job whose id was in the clear")


def check_no_secret_warns(rank, n, stores):
    """Without TUTTI_SECRET the id goes to the store as it is, and rank 0 says what that means;
    a rank with TUTTI_SECRET set refuses such an id instead of joining a job without one."""
    import warnings
    import torch
    import torch.distributed as dist
    os.environ.pop("TUTTI_SECRET", None)
    os.environ.pop("TUTTI_SECRET_FILE", None)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        _init("tutti", rank, n, stores[0])
    if rank == 0:
        text = " ".join(str(w.message) for w in seen)
        assert "TUTTI_SECRET" in text and "store" in text, f"no warning: {text!r}"
    t = torch.ones(2)
    dist.all_reduce(t)
    assert (t == n).all()
    dist.destroy_process_group()


def _stores():
    """Two fresh FileStore paths (no TCP port to race for with the backends' own sockets)."""
    import tempfile
    d = tempfile.mkdtemp(prefix="tutti-torch-test-")
    return [os.path.join(d, "store0"), os.path.join(d, "store1")]


def check_secret_variables(rank, n, stores):
    """Issue 36 item 5: TUTTI_SECRET= and TUTTI_SECRET_FILE= (set, empty) are errors naming the
    variable, as in the C library; a secret file other users can read gives the C library's
    warning."""
    import tempfile
    import warnings
    from tutti import _torch_store
    for name in ("TUTTI_SECRET", "TUTTI_SECRET_FILE"):
        os.environ[name] = ""
        try:
            _torch_store._job_secret()
            raise AssertionError(f"{name}= was taken as no secret")
        except ValueError as e:
            assert f"{name} is set but empty" in str(e), e
        del os.environ[name]
    fd, path = tempfile.mkstemp()
    os.write(fd, (SECRET + "\n").encode())
    os.close(fd)
    os.chmod(path, 0o644)
    os.environ["TUTTI_SECRET_FILE"] = path
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        assert _torch_store._job_secret() == bytes.fromhex(SECRET)
    assert any("readable by other users" in str(w.message) for w in got), [str(w) for w in got]
    os.unlink(path)


if __name__ == "__main__":
    harness.main([("secret_variables", check_secret_variables, 1, _stores),
                  ("dist_collectives", check_collectives, N, _stores),
                  ("failure_raises", check_failure_raises, N, _stores),
                  ("timeout_reads_as_torch_says", check_timeout_reads_as_torch_says, 2, _stores),
                  ("exit_without_destroy", check_exit_without_destroy, 2, _stores),
                  ("store_holds_no_usable_secret", check_store_holds_no_usable_secret, 2,
                   _stores),
                  ("other_secret_is_refused", check_other_secret_is_refused, 2, _stores),
                  ("clear_id_is_refused_with_a_secret", check_clear_id_is_refused_with_a_secret,
                   2, _stores),
                  ("no_secret_warns", check_no_secret_warns, 2, _stores),
                  ("ddp_tutti_matches_gloo", check_ddp_matches_gloo, N, _stores),
                  ("ddp_tutti_matches_gloo_2ranks", check_ddp_matches_gloo, 2, _stores)],
                 need=("numpy", "torch"))
