#!/usr/bin/python3
"""test_package.py - the tutti Python package on forked ranks: every collective, blocking and
asynchronous, on numpy arrays and torch CPU tensors (results exact), the datatype mapping,
the refusals (non-contiguous, read-only, unsupported types, device tensors), split, the
launcher environment, abort, the asynchronous error after a peer dies, and windows
(tutti.shared_empty, Comm.register_window).

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


def check_blockwise(rank, n, uid):
    """Gather, scatter, the v forms, bool and the bitwise ops, pre-multiplied sums: numpy and
    torch, blocking and asynchronous, results exact."""
    np = _np()
    import torch
    import tutti
    c = comm_of(uid, rank, n)
    # all-to-all v: rank r sends (r + j) % 3 elements to rank j (zeros included), in place too
    cnt = lambda i, j: (i + j) % 3  # noqa: E731
    sc = [cnt(rank, j) for j in range(n)]
    rc = [cnt(j, rank) for j in range(n)]
    send = np.concatenate([np.full(sc[j], 100 * rank + j, np.int32) for j in range(n)])
    recv = np.full(sum(rc), -1, np.int32)
    c.alltoallv(send, sc, recv, rc)
    want = np.concatenate([np.full(rc[j], 100 * j + rank, np.int32) for j in range(n)])
    assert (recv == want).all(), (recv, want)
    t_send, t_recv = torch.from_numpy(send.copy()), torch.zeros(sum(rc), dtype=torch.int32)
    c.alltoallv(t_send, sc, t_recv, rc, async_op=True).wait()
    assert t_recv.tolist() == want.tolist()
    sym = [min(rank, j) + 1 for j in range(n)]  # in place needs what goes out = what comes in
    buf = np.concatenate([np.full(sym[j], 10 * rank + j, np.int64) for j in range(n)])
    c.alltoallv(buf, None, None, sym)
    assert buf.tolist() == [10 * j + rank for j in range(n) for _ in range(sym[j])], buf
    # all-gather v and reduce-scatter v with shared uneven counts; gather(v), scatter(v)
    counts = [j + 1 for j in range(n)]
    ag = np.zeros(sum(counts), np.float32)
    c.allgatherv(np.full(counts[rank], rank, np.float32), ag, counts)
    assert ag.tolist() == [float(j) for j in range(n) for _ in range(counts[j])]
    rs_in = np.arange(sum(counts), dtype=np.float64) * (rank + 1)
    rs_out = np.zeros(counts[rank], np.float64)
    c.reduce_scatterv(rs_in, rs_out, counts)
    off = sum(counts[:rank])
    assert (rs_out == np.arange(off, off + counts[rank]) * n * (n + 1) / 2).all(), rs_out
    g = np.zeros(2 * n, np.int16) if rank == 1 else None
    c.gather(np.full(2, rank, np.int16), g, root=1)
    if rank == 1:
        assert g.tolist() == [j for j in range(n) for _ in range(2)]
    sv = np.arange(sum(counts), dtype=np.uint8) if rank == 0 else None
    mine = np.zeros(counts[rank], np.uint8)
    c.scatterv(sv, mine, counts, root=0)
    assert mine.tolist() == list(range(off, off + counts[rank]))
    gv = torch.zeros(sum(counts), dtype=torch.float64) if rank == 0 else None
    c.gatherv(torch.full((counts[rank],), float(rank), dtype=torch.float64), gv,
              counts if rank == 0 else None, root=0, async_op=True).wait()
    if rank == 0:
        assert gv.tolist() == [float(j) for j in range(n) for _ in range(counts[j])]
    sc_out = torch.zeros(3, dtype=torch.int64)
    c.scatter(torch.arange(3 * n) if rank == n - 1 else None, sc_out, root=n - 1)
    assert sc_out.tolist() == list(range(3 * rank, 3 * rank + 3))
    # bool and the bitwise ops
    b = np.array([rank == 0, True, False, rank % 2 == 1], dtype=bool)
    c.allreduce(b, op="sum")  # "or"
    assert b.tolist() == [True, True, False, n > 1]
    tb = torch.tensor([True, rank != 0], dtype=torch.bool)
    c.allreduce(tb, op=tutti.PROD)  # "and"
    assert tb.tolist() == [True, n == 1]
    x = np.array([1 << rank, 0xFF, rank], np.uint32)
    y = x.copy()
    c.allreduce(x, op="bor")
    c.allreduce(y, op=tutti.BXOR)
    assert x[0] == (1 << n) - 1 and x[1] == 0xFF, x
    assert y[2] == np.bitwise_xor.reduce(np.arange(n, dtype=np.uint32)), y
    # pre-multiplied sum: each rank scales by its own factor
    with c.premul_sum(rank + 1, np.float32) as op:
        v = np.full(5, 2.0, np.float32)
        c.allreduce(v, op=op)
        assert (v == 2.0 * n * (n + 1) / 2).all(), v
    with c.premul_sum(3, torch.int64) as op:
        w = torch.full((4,), rank, dtype=torch.int64)
        c.reduce_scatterv(torch.full((4 * n,), rank, dtype=torch.int64), w, [4] * n, op=op)
        assert w.tolist() == [3 * n * (n - 1) // 2] * 4
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
    refused(TypeError, lambda: c.allreduce(np.zeros(4, dtype=np.complex64)), "complex64")
    refused(TypeError, lambda: c.allreduce([1.0, 2.0]), "numpy.ndarray or a torch.Tensor")
    refused(ValueError, lambda: c.allreduce(torch.zeros(4, 4).t()), "not contiguous")
    refused(TypeError, lambda: c.allreduce(torch.zeros(4, dtype=torch.complex64)),
            "torch.complex64")
    refused(tutti.Error, lambda: c.allreduce(np.zeros(4, np.float32), op="bxor"),
            "bitwise ops need an integer type")
    refused(tutti.Error, lambda: c.allreduce(np.zeros(4, bool), op="avg"), "does not apply")
    refused(ValueError, lambda: c.alltoallv(np.zeros(4), [1] * n, np.zeros(4), [1]), "entries")
    refused(ValueError, lambda: c.allgatherv(np.zeros(1), np.zeros(2), [9] * n), "need")
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


def check_windows(rank, n, uid):
    """tutti.shared_empty + Comm.register_window: shared on every rank, collectives on them
    exact and counted on the windows (numpy and torch), plain memory registered but not shared,
    the refusals."""
    np = _np()
    import torch
    import tutti
    c = comm_of(uid, rank, n)
    a = tutti.shared_empty(1000 * n, "int32")
    b = tutti.shared_empty(1000 * n, np.int32)
    assert a.dtype == np.int32 and a.size == 1000 * n and not a.any(), "zero-filled int32"
    wa, wb = c.register_window(a), c.register_window(b)
    assert wa.shared and wb.shared and wa.calls == 0
    a[:1000] = np.arange(1000) + rank
    c.allreduce(a[:1000], b[:1000])
    assert (b[:1000] == n * np.arange(1000) + n * (n - 1) // 2).all(), b[:4]
    c.broadcast(b[:1000], root=n - 1)  # in place; non-roots' data is overwritten
    a[:1000] = np.arange(1000) * (rank + 1)
    c.allgather(a[:1000], b)
    for r in range(n):
        assert (b[r * 1000:(r + 1) * 1000] == np.arange(1000) * (r + 1)).all(), r
    assert wa.calls + wb.calls == 3, (wa.calls, wb.calls)
    t = tutti.shared_empty(4096, torch.float32, torch=True)
    assert t.dtype == torch.float32 and t.numel() == 4096
    wt = c.register_window(t)
    t.fill_(rank + 1)
    c.allreduce(t, op=tutti.MAX)
    assert (t == n).all() and wt.shared and wt.calls == 1, (t[:4], wt.calls)
    plain = np.ones(2048, dtype=np.float32)
    wp = c.register_window(plain)
    assert not wp.shared, "malloc memory is registered, not shared"
    c.allreduce(plain)
    assert (plain == n).all() and wp.calls == 0
    for w in (wa, wb, wt, wp):
        w.deregister()
    try:
        wa.calls
        raise AssertionError("a deregistered window answered")
    except ValueError as e:
        assert "deregistered" in str(e), str(e)
    for bad in (0, -3):
        try:
            tutti.shared_empty(bad, "float32")
            raise AssertionError("shared_empty(%d)" % bad)
        except ValueError as e:
            assert "at least 1" in str(e), str(e)
    c.allreduce(a[:1000])  # after deregistering: the ordinary path, still right
    assert (a[:1000] == np.arange(1000) * sum(range(1, n + 1))).all()
    c.destroy()


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
                  ("blockwise_bool_bitwise_premul", check_blockwise, N, _uid),
                  ("refusals", check_refusals, N, _uid),
                  ("split", check_split, N, _uid),
                  ("from_env", check_from_env, N, _free_port),
                  ("peer_death_async_error", check_peer_death, N, _uid),
                  ("abort_from_thread", check_abort, N, _uid),
                  ("windows", check_windows, N, _uid)], need=("numpy", "torch"))
