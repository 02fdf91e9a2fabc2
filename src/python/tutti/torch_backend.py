"""torch_backend.py - tutti as a torch.distributed backend named "tutti" (CPU tensors).

    import torch.distributed as dist
    import tutti.torch_backend            # registers "tutti"
    dist.init_process_group("tutti", rank=r, world_size=n, init_method=...)  # or torchrun's env
    dist.init_process_group("cpu:tutti,cuda:nccl")   # torch 2.x: tutti for CPU tensors

On torch 2.x (checked on 2.15) the group's CPU backend is a TuttiBackend (a torch Backend,
registered for device "cpu"), so tutti serves CPU tensors inside any group, beside NCCL for
CUDA ones; on torch 1.13 the same class is a whole Python ProcessGroup. Rank 0 makes a tutti
unique id and hands it to the others through the group's store (_torch_store.py: sealed with
TUTTI_SECRET when one is set); every call issues tutti requests (tutti_i*) under the group's
lock and returns at once with a Work over a future; one completion thread per group waits for
the requests in issue order, copies results where a call needs it, and completes the future (or
fails it with the tutti.Error, which Work.wait() raises) (_torch_engine.py). So
DistributedDataParallel's bucket all-reduces overlap its backward pass as with Gloo.

Calls: allreduce, allreduce_coalesced, broadcast, reduce, allgather (equal or uneven
tensors: tutti_allgatherv), allgather_coalesced, _allgather_base (all_gather_into_tensor),
gather and scatter (tutti_gather / tutti_scatter, their v forms for uneven tensors),
reduce_scatter, _reduce_scatter_base (reduce_scatter_tensor), alltoall and alltoall_base
(all_to_all_single: tutti_alltoall for even splits, tutti_alltoallv for uneven ones, exactly the
split sizes moved, no padding), send, recv, barrier. Ops: SUM, PRODUCT, MIN, MAX, AVG, BAND,
BOR, BXOR, and PREMUL_SUM where torch lets a Python backend read its factor (torch 2.x; 1.13
keeps it in C++). Tensors of every dtype tutti has: the integer types, bool, float16, bfloat16,
float32, float64 and torch 2.x's uint16/32/64 and float8. Sends and receives are batched until
one of them is waited for (or another call comes) and run as one tutti group, so isend/irecv
pairs and batch_isend_irecv exchanges cannot deadlock on large messages. monitored_barrier runs as Gloo's does
(rank 0 names the ranks that did not arrive), through the group's store; Work.wait(timeout)
raises "Timed out" when the timeout passes; split_group, new_subgroups and shrink_group
(torch 2.15) make communicators with tutti_comm_split and tutti_comm_shrink, abort() and
shutdown() end the communicator. Refused with a clear error: recv from any source, non-CPU
tensors. Message tags
are ignored: tutti matches a peer's sends and receives in order.

A timeout's error reads "tutti backend: Timed out (ERR_TIMEOUT: ...)", as torch's own backends
say it (its tests match " (Timed out|closed|timeout) "); it is still a tutti.Error. A group that
is still alive when the interpreter exits (a rank that leaves on an error path without
destroy_process_group) is closed by an atexit handler while Python still works: its
communicator is destroyed, or aborted when work is still in flight (a peer that is gone would
hold a destroy until tutti's timeout).
"""
import torch.distributed as dist

from . import _torch_patches
from ._torch_group import BACKEND, IS_BACKEND, ProcessGroupTutti, TuttiBackend  # noqa: F401
from ._torch_store import join


def _create(store, rank, world_size, timeout):
    return TuttiBackend(join(store, rank, world_size, timeout), store, timeout)


def register():
    """Make "tutti" a torch.distributed backend (done on import; safe to call again)."""
    if BACKEND.upper() in dist.Backend._plugins:
        return
    if IS_BACKEND:
        _torch_patches.apply()
        dist.Backend.register_backend(BACKEND, _create, devices=["cpu"])
    else:
        dist.Backend.register_backend(BACKEND, _create)


register()
