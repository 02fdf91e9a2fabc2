"""_torch_move.py - the data-movement calls of the torch backend (torch_backend.py):
broadcast, all-gather, gather, scatter, all-to-all (every form torch 1.13 to 2.15 calls, each
one tutti call: tensors of different sizes through the variable-size collectives, never
padded), and sends and receives, batched into tutti groups by the engine."""
import torch

from ._torch_ops import contiguous_like, field, one, unpack


class MoveMethods:
    """Mixed into TuttiBackend (_torch_group.py): self._comm, self._engine, self.size()."""

    def broadcast(self, tensors, opts=None):
        t = one(tensors, "broadcast")
        return self._engine.submit(
            lambda: [self._comm.broadcast(t, field(opts, "rootRank", 0), async_op=True)], tensors)

    def allgather(self, output_tensors, input_tensors, opts=None):
        """Every rank's tensor into every rank's list; tensors of different sizes (each rank's
        own output at its index must match its input) go through tutti_allgatherv."""
        outs = one(output_tensors, "allgather")
        inp = one(input_tensors, "allgather")
        if len(outs) != self.size() or outs[self.rank()].numel() != inp.numel():
            raise ValueError(f"tutti backend: allgather needs {self.size()} output tensors, "
                             f"the one at this rank's index of {inp.numel()} elements")
        counts = [o.numel() for o in outs]
        flat = torch.empty(sum(counts), dtype=inp.dtype)
        src = inp.contiguous()

        def finish():
            unpack(flat, outs)
        if len(set(counts)) == 1:
            return self._engine.submit(
                lambda: [self._comm.allgather(src, flat, async_op=True)], output_tensors, finish)
        return self._engine.submit(
            lambda: [self._comm.allgatherv(src, flat, counts, async_op=True)], output_tensors,
            finish)

    def allgather_coalesced(self, output_lists, input_list, opts=None):
        """Every rank's list of tensors to every rank: output_lists[r][i] is rank r's
        input_list[i]. One all-gather of the inputs packed end to end."""
        if len({t.dtype for t in input_list}) > 1:
            raise TypeError("tutti backend: allgather_coalesced needs tensors of one dtype")
        sizes = [t.numel() for t in input_list]
        if len(output_lists) != self.size() or any(
                [o.numel() for o in outs] != sizes for outs in output_lists):
            raise ValueError(f"tutti backend: allgather_coalesced needs {self.size()} output "
                             f"lists shaped as the input list ({sizes} elements)")
        flat = torch.cat([t.reshape(-1) for t in input_list]) if input_list else torch.empty(0)
        total = flat.numel()
        out = torch.empty(total * self.size(), dtype=flat.dtype)

        def finish():
            for r, outs in enumerate(output_lists):
                unpack(out, outs, r * total)
        return self._engine.submit(
            lambda: [self._comm.allgather(flat, out, async_op=True)], output_lists, finish)

    def _allgather_base(self, output, input, opts=None):
        return self._engine.submit(
            lambda: [self._comm.allgather(input, output, async_op=True)], [output])

    all_gather_single = _allgather_base  # all_gather_into_tensor's name on torch 2.15

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        """Several all_gather_into_tensor calls as one: the inputs packed end to end, one
        all-gather, every rank's part split back (one request per dtype)."""
        if len(outputs) != len(inputs):
            raise ValueError("tutti backend: allgather_into_tensor_coalesced needs as many "
                             "outputs as inputs")
        n = self.size()
        for o, i in zip(outputs, inputs):
            if o.numel() != n * i.numel():
                raise ValueError(f"tutti backend: allgather_into_tensor_coalesced: an output of "
                                 f"{o.numel()} elements for an input of {i.numel()} ({n} ranks)")
        groups = {}
        for o, i in zip(outputs, inputs):
            groups.setdefault(o.dtype, []).append((o, i))
        packed = []
        for dtype, pairs in groups.items():
            src = torch.cat([i.reshape(-1) for _, i in pairs])
            dst = torch.empty(src.numel() * n, dtype=dtype)
            packed.append((src, dst, pairs))

        def finish():
            for src, dst, pairs in packed:
                rows, at = dst.view(n, -1), 0
                for o, i in pairs:
                    o.view(n, -1).copy_(rows[:, at:at + i.numel()])
                    at += i.numel()
        return self._engine.submit(
            lambda: [self._comm.allgather(src, dst, async_op=True) for src, dst, _ in packed],
            outputs, finish)

    all_gather_single_coalesced = allgather_into_tensor_coalesced  # torch 2.15's name

    def gather_single(self, output, input, opts=None):
        """Every rank's input into one tensor at the root (rank r's at r x its size)."""
        root = field(opts, "rootRank", 0)
        src = input.contiguous()
        if self.rank() != root:
            return self._engine.submit(
                lambda: [self._comm.gather(src, None, root=root, async_op=True)], [output])
        if output.numel() != self.size() * src.numel():
            raise ValueError(f"tutti backend: gather into a tensor needs {self.size()} x "
                             f"{src.numel()} elements at the root, not {output.numel()}")
        dst = output if output.is_contiguous() else contiguous_like(output)
        finish = None if dst is output else (lambda: output.copy_(dst))
        return self._engine.submit(
            lambda: [self._comm.gather(src, dst, root=root, async_op=True)], [output], finish)

    gather_into_tensor = gather_single

    def gather(self, output_tensors, input_tensors, opts=None):
        """Every rank's tensor into root's list: tutti_gather, or tutti_gatherv when the
        tensors differ in size (the root knows every size from its list)."""
        inp, root = one(input_tensors, "gather").contiguous(), field(opts, "rootRank", 0)
        if self.rank() != root:  # sizes are the root's to know: gatherv works for both
            return self._engine.submit(
                lambda: [self._comm.gatherv(inp, None, None, root=root, async_op=True)],
                output_tensors)
        outs = one(output_tensors, "gather")
        counts = [o.numel() for o in outs]
        flat = torch.empty(sum(counts), dtype=inp.dtype)

        return self._engine.submit(
            lambda: [self._comm.gatherv(inp, flat, counts, root=root, async_op=True)],
            output_tensors, lambda: unpack(flat, outs))

    def scatter(self, output_tensors, input_tensors, opts=None):
        """Root's list to the ranks, one tensor each (tutti_scatterv: any sizes)."""
        out, root = one(output_tensors, "scatter"), field(opts, "rootRank", 0)
        dst = out if out.is_contiguous() else contiguous_like(out)
        finish = None if dst is out else (lambda: out.copy_(dst))
        if self.rank() != root:
            return self._engine.submit(
                lambda: [self._comm.scatterv(None, dst, root=root, async_op=True)],
                output_tensors, finish)
        ins = one(input_tensors, "scatter")
        flat = torch.cat([t.reshape(-1) for t in ins])
        counts = [t.numel() for t in ins]
        return self._engine.submit(
            lambda: [self._comm.scatterv(flat, dst, counts, root=root, async_op=True)],
            output_tensors, finish)

    def _alltoall_blocks(self, send_blocks, recv_blocks, outputs):
        """All-to-all of blocks of any sizes through tutti_alltoallv: exactly the blocks'
        elements move (no padding); the blocks are packed end to end and unpacked after."""
        dtype = send_blocks[0].dtype
        sendbuf = torch.cat([b.reshape(-1) for b in send_blocks])
        scounts = [b.numel() for b in send_blocks]
        rcounts = [b.numel() for b in recv_blocks]
        recvbuf = torch.empty(sum(rcounts), dtype=dtype)

        return self._engine.submit(
            lambda: [self._comm.alltoallv(sendbuf, scounts, recvbuf, rcounts, async_op=True)],
            outputs, lambda: unpack(recvbuf, recv_blocks))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,
                      opts=None):
        """all_to_all_single: even splits with tutti_alltoall, uneven ones with
        tutti_alltoallv straight from the input into the output (counts and displacements in
        elements: split sizes times the elements of a row)."""
        n = self.size()
        if not output_split_sizes and not input_split_sizes:
            return self._engine.submit(
                lambda: [self._comm.alltoall(input, output, async_op=True)], [output])
        row_in = input[0].numel() if input.dim() > 0 and input.size(0) > 0 else 1
        row_out = output[0].numel() if output.dim() > 0 and output.size(0) > 0 else 1
        ins = input_split_sizes or [input.size(0) // n] * n
        outs = output_split_sizes or [output.size(0) // n] * n
        scounts = [k * row_in for k in ins]
        rcounts = [k * row_out for k in outs]
        src = input.contiguous()
        dst = output if output.is_contiguous() else contiguous_like(output)
        finish = None if dst is output else (lambda: output.copy_(dst))
        return self._engine.submit(
            lambda: [self._comm.alltoallv(src, scounts, dst, rcounts, async_op=True)], [output],
            finish)

    all_to_all_single = alltoall_base  # its name on torch 2.15's Backend

    def alltoall(self, output_tensors, input_tensors, opts=None):
        if len(output_tensors) != self.size() or len(input_tensors) != self.size():
            raise ValueError(f"tutti backend: alltoall takes {self.size()} input and output "
                             "tensors")
        return self._alltoall_blocks([t.contiguous() for t in input_tensors],
                                     list(output_tensors), output_tensors)

    # ---- point to point ----
    def send(self, tensors, dstRank, tag=0):
        return self._engine.p2p(True, one(tensors, "send"), dstRank)

    def recv(self, tensors, srcRank, tag=0):
        return self._engine.p2p(False, one(tensors, "recv"), srcRank)

    def recv_anysource(self, tensors, tag=0):
        raise RuntimeError("tutti backend: receiving from any source is not supported (tutti "
                           "matches messages by peer); pass src")
