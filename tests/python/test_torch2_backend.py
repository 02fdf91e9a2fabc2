#!/usr/bin/env python3
"""test_torch2_backend.py - what torch 2.x asks of the "tutti" backend beyond torch 1.13
(test_torch_backend.py runs the calls both have, on either torch): tutti as the CPU backend
of a mixed group ("cpu:tutti,cuda:nccl"), the calls torch 2.15 names anew (all_gather_single,
reduce_scatter_single, all_to_all_single, their coalesced forms through the coalescing
manager), Work.wait(timeout), Work.is_completed(), sequence numbers, monitored_barrier naming
the rank that did not come, new_group / split_group / new_subgroups / shrink_group, abort, and a
DeviceMesh over tutti. Skips (77) on torch 1.x, naming the version.

    TUTTI_LIBRARY=build/libtutti.so <venv>/bin/python tests/python/test_torch2_backend.py
"""
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

N = 4


def _init(rank, n, store_file, backend="tutti", seconds=60):
    import torch.distributed as dist
    import tutti.torch_backend  # noqa: F401  (registers "tutti")
    dist.init_process_group(backend, init_method=f"file://{store_file}", rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=seconds))


def check_mixed_group(rank, n, stores):
    """"cpu:tutti,cuda:nccl" (with a GPU; without one NCCL cannot start, so "cpu:tutti,
    cuda:gloo", another backend for the other device): the group's CPU backend is tutti's,
    the CUDA one the other library's, and CPU tensors go through tutti."""
    import torch
    import torch.distributed as dist
    other = "nccl" if torch.cuda.is_available() else "gloo"
    _init(rank, n, stores[0], backend=f"cpu:tutti,cuda:{other}")
    pg = dist.group.WORLD
    cpu = pg._get_backend(torch.device("cpu"))
    assert type(cpu).__name__ == "TuttiBackend", type(cpu)
    assert cpu.name() == "tutti", cpu.name()
    assert pg._get_backend(torch.device("cuda")).name() == other
    t = torch.full((1000,), float(rank + 1))
    dist.all_reduce(t)
    assert (t == n * (n + 1) / 2).all(), t[:3]
    dist.destroy_process_group()


def check_new_names(rank, n, stores):
    """The tensor forms torch 2.15 dispatches under new names, and their coalesced forms."""
    import torch
    import torch.distributed as dist
    from torch.distributed.distributed_c10d import _coalescing_manager
    _init(rank, n, stores[0])
    out = torch.empty(n * 3)
    dist.all_gather_into_tensor(out, torch.full((3,), float(rank)))
    assert (out.view(n, 3) == torch.arange(n, dtype=torch.float32).view(n, 1)).all(), out
    rs = torch.empty(2)
    dist.reduce_scatter_tensor(rs, torch.arange(2 * n, dtype=torch.float32) + rank)
    want = n * torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32) + n * (n - 1) / 2
    assert torch.equal(rs, want), (rs, want)
    # uneven all_to_all_single: rank r sends j+1 rows to rank j
    ins = [j + 1 for j in range(n)]
    outs = [rank + 1] * n
    src = torch.cat([torch.full((k, 2), float(100 * rank + j)) for j, k in enumerate(ins)])
    dst = torch.empty(sum(outs), 2)
    dist.all_to_all_single(dst, src, outs, ins)
    want = torch.cat([torch.full((rank + 1, 2), float(100 * j + rank)) for j in range(n)])
    assert torch.equal(dst, want), (dst, want)
    # the coalescing manager with a device: tutti's _start/_end_coalescing
    a, b = torch.empty(2 * n), torch.empty(3 * n, dtype=torch.float64)
    with _coalescing_manager(device=torch.device("cpu")):
        dist.all_gather_into_tensor(a, torch.full((2,), float(rank)))
        dist.all_gather_into_tensor(b, torch.full((3,), float(rank), dtype=torch.float64))
    assert (a.view(n, 2)[:, 0] == torch.arange(n)).all() and (b.view(n, 3)[:, 2] ==
                                                                torch.arange(n)).all()
    # coalesced without a device: torch's fast path calls the *_coalesced forms
    outs2 = [torch.empty(n), torch.empty(2 * n, dtype=torch.int32)]
    with _coalescing_manager():
        dist.all_gather_into_tensor(outs2[0], torch.full((1,), float(rank)))
        dist.all_gather_into_tensor(outs2[1], torch.full((2,), rank, dtype=torch.int32))
    assert (outs2[0] == torch.arange(n)).all() and (outs2[1].view(n, 2)[:, 1] ==
                                                    torch.arange(n)).all()
    rss = [torch.empty(1), torch.empty(2)]
    with _coalescing_manager():
        dist.reduce_scatter_tensor(rss[0], torch.ones(n))
        dist.reduce_scatter_tensor(rss[1], torch.arange(2 * n, dtype=torch.float32))
    assert rss[0].item() == n and torch.equal(
        rss[1], n * torch.arange(2 * rank, 2 * rank + 2, dtype=torch.float32)), rss
    ts = [torch.ones(3), torch.full((2,), 2.0)]
    with _coalescing_manager():
        for t in ts:
            dist.all_reduce(t)
    assert (ts[0] == n).all() and (ts[1] == 2 * n).all(), ts
    dist.destroy_process_group()


def check_work(rank, n, stores):
    """Work.is_completed() turns true; wait(timeout) raises "Timed out" while a peer is late,
    and the call still completes; the group's sequence number counts the calls."""
    import time
    import torch
    import torch.distributed as dist
    _init(rank, n, stores[0])
    pg = dist.group.WORLD
    seq0 = pg._get_sequence_number_for_group()
    w = dist.all_reduce(torch.ones(10), async_op=True)
    w.wait()
    assert w.is_completed()
    assert pg._get_sequence_number_for_group() == seq0 + 1, pg._get_sequence_number_for_group()
    t = torch.ones(4)
    if rank == 0:
        w = dist.all_reduce(t, async_op=True)
        try:
            w.wait(timeout=datetime.timedelta(seconds=0.3))
            raise AssertionError("wait(timeout) returned while rank 1 had not started")
        except RuntimeError as e:
            assert "Timed out" in str(e), e
        assert not w.is_completed()
        w.wait()
    else:
        time.sleep(1.0)
        dist.all_reduce(t)
    assert (t == n).all(), t
    dist.destroy_process_group()


def check_monitored_barrier(rank, n, stores):
    """Every rank passes; then rank 1 stays away: rank 0 names it, the others learn rank 0
    failed (Gloo's messages); with wait_all_ranks, rank 0 names every missing rank."""
    import torch.distributed as dist
    _init(rank, n, stores[0])
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=10), wait_all_ranks=True)
    if rank == 0:
        try:
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=1))
            raise AssertionError("passed without rank 1")
        except RuntimeError as e:
            assert "Rank 1 failed to pass monitoredBarrier" in str(e), e
    elif rank != 1:
        try:
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
            raise AssertionError("passed although rank 0 failed")
        except RuntimeError as e:
            assert f"Rank {rank} successfully reached monitoredBarrier" in str(e), e
    if rank == 0:
        try:
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=0.5), wait_all_ranks=True)
            raise AssertionError("passed alone")
        except RuntimeError as e:
            want = "Ranks " + ", ".join(str(r) for r in range(1, n)) + " failed to pass"
            assert want in str(e), e
    dist.barrier()
    dist.destroy_process_group()


def check_groups(rank, n, stores):
    """new_group, split_group (tutti_comm_split: ranks outside every split get none),
    new_subgroups, then shrink_group without rank n-1 (tutti_comm_shrink)."""
    import torch
    import torch.distributed as dist
    _init(rank, n, stores[0])
    evens = dist.new_group([r for r in range(n) if r % 2 == 0], backend="tutti")
    if rank % 2 == 0:
        t = torch.ones(2)
        dist.all_reduce(t, group=evens)
        assert (t == (n + 1) // 2).all(), t
    halves = dist.split_group(split_ranks=[list(range(n // 2)), list(range(n // 2, n))])
    t = torch.full((3,), float(rank))
    dist.all_reduce(t, group=halves)
    lo = 0 if rank < n // 2 else n // 2
    assert (t == sum(range(lo, lo + n // 2))).all(), t
    assert dist.get_group_rank(halves, rank) == rank - lo
    only = dist.split_group(split_ranks=[[0, 1]])
    assert (only is not None and only != dist.GroupMember.NON_GROUP_MEMBER) == (rank < 2), only
    sub, _ = dist.new_subgroups(group_size=2)
    t = torch.ones(1)
    dist.all_reduce(t, group=sub)
    assert t.item() == 2, t
    if rank != n - 1:
        small = dist.shrink_group([n - 1])
        t = torch.ones(5)
        dist.all_reduce(t, group=small)
        assert (t == n - 1).all(), t
    dist.destroy_process_group()


def check_abort(rank, n, stores):
    """ProcessGroup.abort() ends the communicator at once with work in flight (a rank that
    never joins the call), and the rank can go on."""
    import time
    import torch
    import torch.distributed as dist
    _init(rank, n, stores[0])
    if rank == 0:
        w = dist.all_reduce(torch.ones(8), async_op=True)
        time.sleep(0.2)
        t0 = time.time()
        dist.group.WORLD.abort()
        try:
            w.wait()
            raise AssertionError("the aborted all-reduce completed")
        except Exception as e:
            assert "abort" in str(e).lower() or "ERR_" in str(e), e
        assert time.time() - t0 < 10
    os._exit(0)


def check_device_mesh(rank, n, stores):
    """A 2-D DeviceMesh on CPU over tutti: all-reduce along each dimension."""
    import torch
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    _init(rank, n, stores[0])
    mesh = init_device_mesh("cpu", (2, n // 2), mesh_dim_names=("dp", "tp"))
    for dim in ("dp", "tp"):
        g = mesh.get_group(dim)
        t = torch.full((2,), float(rank))
        dist.all_reduce(t, group=g)
        members = dist.get_process_group_ranks(g)
        assert (t == sum(members)).all(), (dim, t, members)
    dist.destroy_process_group()


def _stores():
    import tempfile
    d = tempfile.mkdtemp(prefix="tutti-torch2-")
    return [os.path.join(d, f"store{i}") for i in range(2)]


if __name__ == "__main__":
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    try:
        import torch
        major = int(torch.__version__.split(".")[0])
    except ImportError:
        major = None
    if major is None or major < 2:
        print(f"SKIP: {sys.executable} has torch {torch.__version__ if major else 'none'}: these "
              "checks need torch 2.x")
        sys.exit(77)
    checks = [("mixed_group", check_mixed_group), ("new_names", check_new_names),
              ("work", check_work), ("monitored_barrier", check_monitored_barrier),
              ("groups", check_groups), ("abort", check_abort),
              ("device_mesh", check_device_mesh)]
    only = sys.argv[1:]
    harness.main([(name, fn, N, _stores) for name, fn in checks if not only or name in only],
                 need=("torch",))
