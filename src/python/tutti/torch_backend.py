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

Calls: allreduce, allreduce_coalesced, broadcast, reduce, allgather, allgather_coalesced,
_allgather_base
(all_gather_into_tensor), gather, scatter, reduce_scatter, _reduce_scatter_base
(reduce_scatter_tensor), alltoall, alltoall_base (all_to_all_single, even or uneven splits),
send, recv, barrier. Ops: SUM, PRODUCT, MIN, MAX, AVG. Sends and receives are batched until one
of them is waited for (or another call comes) and run as one tutti group, so isend/irecv
pairs and batch_isend_irecv exchanges cannot deadlock on large messages. Refused with a clear error: recv from
any source, monitored_barrier, the bitwise ops and PREMUL_SUM, non-CPU or non-contiguous
tensors. Message tags are ignored: tutti matches a peer's sends and receives in order.

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


def _op(reduce_op, what):
    R = dist.ReduceOp
    for torch_op, op in ((R.SUM, tutti.SUM), (R.PRODUCT, tutti.PROD), (R.MIN, tutti.MIN),
                         (R.MAX, tutti.MAX), (R.AVG, tutti.AVG)):
        if reduce_op == torch_op:
            return op
    raise ValueError(f"tutti backend: {what}: reduce op {reduce_op} is not supported "
                     "(SUM, PRODUCT, MIN, MAX and AVG are)")


def _field(opts, name, default):
    """A field of torch's options object (torch always passes one; None means defaults)."""
    return default if opts is None else getattr(opts, name)


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
    def allreduce(self, tensors, opts=None):
        op = _op(_field(opts, "reduceOp", dist.ReduceOp.SUM), "allreduce")
        return self._engine.submit(
            lambda: [self._comm.allreduce(t, op=op, async_op=True) for t in tensors], tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        op = _op(_field(opts, "reduceOp", dist.ReduceOp.SUM), "allreduce_coalesced")
        if len({t.dtype for t in tensors}) > 1:
            raise TypeError("tutti backend: allreduce_coalesced needs tensors of one dtype")
        flat = torch.cat([t.reshape(-1) for t in tensors])

        def finish():
            off = 0
            for t in tensors:
                t.copy_(flat[off:off + t.numel()].view_as(t))
                off += t.numel()
        return self._engine.submit(
            lambda: [self._comm.allreduce(flat, op=op, async_op=True)], tensors, finish)

    def reduce(self, tensors, opts=None):
        t = _one(tensors, "reduce")
        op = _op(_field(opts, "reduceOp", dist.ReduceOp.SUM), "reduce")
        return self._engine.submit(
            lambda: [self._comm.reduce(t, _field(opts, "rootRank", 0), op=op, async_op=True)], tensors)

    def reduce_scatter(self, output_tensors, input_tensors, opts=None):
        out = _one(output_tensors, "reduce_scatter")
        flat = torch.cat([t.reshape(-1) for t in _one(input_tensors, "reduce_scatter")])
        op = _op(_field(opts, "reduceOp", dist.ReduceOp.SUM), "reduce_scatter")
        return self._engine.submit(
            lambda: [self._comm.reduce_scatter(flat, out, op=op, async_op=True)],
            output_tensors)

    def _reduce_scatter_base(self, output, input, opts=None):
        op = _op(_field(opts, "reduceOp", dist.ReduceOp.SUM), "reduce_scatter_tensor")
        return self._engine.submit(
            lambda: [self._comm.reduce_scatter(input, output, op=op, async_op=True)], [output])

    # ---- data movement ----
    def broadcast(self, tensors, opts=None):
        t = _one(tensors, "broadcast")
        return self._engine.submit(
            lambda: [self._comm.broadcast(t, _field(opts, "rootRank", 0), async_op=True)], tensors)

    def allgather(self, output_tensors, input_tensors, opts=None):
        outs = _one(output_tensors, "allgather")
        inp = _one(input_tensors, "allgather")
        if len(outs) != self.size() or any(o.numel() != inp.numel() for o in outs):
            raise ValueError(f"tutti backend: allgather needs {self.size()} output tensors of "
                             f"{inp.numel()} elements")
        flat = torch.empty(inp.numel() * self.size(), dtype=inp.dtype)

        def finish():
            for i, o in enumerate(outs):
                o.copy_(flat[i * inp.numel():(i + 1) * inp.numel()].view_as(o))
        return self._engine.submit(
            lambda: [self._comm.allgather(inp, flat, async_op=True)], output_tensors, finish)

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
                off = r * total
                for o in outs:
                    o.copy_(out[off:off + o.numel()].view_as(o))
                    off += o.numel()
        return self._engine.submit(
            lambda: [self._comm.allgather(flat, out, async_op=True)], output_lists, finish)

    def _allgather_base(self, output, input, opts=None):
        return self._engine.submit(
            lambda: [self._comm.allgather(input, output, async_op=True)], [output])

    def gather(self, output_tensors, input_tensors, opts=None):
        inp, root = _one(input_tensors, "gather"), _field(opts, "rootRank", 0)

        def issue():
            if self.rank() != root:
                return [self._comm.send(inp, root, async_op=True)]
            outs = _one(output_tensors, "gather")
            outs[root].copy_(inp)
            return [self._comm.recv(outs[i], i, async_op=True)
                    for i in range(self.size()) if i != root]
        return self._engine.submit(issue, output_tensors)

    def scatter(self, output_tensors, input_tensors, opts=None):
        out, root = _one(output_tensors, "scatter"), _field(opts, "rootRank", 0)

        def issue():
            if self.rank() != root:
                return [self._comm.recv(out, root, async_op=True)]
            ins = _one(input_tensors, "scatter")
            out.copy_(ins[root])
            return [self._comm.send(ins[i], i, async_op=True)
                    for i in range(self.size()) if i != root]
        return self._engine.submit(issue, output_tensors)

    def _alltoall_blocks(self, send_blocks, recv_blocks, outputs):
        """All-to-all of flat blocks of any sizes: padded to the largest block of any rank (one
        all-reduce of the local largest first), one tutti all-to-all, then copied out."""
        n = self.size()
        dtype = send_blocks[0].dtype
        local = max([b.numel() for b in send_blocks + recv_blocks] + [0])
        top = torch.tensor([local], dtype=torch.int64)
        self._engine.submit(lambda: [self._comm.allreduce(top, op=tutti.MAX, async_op=True)],
                            [top]).wait()  # in issue order, like every call
        m = int(top.item())
        sendbuf = torch.zeros(n * m, dtype=dtype)
        recvbuf = torch.empty(n * m, dtype=dtype)
        for j, b in enumerate(send_blocks):
            sendbuf[j * m:j * m + b.numel()].copy_(b.reshape(-1))

        def finish():
            for j, b in enumerate(recv_blocks):
                b.copy_(recvbuf[j * m:j * m + b.numel()].view_as(b))
        return self._engine.submit(
            lambda: [self._comm.alltoall(sendbuf, recvbuf, async_op=True)], outputs, finish)

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes,
                      opts=None):
        n = self.size()
        if not output_split_sizes and not input_split_sizes:
            return self._engine.submit(
                lambda: [self._comm.alltoall(input, output, async_op=True)], [output])
        ins = list(input.split(input_split_sizes or [input.size(0) // n] * n))
        outs = list(output.split(output_split_sizes or [output.size(0) // n] * n))
        return self._alltoall_blocks([t.contiguous() for t in ins], outs, [output])

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
