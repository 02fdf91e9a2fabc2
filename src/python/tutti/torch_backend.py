"""torch_backend.py - tutti as a torch.distributed backend named "tutti" (CPU tensors).

    import torch.distributed as dist
    import tutti.torch_backend            # registers "tutti"
    dist.init_process_group("tutti", rank=r, world_size=n, init_method=...)  # or torchrun's env

A Python ProcessGroup (torch's c10d trampoline, checked on torch 1.13): rank 0 makes a tutti
unique id and hands it to the others through the process group's store, sealed with a key
derived from TUTTI_SECRET (or TUTTI_SECRET_FILE) when one is set (_seal below: whoever can read
the store learns no usable secret, and a rank with another secret is told so); every call issues
tutti requests (tutti_i*) under the group's lock and returns at once with a Work over a
future; one completion thread per group waits for the requests in issue order (tutti runs
each communicator's operations in that order), copies results where a call needs it, and
completes the future (or fails it with the tutti.Error, which Work.wait() raises). So
DistributedDataParallel's bucket all-reduces overlap its backward pass as with Gloo.

Why a Work subclass and not torch's _create_work_from_future: on torch 1.13 the latter's
wait() returns True even when the future failed, so a failed collective would go unnoticed.
A Python Work is only reached from C++ while its Python object lives (pybind11 finds the
override through the live instance; without it C++ falls back to the base wait(), which never
returns), so the group keeps each Work until it has completed and 1024 newer ones exist.

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
pairs and batch_isend_irecv exchanges cannot deadlock on large messages. Refused with a clear
error: recv from any source, monitored_barrier, non-CPU or non-contiguous tensors. Message tags
are ignored: tutti matches a peer's sends and receives in order.

A timeout's error reads "tutti backend: Timed out (ERR_TIMEOUT: ...)", as torch's own backends
say it (its tests match " (Timed out|closed|timeout) "); it is still a tutti.Error. A group that
is still alive when the interpreter exits (a rank that leaves on an error path without
destroy_process_group) is closed by an atexit handler while Python still works: its
communicator is destroyed, or aborted when work is still in flight (a peer that is gone would
hold a destroy until tutti's timeout).
"""
import atexit
import collections
import datetime
import hashlib
import hmac
import os
import queue
import stat
import string
import threading
import warnings
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup, Work

import tutti

BACKEND = "tutti"


def _premul_factor(reduce_op, what):
    """The factor of torch's PREMUL_SUM op (dist._make_nccl_premul_sum): a number, or a
    one-element tensor. torch 2.x pickles a ReduceOp with its factor (__getstate__); torch 1.13
    keeps it in C++ only, where a Python backend cannot read it."""
    state = None
    major = int(torch.__version__.split(".")[0])
    if major >= 2 and hasattr(reduce_op, "__getstate__"):
        state = reduce_op.__getstate__()
    if isinstance(state, tuple) and len(state) >= 2 and state[1] is not None:
        factor = state[1]
        return factor.item() if isinstance(factor, torch.Tensor) else float(factor)
    raise ValueError(f"tutti backend: {what}: PREMUL_SUM's factor cannot be read by a Python "
                     f"backend on torch {torch.__version__} (torch 2.x passes it); scale the "
                     "tensor and use SUM")


def _op(reduce_op, what, comm=None, dtype=None):
    """tutti's op for torch's: a tutti_op_t, or for PREMUL_SUM a tutti.PremulSum made on comm
    for dtype (the caller destroys it when the call is done)."""
    R = dist.ReduceOp
    for torch_op, op in ((R.SUM, tutti.SUM), (R.PRODUCT, tutti.PROD), (R.MIN, tutti.MIN),
                         (R.MAX, tutti.MAX), (R.AVG, tutti.AVG), (R.BAND, tutti.BAND),
                         (R.BOR, tutti.BOR), (R.BXOR, tutti.BXOR)):
        if reduce_op == torch_op:
            return op
    if reduce_op == R.PREMUL_SUM and comm is not None:
        return comm.premul_sum(_premul_factor(reduce_op, what), dtype)
    raise ValueError(f"tutti backend: {what}: reduce op {reduce_op} is not supported "
                     "(SUM, PRODUCT, MIN, MAX, AVG, BAND, BOR, BXOR and PREMUL_SUM are)")


def _field(opts, name, default):
    """A field of torch's options object (torch always passes one; None means defaults)."""
    return default if opts is None else getattr(opts, name)


def _unpack(flat, tensors, at=0):
    """Copy flat's elements, from `at` on, into the tensors, one after the other."""
    for t in tensors:
        t.copy_(flat[at:at + t.numel()].view_as(t))
        at += t.numel()


def _contiguous_like(t):
    """A contiguous tensor shaped as t, to receive into before copying to t."""
    return torch.empty_like(t, memory_format=torch.contiguous_format)


def _one(tensors, what):
    if len(tensors) != 1:
        raise ValueError(f"tutti backend: {what} takes one tensor per rank, not {len(tensors)}")
    return tensors[0]


class _Work(Work):
    """torch's Work over a future: wait() raises the operation's error; get_future() for
    DDP's communication hooks."""

    def __init__(self, fut, engine=None):
        super().__init__()
        self._fut = fut
        self._engine = engine  # set for sends and receives, which wait to be batched

    def _start(self):
        if self._engine is not None:
            self._engine.flush()

    def wait(self, timeout=None):
        self._start()
        self._fut.wait()  # raises the tutti.Error of a failed operation
        return True

    def get_future(self):
        self._start()
        return self._fut

    def is_completed(self):
        self._start()
        return self._fut.done()

    def is_success(self):
        if not self._fut.done():
            raise RuntimeError("tutti backend: is_success() on a work still running")
        try:
            self._fut.wait()
            return True
        except Exception:
            return False

    def result(self):
        return self._fut.wait()


KEEP_WORKS = 1024  # completed Works kept reachable from C++ (see the module's docstring)


def _torch_error(e):
    """The exception a Work fails with: a timeout worded as torch's backends word it."""
    if isinstance(e, tutti.Error) and e.status == "ERR_TIMEOUT" and e.args:
        e.args = (f"tutti backend: Timed out ({e.args[0]})",) + e.args[1:]
    return e


_live_engines = weakref.WeakSet()  # closed at exit (_close_at_exit) if still open


@atexit.register
def _close_at_exit():
    for engine in list(_live_engines):
        engine.close(at_exit=True)


class _Engine:
    """The communicator, the lock under which requests are issued, and the completion thread.
    The thread holds this object, not the process group, so the group can be collected."""

    def __init__(self, comm):
        self.comm = comm
        self.lock = threading.Lock()
        self.pending = queue.SimpleQueue()
        self.works = collections.deque()
        self.batch = []  # sends and receives not yet issued (p2p())
        self.closed = False
        self.busy = 0  # submitted requests not yet completed (the completion thread's count)
        self.thread = threading.Thread(target=self._complete, name="tutti-completion",
                                       daemon=True)
        self.thread.start()
        _live_engines.add(self)

    def submit(self, issue, outputs, finish=None):
        """Run issue() (which returns requests) under the lock; the Work completes with
        `outputs` once they are done and finish() ran."""
        fut = torch.futures.Future()
        work = _Work(fut)
        with self.lock:
            self._flush_locked()  # sends and receives issued before go first
            reqs = issue()
            self.busy += 1
            self.pending.put((reqs, finish, outputs, fut))
            self._keep(work)
        return work

    def p2p(self, is_send, tensor, peer):
        """A send or receive. It waits in a batch until a Work of the batch is waited for (or
        another call comes): the batch then runs as one tutti group, so a rank's sends and
        receives are in flight together (a ring exchange cannot deadlock), which separate
        tutti requests, run one after the other, would not be."""
        fut = torch.futures.Future()
        work = _Work(fut, self)
        with self.lock:
            self.batch.append((is_send, tensor, peer, fut))
            self._keep(work)
        return work

    def flush(self):
        with self.lock:
            self._flush_locked()

    def _flush_locked(self):
        if self.batch:
            self.busy += 1
            self.pending.put(("group", self.batch))
            self.batch = []

    def _keep(self, work):
        self.works.append(work)
        # the future itself: is_completed() would flush, taking the lock the caller holds
        while len(self.works) > KEEP_WORKS and self.works[0]._fut.done():
            self.works.popleft()

    def _run_group(self, batch):
        """A batch of sends and receives as one blocking tutti group, the lock held (no other
        call may drive the communicator meanwhile); every Work of it completes."""
        error = None
        with self.lock:
            try:
                with tutti.group():
                    for is_send, tensor, peer, _ in batch:
                        (self.comm.send if is_send else self.comm.recv)(tensor, peer)
            except Exception as e:
                error = _torch_error(e)
            self.busy -= 1  # before the futures: a waiter may exit at once (close(at_exit))
        for _, tensor, _, fut in batch:
            fut.set_exception(error) if error is not None else fut.set_result([tensor])

    def _complete(self):
        while True:
            item = self.pending.get()
            if item is None:
                return
            if item[0] == "group":
                self._run_group(item[1])
                continue
            reqs, finish, outputs, fut = item
            error = None
            try:
                for r in reqs:
                    r.wait()
                if finish is not None:
                    finish()
            except Exception as e:  # the caller's wait() raises it
                error = _torch_error(e)
            with self.lock:
                self.busy -= 1  # before the future: a waiter may exit at once (close(at_exit))
            fut.set_exception(error) if error is not None else fut.set_result(outputs)

    def close(self, at_exit=False):
        """Stop the thread once the issued work is done, then free the communicator. At exit,
        work still in flight is aborted instead: its peers may be gone."""
        if self.closed:
            return
        self.closed = True
        _live_engines.discard(self)
        with self.lock:
            in_flight = self.busy > 0 or bool(self.batch)
        if at_exit and in_flight:
            self.comm.abort()  # fails what is in flight; the thread then drains the queue
        self.flush()
        self.pending.put(None)
        if threading.current_thread() is self.thread:
            return  # the last reference was dropped by a completion: leave the comm to exit
        self.thread.join()
        if not (at_exit and in_flight):
            self.comm.destroy()


class ProcessGroupTutti(ProcessGroup):
    """A torch.distributed process group over one tutti communicator."""

    def __init__(self, comm):
        super().__init__(comm.rank, comm.size)
        self._engine = _Engine(comm)
        self._comm = comm

    def getBackendName(self):
        return BACKEND

    def __del__(self):
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.close()

    # ---- reductions ----
    def _reduction(self, opts, what, dtype, issue, outputs, finish=None):
        """Submit a reduction with torch's op from opts: a PremulSum made for it is released
        once the call is done."""
        op = _op(_field(opts, "reduceOp", dist.ReduceOp.SUM), what, self._comm, dtype)
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
        return self._reduction(
            opts, "allreduce", tensors[0].dtype if tensors else None,
            lambda op: [self._comm.allreduce(t, op=op, async_op=True) for t in tensors], tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        if len({t.dtype for t in tensors}) > 1:
            raise TypeError("tutti backend: allreduce_coalesced needs tensors of one dtype")
        flat = torch.cat([t.reshape(-1) for t in tensors])
        return self._reduction(
            opts, "allreduce_coalesced", flat.dtype,
            lambda op: [self._comm.allreduce(flat, op=op, async_op=True)], tensors,
            lambda: _unpack(flat, tensors))

    def reduce(self, tensors, opts=None):
        t = _one(tensors, "reduce")
        root = _field(opts, "rootRank", 0)
        return self._reduction(
            opts, "reduce", t.dtype,
            lambda op: [self._comm.reduce(t, root, op=op, async_op=True)], tensors)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        out = _one(output_tensors, "reduce_scatter")
        ins = _one(input_tensors, "reduce_scatter")
        flat = torch.cat([t.reshape(-1) for t in ins])
        counts = [t.numel() for t in ins]
        if len(set(counts)) == 1:  # equal blocks: the plain reduce-scatter
            return self._reduction(
                opts, "reduce_scatter", out.dtype,
                lambda op: [self._comm.reduce_scatter(flat, out, op=op, async_op=True)],
                output_tensors)
        return self._reduction(  # uneven blocks: tutti_reduce_scatterv
            opts, "reduce_scatter", out.dtype,
            lambda op: [self._comm.reduce_scatterv(flat, out, counts, op=op, async_op=True)],
            output_tensors)

    def _reduce_scatter_base(self, output, input, opts=None):
        return self._reduction(
            opts, "reduce_scatter_tensor", output.dtype,
            lambda op: [self._comm.reduce_scatter(input, output, op=op, async_op=True)],
            [output])

    # ---- data movement ----
    def broadcast(self, tensors, opts=None):
        t = _one(tensors, "broadcast")
        return self._engine.submit(
            lambda: [self._comm.broadcast(t, _field(opts, "rootRank", 0), async_op=True)], tensors)

    def allgather(self, output_tensors, input_tensors, opts=None):
        """Every rank's tensor into every rank's list; tensors of different sizes (each rank's
        own output at its index must match its input) go through tutti_allgatherv."""
        outs = _one(output_tensors, "allgather")
        inp = _one(input_tensors, "allgather")
        if len(outs) != self.size() or outs[self.rank()].numel() != inp.numel():
            raise ValueError(f"tutti backend: allgather needs {self.size()} output tensors, "
                             f"the one at this rank's index of {inp.numel()} elements")
        counts = [o.numel() for o in outs]
        flat = torch.empty(sum(counts), dtype=inp.dtype)
        src = inp.contiguous()

        def finish():
            _unpack(flat, outs)
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
                _unpack(out, outs, r * total)
        return self._engine.submit(
            lambda: [self._comm.allgather(flat, out, async_op=True)], output_lists, finish)

    def _allgather_base(self, output, input, opts=None):
        return self._engine.submit(
            lambda: [self._comm.allgather(input, output, async_op=True)], [output])

    def gather(self, output_tensors, input_tensors, opts=None):
        """Every rank's tensor into root's list: tutti_gather, or tutti_gatherv when the
        tensors differ in size (the root knows every size from its list)."""
        inp, root = _one(input_tensors, "gather").contiguous(), _field(opts, "rootRank", 0)
        if self.rank() != root:  # sizes are the root's to know: gatherv works for both
            return self._engine.submit(
                lambda: [self._comm.gatherv(inp, None, None, root=root, async_op=True)],
                output_tensors)
        outs = _one(output_tensors, "gather")
        counts = [o.numel() for o in outs]
        flat = torch.empty(sum(counts), dtype=inp.dtype)

        return self._engine.submit(
            lambda: [self._comm.gatherv(inp, flat, counts, root=root, async_op=True)],
            output_tensors, lambda: _unpack(flat, outs))

    def scatter(self, output_tensors, input_tensors, opts=None):
        """Root's list to the ranks, one tensor each (tutti_scatterv: any sizes)."""
        out, root = _one(output_tensors, "scatter"), _field(opts, "rootRank", 0)
        dst = out if out.is_contiguous() else _contiguous_like(out)
        finish = None if dst is out else (lambda: out.copy_(dst))
        if self.rank() != root:
            return self._engine.submit(
                lambda: [self._comm.scatterv(None, dst, root=root, async_op=True)],
                output_tensors, finish)
        ins = _one(input_tensors, "scatter")
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
            outputs, lambda: _unpack(recvbuf, recv_blocks))

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
        dst = output if output.is_contiguous() else _contiguous_like(output)
        finish = None if dst is output else (lambda: output.copy_(dst))
        return self._engine.submit(
            lambda: [self._comm.alltoallv(src, scounts, dst, rcounts, async_op=True)], [output],
            finish)

    def alltoall(self, output_tensors, input_tensors, opts=None):
        if len(output_tensors) != self.size() or len(input_tensors) != self.size():
            raise ValueError(f"tutti backend: alltoall takes {self.size()} input and output "
                             "tensors")
        return self._alltoall_blocks([t.contiguous() for t in input_tensors],
                                     list(output_tensors), output_tensors)

    # ---- point to point and barrier ----
    def send(self, tensors, dstRank, tag=0):
        return self._engine.p2p(True, _one(tensors, "send"), dstRank)

    def recv(self, tensors, srcRank, tag=0):
        return self._engine.p2p(False, _one(tensors, "recv"), srcRank)

    def recv_anysource(self, tensors, tag=0):
        raise RuntimeError("tutti backend: receiving from any source is not supported (tutti "
                           "matches messages by peer); pass src")

    def barrier(self, opts=None):
        return self._engine.submit(lambda: [self._comm.barrier(async_op=True)], [])

    def monitored_barrier(self, *args, **kwargs):
        raise RuntimeError("tutti backend: monitored_barrier is a Gloo feature; use barrier() "
                           "(a rank that stops calling is named in tutti's timeout error)")


_created = [0]  # process groups made in this process: each gets its own store key

# What rank 0 puts into the store: the id in the clear (no secret), or sealed.
_CLEAR, _SEALED = b"TUID-clear-1", b"TUID-sealed-1"
_NONCE = 16
_TAG = 32
_SECRET_FILE_MAX = 4096  # as the C library's TUTTI_SECRET_FILE (src/comm/launch.h)


def _secret_file(path):
    """The text of TUTTI_SECRET_FILE, with the C library's rules: opened without blocking, a
    regular file of 1 to 4096 bytes; anything else is an error naming the file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except OSError as e:
        raise ValueError(f"tutti backend: TUTTI_SECRET_FILE {path}: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"tutti backend: TUTTI_SECRET_FILE {path} is not a regular file")
        if st.st_size == 0 or st.st_size > _SECRET_FILE_MAX:
            raise ValueError(f"tutti backend: TUTTI_SECRET_FILE {path} has {st.st_size} bytes: "
                             "it must hold the job secret, 32 hex digits")
        return os.read(fd, _SECRET_FILE_MAX).decode("ascii", errors="replace")
    finally:
        os.close(fd)


def _job_secret():
    """The 16 bytes of TUTTI_SECRET, else of TUTTI_SECRET_FILE, else None (no secret)."""
    text, what = os.environ.get("TUTTI_SECRET", ""), "TUTTI_SECRET"
    if not text:
        path = os.environ.get("TUTTI_SECRET_FILE", "")
        if not path:
            return None
        text, what = _secret_file(path), f"TUTTI_SECRET_FILE {path}"
    text = text.strip()
    if len(text) != 32 or any(c not in string.hexdigits for c in text):
        raise ValueError(f"tutti backend: {what} must hold exactly 32 hex digits (128 bits)")
    return bytes.fromhex(text)


def _keys(secret):
    """Two keys from the job secret: one for the key stream, one for the tag."""
    return (hmac.new(secret, b"tutti-torch-store-enc", hashlib.sha256).digest(),
            hmac.new(secret, b"tutti-torch-store-mac", hashlib.sha256).digest())


def _stream(enc, nonce, key, n):
    """n bytes of HMAC-SHA-256 in counter mode over (nonce, store key, counter)."""
    out = b""
    for i in range((n + 31) // 32):
        out += hmac.new(enc, nonce + key + i.to_bytes(4, "big"), hashlib.sha256).digest()
    return out[:n]


def _seal(raw, secret, key):
    """Encrypt-then-MAC the unique id for the store: a fresh nonce, the id XORed with a key
    stream, and a tag over all of it and the store key (so an id cannot be moved to another
    group's key). Without the job secret, neither the id's secret nor its root can be read."""
    enc, mac = _keys(secret)
    nonce = os.urandom(_NONCE)
    body = bytes(a ^ b for a, b in zip(raw, _stream(enc, nonce, key, len(raw))))
    tag = hmac.new(mac, _SEALED + nonce + key + body, hashlib.sha256).digest()
    return _SEALED + nonce + body + tag


def _open(blob, secret, key):
    """The unique id out of what rank 0 stored, checked against this rank's secret."""
    if blob.startswith(_CLEAR):
        if secret is not None:
            raise ValueError("tutti backend: rank 0 put the unique id into torch's store in the "
                             "clear (it runs without TUTTI_SECRET) but this rank has "
                             "TUTTI_SECRET set: set the same TUTTI_SECRET on every rank")
        return blob[len(_CLEAR):]
    if not blob.startswith(_SEALED) or len(blob) < len(_SEALED) + _NONCE + _TAG:
        raise ValueError("tutti backend: what torch's store holds for the unique id is not "
                         "something tutti put there")
    if secret is None:
        raise ValueError("tutti backend: rank 0 sealed the unique id with its TUTTI_SECRET; "
                         "set the same TUTTI_SECRET on this rank")
    enc, mac = _keys(secret)
    nonce = blob[len(_SEALED):len(_SEALED) + _NONCE]
    body, tag = blob[len(_SEALED) + _NONCE:-_TAG], blob[-_TAG:]
    want = hmac.new(mac, _SEALED + nonce + key + body, hashlib.sha256).digest()
    if not hmac.compare_digest(tag, want):
        raise ValueError("tutti backend: the unique id in torch's store does not open with this "
                         "rank's TUTTI_SECRET (rank 0 has another TUTTI_SECRET, or the store "
                         "was changed)")
    return bytes(a ^ b for a, b in zip(body, _stream(enc, nonce, key, len(body))))


def _create(store, rank, world_size, timeout):
    key = f"tutti/unique_id/{_created[0]}"
    _created[0] += 1
    secret = _job_secret()
    if rank == 0:
        uid = tutti.UniqueId.new()
        if secret is None:
            warnings.warn("tutti backend: TUTTI_SECRET is not set, so the unique id goes into "
                          "torch's store as it is: whoever can read the store (torch's TCPStore "
                          "does not authenticate: anyone who can reach MASTER_ADDR:MASTER_PORT) "
                          "can join this group's communicator and read or change its data. Set "
                          "TUTTI_SECRET (32 hex digits) to the same value on every rank",
                          RuntimeWarning, stacklevel=2)
            store.set(key, _CLEAR + bytes(uid))
        else:
            store.set(key, _seal(bytes(uid), secret, key.encode()))
    else:
        uid = tutti.UniqueId(_open(store.get(key), secret, key.encode()))
    seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else None
    comm = tutti.Comm(world_size, uid, rank, timeout=seconds)
    return ProcessGroupTutti(comm)


def register():
    """Make "tutti" a torch.distributed backend (done on import; safe to call again)."""
    if BACKEND.upper() not in dist.Backend._plugins:
        dist.Backend.register_backend(BACKEND, _create)


register()
