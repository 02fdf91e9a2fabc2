#!/usr/bin/python3
"""test_package.py - the tutti Python package on forked ranks: every collective, blocking and
asynchronous, on numpy arrays and torch CPU tensors (results exact), the datatype mapping,
the refusals (non-contiguous, read-only, unsupported types, device tensors), split, the
launcher environment, abort and the asynchronous error after a peer dies.

    TUTTI_LIBRARY=build/libtutti.so /usr/bin/python3 tests/python/test_package.py
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

N = 3


def _np():
    import numpy as np
    return np


def comm_of(uid, rank, n):
    import tutti
    return tutti.Comm(n, uid, rank)


def check_collectives_numpy(rank, n, uid):
    np = _np()
    import tutti
    c = comm_of(uid, rank, n)
    for dt in ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
               "float16", "float32", "float64"):
        x = (np.arange(257) % 5 + rank).astype(dt)
        want = sum((np.arange(257) % 5 + r) for r in range(n)).astype(dt)
        out = np.zeros_like(x)
        c.allreduce(x, out)
        assert (out == want).all(), (dt, out[:8], want[:8])
        for op, f in (("max", np.maximum), ("min", np.minimum)):
            y = x.copy()
            c.allreduce(y, op=op)
            ref = (np.arange(257) % 5).astype(dt)
            ref = f(ref, (np.arange(257) % 5 + n - 1).astype(dt)) if op == "max" else ref
            assert (y == ref).all(), (dt, op)
    # AVG of k*(2r+1) is exactly k*n; PROD
    x = np.full(100, 2 * rank + 1, dtype=np.float64)
    c.allreduce(x, op=tutti.AVG)
    assert (x == n).all(), x[:4]
    x = np.full(10, rank + 1, dtype=np.int64)
    c.allreduce(x, op="prod")
    assert (x == np.prod(np.arange(1, n + 1))).all()
    # broadcast in place and out of place, reduce
    b = np.arange(1000, dtype=np.int32) * (rank == 1)
    c.broadcast(b, root=1)
    assert (b == np.arange(1000)).all()
    r = np.zeros(1000, dtype=np.int32)
    c.broadcast(np.arange(1000, dtype=np.int32) * (rank == 2), root=2, recvbuf=r)
    assert (r == np.arange(1000)).all()
    s = np.full(64, rank, dtype=np.float32)
    out = np.zeros(64, dtype=np.float32)
    c.reduce(s, root=0, recvbuf=out)
    if rank == 0:
        assert (out == n * (n - 1) / 2).all()
    # all-gather, reduce-scatter, all-to-all
    g = np.zeros(n * 7, dtype=np.int64)
    c.allgather(np.full(7, rank, dtype=np.int64), g)
    assert (g == np.repeat(np.arange(n), 7)).all(), g
    rs_in = np.arange(n * 5, dtype=np.float64) + rank
    rs_out = np.zeros(5, dtype=np.float64)
    c.reduce_scatter(rs_in, rs_out)
    assert (rs_out == n * (np.arange(5) + rank * 5) + n * (n - 1) / 2).all(), rs_out
    a_in = np.arange(n * 4, dtype=np.int32) + 100 * rank
    a_out = np.zeros(n * 4, dtype=np.int32)
    c.alltoall(a_in, a_out)
    want = np.concatenate([np.arange(rank * 4, rank * 4 + 4) + 100 * src for src in range(n)])
    assert (a_out == want).all(), (a_out, want)
    # send/recv in a group: ring shift
    right, left = (rank + 1) % n, (rank - 1) % n
    got = np.zeros(33, dtype=np.float32)
    with tutti.group():
        c.send(np.full(33, rank, dtype=np.float32), right)
        c.recv(got, left)
    assert (got == left).all()
    c.barrier()
    c.destroy()


def check_async_and_torch(rank, n, uid):
    np = _np()
    import torch
    import tutti
    c = comm_of(uid, rank, n)
    t = torch.full((300,), float(rank), dtype=torch.bfloat16)
    req = c.allreduce(t, async_op=True)
    req.wait()
    assert req.test() and (t == float(n * (n - 1) // 2)).all(), t[:4]
    x = np.full(1 << 16, rank, dtype=np.float32)
    reqs = [c.allreduce(x, op="max", async_op=True), c.broadcast(x, root=0, async_op=True),
            c.barrier(async_op=True)]
    while not reqs[-1].test():
        time.sleep(0.0005)
    for r in reqs:
        r.wait()
    assert (x == n - 1).all()  # max, then rank 0's copy of it
    g = torch.empty(n * 3, dtype=torch.int64)
    c.allgather(torch.full((3,), rank, dtype=torch.int64), g, async_op=True).wait()
    assert g.tolist() == [r for r in range(n) for _ in range(3)]
    rs = torch.empty(2, dtype=torch.float32)
    c.reduce_scatter(torch.ones(2 * n), rs, async_op=True).wait()
    assert rs.tolist() == [float(n)] * 2
    if rank == 0:
        c.send(torch.arange(5, dtype=torch.int32), 1, async_op=True).wait()
    elif rank == 1:
        got = torch.zeros(5, dtype=torch.int32)
        c.recv(got, 0, async_op=True).wait()
        assert got.tolist() == list(range(5))
    c.destroy()


def check_refusals(rank, n, uid):
    np = _np()
    import torch
    import tutti
    c = comm_of(uid, rank, n)

    def refused(exc, fn, words):
        try:
            fn()
        except exc as e:
            assert words in str(e), (words, str(e))
            return
        raise AssertionError(f"not refused: {words}")
    a = np.zeros((8, 8), dtype=np.float32)
    refused(ValueError, lambda: c.allreduce(a[:, 1]), "not C-contiguous")
    ro = np.zeros(4, dtype=np.float32)
    ro.flags.writeable = False
    refused(ValueError, lambda: c.allreduce(ro), "read-only")
    refused(TypeError, lambda: c.allreduce(np.zeros(4, dtype=bool)), "no datatype for bool")
    refused(TypeError, lambda: c.allreduce(np.zeros(4, dtype=np.complex64)), "complex64")
    refused(TypeError, lambda: c.allreduce([1.0, 2.0]), "numpy.ndarray or a torch.Tensor")
    refused(ValueError, lambda: c.allreduce(torch.zeros(4, 4).t()), "not contiguous")
    refused(TypeError, lambda: c.allreduce(torch.zeros(4, dtype=torch.bool)), "torch.bool")
    if torch.__version__ and hasattr(torch, "device"):
        meta = torch.zeros(4, device="meta")
        refused(ValueError, lambda: c.allreduce(meta), "meta tensor")
    refused(TypeError, lambda: c.allreduce(np.zeros(4, np.float32), np.zeros(4, np.int32)),
            "element types differ")
    refused(ValueError, lambda: c.allgather(np.zeros(2), np.zeros(5)), "must hold")
    refused(ValueError, lambda: c.allreduce(np.zeros(2), op="xor"), "unknown reduction op")
    # a tutti refusal carries its status and message
    refused(tutti.Error, lambda: c.broadcast(np.zeros(2), root=n), "ERR_INVALID_ARG")
    c.barrier()
    c.destroy()
    refused(tutti.Error, lambda: c.barrier(), "destroyed")


def check_split(rank, n, uid):
    np = _np()
    import tutti
    c = comm_of(uid, rank, n)
    sub = c.split(rank % 2 if rank > 0 else tutti.SPLIT_NOCOLOR, key=rank)
    if rank == 0:
        assert sub is None
    else:
        x = np.array([rank], dtype=np.int32)
        sub.allreduce(x)
        assert x[0] == sum(q for q in range(1, n) if q % 2 == rank % 2), x
        assert sub.size == len([q for q in range(1, n) if q % 2 == rank % 2])
        sub.destroy()
    c.destroy()


def check_from_env(rank, n, port):
    """tutti_comm_init_env in a fresh interpreter (the environment is read once per process,
    and this one's was read before the fork)."""
    import subprocess
    env = dict(os.environ, TUTTI_RANK=str(rank), TUTTI_NRANKS=str(n),
               TUTTI_ROOT=f"127.0.0.1:{port}", TUTTI_SECRET="0123456789abcdef" * 2)
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--from-env"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == f"{rank} {n} {float(n)}", \
        (out.returncode, out.stdout, out.stderr)


def from_env_rank():
    import numpy as np
    import tutti
    with tutti.Comm.from_env() as c:
        x = np.ones(10)
        c.allreduce(x)
        print(c.rank, c.size, x[0])


def check_peer_death(rank, n, uid):
    np = _np()
    import tutti
    c = comm_of(uid, rank, n)
    c.barrier()
    if rank == n - 1:
        os._exit(0)
    x = np.ones(10)
    try:
        c.allreduce(x)
        raise AssertionError("allreduce with a dead peer succeeded")
    except tutti.Error as e:
        assert e.status == "ERR_REMOTE" and f"rank {n - 1}" in str(e), str(e)
    err = c.async_error()
    assert err is not None and err.status == "ERR_REMOTE", err
    c.abort()


def check_abort(rank, n, uid):
    np = _np()
    import threading
    import tutti
    c = comm_of(uid, rank, n)
    if rank == 0:
        threading.Timer(0.3, c.abort).start()
        t0 = time.time()
        try:
            c.allreduce(np.ones(10))  # the others never join: only the abort ends it
            raise AssertionError("allreduce returned")
        except tutti.Error as e:
            assert e.status == "ERR_ABORTED", str(e)
        assert time.time() - t0 < 10
    else:
        time.sleep(0.6)
        c.abort()


def _free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def _uid():
    import tutti
    return tutti.UniqueId.new()


if __name__ == "__main__" and sys.argv[1:] == ["--from-env"]:
    from_env_rank()
elif __name__ == "__main__":
    harness.main([("collectives_numpy", check_collectives_numpy, N, _uid),
                  ("async_and_torch_tensors", check_async_and_torch, N, _uid),
                  ("refusals", check_refusals, N, _uid),
                  ("split", check_split, N, _uid),
                  ("from_env", check_from_env, N, _free_port),
                  ("peer_death_async_error", check_peer_death, N, _uid),
                  ("abort_from_thread", check_abort, N, _uid)], need=("numpy", "torch"))
