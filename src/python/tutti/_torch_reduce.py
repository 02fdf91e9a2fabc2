"""_torch_reduce.py - the reductions of the torch backend (torch_backend.py): all-reduce,
reduce and reduce-scatter in every form torch 1.13 to 2.15 calls, each one tutti call (a
coalesced form packs its tensors into one buffer, or issues one request per dtype)."""
import torch
import torch.distributed as dist

import tutti

from ._torch_ops import field, one, op_of, unpack


def _flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors]) if tensors else torch.empty(0)


class ReduceMethods:
    """Mixed into TuttiBackend (_torch_group.py): self._comm, self._engine, self.size()."""

    def _reduction(self, opts, what, dtype, issue, outputs, finish=None):
        """Submit a reduction with torch's op from opts: a PremulSum made for it is released
        once the call is done."""
        op = op_of(field(opts, "reduceOp", dist.ReduceOp.SUM), what, self._comm, dtype)
        if not isinstance(op, tutti.PremulSum):
            return self._engine.submit(lambda: issue(op), outputs, finish)

        def done():
            try:
                if finish is not None:
                    finish()
            finally:
                op.destroy()
        return self._engine.submit(lambda: issue(op), outputs, done)

    def allreduce(self, tensors, opts=None):
        if any(t.is_sparse for t in tensors):
            return self._sparse_allreduce(tensors, opts)
        return self._reduction(
            opts, "allreduce", tensors[0].dtype if tensors else None,
            lambda op: [self._comm.allreduce(t, op=op, async_op=True) for t in tensors], tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        if len({t.dtype for t in tensors}) > 1:
            raise TypeError("tutti backend: allreduce_coalesced needs tensors of one dtype")
        flat = _flat(tensors)
        return self._reduction(
            opts, "allreduce_coalesced", flat.dtype,
            lambda op: [self._comm.allreduce(flat, op=op, async_op=True)], tensors,
            lambda: unpack(flat, tensors))

    def reduce(self, tensors, opts=None):
        t = one(tensors, "reduce")
        root = field(opts, "rootRank", 0)
        return self._reduction(
            opts, "reduce", t.dtype,
            lambda op: [self._comm.reduce(t, root, op=op, async_op=True)], tensors)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        """The list form: rank r gets the reduction of every rank's input_tensors[0][r]; blocks
        of different sizes go through tutti_reduce_scatterv."""
        out = one(output_tensors, "reduce_scatter")
        ins = one(input_tensors, "reduce_scatter")
        if len(ins) != self.size() or ins[self.rank()].numel() != out.numel():
            raise ValueError(f"tutti backend: reduce_scatter needs {self.size()} input tensors, "
                             f"the one at this rank's index of {out.numel()} elements")
        flat = _flat(ins)
        counts = [t.numel() for t in ins]
        dst = out if out.is_contiguous() else torch.empty(out.numel(), dtype=out.dtype)
        finish = None if dst is out else (lambda: out.copy_(dst.view_as(out)))
        if len(set(counts)) == 1:  # equal blocks: the plain reduce-scatter
            return self._reduction(
                opts, "reduce_scatter", out.dtype,
                lambda op: [self._comm.reduce_scatter(flat, dst, op=op, async_op=True)],
                output_tensors, finish)
        return self._reduction(  # uneven blocks: tutti_reduce_scatterv
            opts, "reduce_scatter", out.dtype,
            lambda op: [self._comm.reduce_scatterv(flat, dst, counts, op=op, async_op=True)],
            output_tensors, finish)

    def _reduce_scatter_base(self, output, input, opts=None):
        """reduce_scatter_tensor: input holds size() blocks of output's size."""
        return self._reduction(
            opts, "reduce_scatter_tensor", output.dtype,
            lambda op: [self._comm.reduce_scatter(input, output, op=op, async_op=True)],
            [output])

    reduce_scatter_single = _reduce_scatter_base  # its name on torch 2.15's Backend

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        """Several reduce_scatter_tensor calls as one: every input's block r packed side by
        side, one reduce-scatter, the result split back (one request per dtype)."""
        if len(outputs) != len(inputs):
            raise ValueError("tutti backend: reduce_scatter_tensor_coalesced needs as many "
                             "outputs as inputs")
        n = self.size()
        for o, i in zip(outputs, inputs):
            if i.numel() != n * o.numel():
                raise ValueError(f"tutti backend: reduce_scatter_tensor_coalesced: an input of "
                                 f"{i.numel()} elements for an output of {o.numel()} "
                                 f"({n} ranks)")
        groups = {}
        for o, i in zip(outputs, inputs):
            groups.setdefault(o.dtype, []).append((o, i))
        packed = []
        for dtype, pairs in groups.items():
            src = torch.cat([i.reshape(n, -1) for _, i in pairs], dim=1).reshape(-1)
            dst = torch.empty(src.numel() // n, dtype=dtype)
            packed.append((dtype, src, dst, [o for o, _ in pairs]))

        def finish():
            for _, _, dst, outs in packed:
                unpack(dst, outs)
        first = packed[0][0] if packed else None
        return self._reduction(
            opts, "reduce_scatter_tensor_coalesced", first,
            lambda op: [self._comm.reduce_scatter(src, dst, op=op, async_op=True)
                        for _, src, dst, _ in packed], outputs, finish)

    reduce_scatter_single_coalesced = reduce_scatter_tensor_coalesced  # torch 2.15's name

    def _sparse_allreduce(self, tensors, opts):
        """SUM of sparse COO tensors (as Gloo): every rank's indices and values gathered
        (tutti_allgather of the sizes, then tutti_allgatherv), summed, written back. Blocking:
        the sizes decide the second call."""
        if field(opts, "reduceOp", dist.ReduceOp.SUM) != dist.ReduceOp.SUM:
            raise ValueError("tutti backend: a sparse all-reduce supports SUM only")
        t = one(tensors, "sparse allreduce").coalesce()
        n, comm = self.size(), self._comm

        def gather(x):
            x = x.contiguous().reshape(-1)
            sizes = torch.empty(n, dtype=torch.int64)
            comm.allgather(torch.tensor([x.numel()], dtype=torch.int64), sizes)
            out = torch.empty(int(sizes.sum()), dtype=x.dtype)
            comm.allgatherv(x, out, sizes.tolist())
            return out

        def run():
            idx = gather(t.indices().t()).view(-1, t.sparse_dim()).t()  # rank by rank
            vals = gather(t.values()).view(-1, *t.values().shape[1:])
            total = torch.sparse_coo_tensor(idx, vals, t.shape).coalesce()
            tensors[0].copy_(total)
        self._engine.run(run)
        return self._engine.submit(lambda: [], tensors)
