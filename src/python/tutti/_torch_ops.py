"""_torch_ops.py - what the torch backend (torch_backend.py) maps between torch and tutti: its
reduce ops (PREMUL_SUM's factor included), its options objects and its tensors' layouts."""
import torch
import torch.distributed as dist

import tutti

TORCH_MAJOR = int(torch.__version__.split(".")[0])


def premul_factor(reduce_op, what):
    """The factor of torch's PREMUL_SUM op (dist._make_nccl_premul_sum): a number, or a
    one-element tensor. torch 2.x pickles a ReduceOp with its factor (__getstate__); torch 1.13
    keeps it in C++ only, where a Python backend cannot read it."""
    state = None
    if TORCH_MAJOR >= 2 and hasattr(reduce_op, "__getstate__"):
        state = reduce_op.__getstate__()
    if isinstance(state, tuple) and len(state) >= 2 and state[1] is not None:
        factor = state[1]
        return factor.item() if isinstance(factor, torch.Tensor) else float(factor)
    raise ValueError(f"tutti backend: {what}: PREMUL_SUM's factor cannot be read by a Python "
                     f"backend on torch {torch.__version__} (torch 2.x passes it); scale the "
                     "tensor and use SUM")


def op_of(reduce_op, what, comm=None, dtype=None):
    """tutti's op for torch's: a tutti_op_t, or for PREMUL_SUM a tutti.PremulSum made on comm
    for dtype (the caller destroys it when the call is done)."""
    R = dist.ReduceOp
    for torch_op, op in ((R.SUM, tutti.SUM), (R.PRODUCT, tutti.PROD), (R.MIN, tutti.MIN),
                         (R.MAX, tutti.MAX), (R.AVG, tutti.AVG), (R.BAND, tutti.BAND),
                         (R.BOR, tutti.BOR), (R.BXOR, tutti.BXOR)):
        if reduce_op == torch_op:
            return op
    if reduce_op == R.PREMUL_SUM and comm is not None:
        return comm.premul_sum(premul_factor(reduce_op, what), dtype)
    raise ValueError(f"tutti backend: {what}: reduce op {reduce_op} is not supported "
                     "(SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR, BXOR and PREMUL_SUM are)")


def field(opts, name, default):
    """A field of torch's options object (torch always passes one; None means defaults)."""
    return default if opts is None else getattr(opts, name)


def unpack(flat, tensors, at=0):
    """Copy flat's elements, from `at` on, into the tensors, one after the other."""
    for t in tensors:
        t.copy_(flat[at:at + t.numel()].view_as(t))
        at += t.numel()


def contiguous_like(t):
    """A contiguous tensor shaped as t, to receive into before copying to t."""
    return torch.empty_like(t, memory_format=torch.contiguous_format)


def one(tensors, what):
    if len(tensors) != 1:
        raise ValueError(f"tutti backend: {what} takes one tensor per rank, not {len(tensors)}")
    return tensors[0]
