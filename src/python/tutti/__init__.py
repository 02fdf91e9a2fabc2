"""tutti - Python binding of the tutti collective communication library (ctypes over
libtutti.so). Collectives run on numpy arrays and torch CPU tensors in place, without copies.

    import numpy as np, tutti
    comm = tutti.Comm.from_env()          # TUTTI_*, torchrun, Slurm or mpirun variables
    x = np.ones(1024, dtype=np.float32)
    comm.allreduce(x)                     # in place: x = sum over ranks
    req = comm.allreduce(x, async_op=True)
    ...                                   # x must stay untouched until
    req.wait()

Or from a unique id made on one process and handed to every rank out of band:

    uid = tutti.UniqueId.new()            # starts the bootstrap root in this process
    comm = tutti.Comm(nranks, uid, rank)  # on every rank, with bytes(uid) sent to it

Argument order follows the C API (and NCCL's): (sendbuf, recvbuf, ...); recvbuf=None means in
place. Every call raises tutti.Error (with tutti's status name and message) on failure.
The torch.distributed backend "tutti" is in tutti.torch_backend.
"""
import ctypes

from . import _buffers
from ._buffers import (BFLOAT16, FLOAT16, FLOAT32, FLOAT64, FP8_E4M3, FP8_E5M2, INT8, INT16,
                       INT32, INT64, UINT8, UINT16, UINT32, UINT64)
from ._lib import STATUS_NAMES, lib

SUM, PROD, MIN, MAX, AVG = range(5)  # tutti_op_t
OPS = {"sum": SUM, "prod": PROD, "min": MIN, "max": MAX, "avg": AVG}
SPLIT_NOCOLOR = -1

__all__ = ["Comm", "Error", "Request", "UniqueId", "group", "version", "SUM", "PROD", "MIN",
           "MAX", "AVG", "SPLIT_NOCOLOR"]


class Error(RuntimeError):
    """A tutti call failed. .status is its status name ("ERR_REMOTE"), .code the number."""

    def __init__(self, code, message):
        self.code = code
        self.status = STATUS_NAMES.get(code, f"status {code}")
        super().__init__(f"{self.status}: {message}")


def _check(code, comm=None):
    """Raise tutti.Error for a failed call. comm: the Comm it was made on (its message is the
    communicator's); once the Comm was aborted or destroyed (perhaps by another thread while
    this call ran) only the calling thread's message is read, never the freed communicator."""
    if code != 0:
        handle = comm._handle if comm is not None else None
        msg = lib.tutti_last_error(handle) if handle is not None else None
        if not msg:
            msg = lib.tutti_last_error(None)
        raise Error(code, (msg or lib.tutti_status_string(code)).decode(errors="replace"))


def version():
    """The loaded library's version code (TUTTI_VERSION_CODE of its build)."""
    return lib.tutti_version()


class UniqueId:
    """The 128 bytes every rank needs to join one communicator. Treat them as a password."""

    def __init__(self, raw):
        raw = bytes(raw)
        if len(raw) != 128:
            raise ValueError(f"a unique id is 128 bytes, not {len(raw)}")
        self._raw = raw

    @classmethod
    def new(cls):
        """Make an id and start its bootstrap root (a thread of this process)."""
        s = _lib_uid()
        _check(lib.tutti_get_unique_id(ctypes.byref(s)))
        return cls(ctypes.string_at(ctypes.addressof(s), 128))

    def __bytes__(self):
        return self._raw


def _lib_uid(raw=None):
    from ._lib import UniqueIdStruct
    s = UniqueIdStruct()
    if raw is not None:
        ctypes.memmove(ctypes.addressof(s), raw, 128)
    return s


class Request:
    """An asynchronous operation (tutti_i*): test() without blocking, wait() until done. The
    buffers are held until it completes; they must not be touched before."""

    def __init__(self, handle, comm, keep):
        self._h = ctypes.c_void_p(handle)
        self._comm = comm
        self._keep = keep
        self._done = False

    def test(self):
        """True once complete (raising tutti.Error if the operation failed)."""
        if self._done:
            return True
        done = ctypes.c_int(0)
        code = lib.tutti_test(self._h, ctypes.byref(done))
        if done.value:
            self._finish(code)
        return bool(done.value)

    def wait(self):
        """Block until complete; raise tutti.Error if the operation failed."""
        if not self._done:
            self._finish(lib.tutti_wait(self._h))

    def _finish(self, code):
        self._done = True
        lib.tutti_request_free(self._h)
        self._h = None
        self._keep = None
        _check(code, self._comm)

    def __del__(self):
        if not self._done and self._h is not None:
            # The operation still runs to completion: its buffers stay alive with the
            # communicator, since nothing tells us when it is done.
            lib.tutti_request_free(self._h)
            self._comm._orphans.append(self._keep)


class group:
    """with tutti.group(): calls inside are recorded and run together at the end (several
    communicators from one thread, sends paired with receives). Blocking calls only."""

    def __enter__(self):
        _check(lib.tutti_group_start())
        return self

    def __exit__(self, *exc):
        code = lib.tutti_group_end()
        if exc[0] is None:
            _check(code)
        return False


def _op(op):
    if isinstance(op, str):
        if op.lower() not in OPS:
            raise ValueError(f"unknown reduction op {op!r} (one of {', '.join(OPS)})")
        return OPS[op.lower()]
    if op not in (SUM, PROD, MIN, MAX, AVG):
        raise ValueError(f"unknown reduction op {op!r}")
    return op


class Comm:
    """A tutti communicator. Comm(nranks, uid, rank) joins one from a unique id (collective over
    every rank); Comm.from_env() uses the launcher's environment. timeout (seconds) overrides
    TUTTI_TIMEOUT for this communicator. One thread at a time per communicator."""

    def __init__(self, nranks, uid, rank, timeout=None):
        from ._lib import COMM_PARAM_TIMEOUT, CommParams
        handle = ctypes.c_void_p()
        params = CommParams()
        if timeout is not None:
            params.field_mask = COMM_PARAM_TIMEOUT
            params.timeout_ms = max(1, int(timeout * 1000))
        s = _lib_uid(bytes(uid))
        _check(lib.tutti_comm_init_rank_params(ctypes.byref(handle), nranks, ctypes.byref(s),
                                               rank, ctypes.byref(params)))
        self._adopt(handle)

    @classmethod
    def from_env(cls):
        """The world communicator of the launcher's environment (see docs/LAUNCH.md)."""
        handle = ctypes.c_void_p()
        _check(lib.tutti_comm_init_env(ctypes.byref(handle)))
        self = cls.__new__(cls)
        self._adopt(handle)
        return self

    def _adopt(self, handle):
        self._handle = handle
        self._orphans = []  # buffers of requests freed before completing
        r, n = ctypes.c_int(), ctypes.c_int()
        _check(lib.tutti_comm_rank(handle, ctypes.byref(r)))
        _check(lib.tutti_comm_size(handle, ctypes.byref(n)))
        self.rank, self.size = r.value, n.value

    # ---- life ----
    def destroy(self):
        """Finish outstanding work and free the communicator (raises its stored error, if it
        failed; it is freed anyway)."""
        h, self._handle = self._handle, None
        if h is not None:
            _check(lib.tutti_comm_destroy(h))

    def abort(self):
        """Fail every call in flight on this communicator (from any thread) and free it."""
        h, self._handle = self._handle, None
        if h is not None:
            _check(lib.tutti_comm_abort(h))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy() if exc[0] is None else self.abort()
        return False

    def split(self, color, key=0):
        """A new communicator per color (None for SPLIT_NOCOLOR), ranks ordered by key."""
        out = ctypes.c_void_p()
        _check(lib.tutti_comm_split(self._live(), color, key, ctypes.byref(out)), self)
        if not out.value:
            return None
        c = Comm.__new__(Comm)
        c._adopt(out)
        return c

    def async_error(self):
        """None while healthy, else the tutti.Error that failed the communicator."""
        st = ctypes.c_int(0)
        _check(lib.tutti_comm_get_async_error(self._live(), ctypes.byref(st)), self)
        if st.value == 0:
            return None
        return Error(st.value, (lib.tutti_last_error(self._handle) or b"").decode())

    def _live(self):
        if self._handle is None:
            raise Error(-2, "the communicator was destroyed or aborted")
        return self._handle

    # ---- calls: one helper for the blocking and the asynchronous form ----
    def _call(self, name, args, keep, async_op):
        h = self._live()
        if async_op:
            req = ctypes.c_void_p()
            _check(getattr(lib, "tutti_i" + name)(*args, h, ctypes.byref(req)), self)
            return Request(req.value, self, keep)
        _check(getattr(lib, "tutti_" + name)(*args, h, None), self)
        return None

    def _pair(self, sendbuf, recvbuf, what):
        """(send, recv) Buffers; recvbuf None: in place."""
        r = _buffers.view(recvbuf if recvbuf is not None else sendbuf, "recvbuf", True)
        s = r if recvbuf is None else _buffers.view(sendbuf, "sendbuf", False)
        _buffers.same_type(s, r, what)
        return s, r

    def allreduce(self, sendbuf, recvbuf=None, op=SUM, async_op=False):
        """recvbuf = op over ranks of sendbuf (in place when recvbuf is None)."""
        s, r = self._pair(sendbuf, recvbuf, "allreduce")
        if s.count != r.count:
            raise ValueError(f"allreduce: sendbuf has {s.count} elements, recvbuf {r.count}")
        return self._call("allreduce", (s.addr, r.addr, s.count, s.dtype, _op(op)), (s, r),
                          async_op)

    def broadcast(self, buf, root, recvbuf=None, async_op=False):
        """Root's buf to every rank (into recvbuf when given, else in place)."""
        s, r = self._pair(buf, recvbuf, "broadcast")
        return self._call("broadcast", (s.addr, r.addr, r.count, r.dtype, root), (s, r),
                          async_op)

    def reduce(self, sendbuf, root, recvbuf=None, op=SUM, async_op=False):
        """recvbuf on root = op over ranks of sendbuf (in place when recvbuf is None)."""
        s, r = self._pair(sendbuf, recvbuf, "reduce")
        return self._call("reduce", (s.addr, r.addr, s.count, s.dtype, _op(op), root), (s, r),
                          async_op)

    def allgather(self, sendbuf, recvbuf, async_op=False):
        """recvbuf = the ranks' sendbufs, rank order (recvbuf: size x len(sendbuf))."""
        s, r = self._pair(sendbuf, recvbuf, "allgather")
        if r.count != s.count * self.size:
            raise ValueError(f"allgather: recvbuf must hold {self.size} x {s.count} elements, "
                             f"not {r.count}")
        return self._call("allgather", (s.addr, r.addr, s.count, s.dtype), (s, r), async_op)

    def reduce_scatter(self, sendbuf, recvbuf, op=SUM, async_op=False):
        """recvbuf = block `rank` of op over ranks of sendbuf (size blocks of len(recvbuf))."""
        s, r = self._pair(sendbuf, recvbuf, "reduce_scatter")
        if s.count != r.count * self.size:
            raise ValueError(f"reduce_scatter: sendbuf must hold {self.size} x {r.count} "
                             f"elements, not {s.count}")
        return self._call("reduce_scatter", (s.addr, r.addr, r.count, r.dtype, _op(op)), (s, r),
                          async_op)

    def alltoall(self, sendbuf, recvbuf, async_op=False):
        """Block j of sendbuf to rank j, landing in its block `rank` (equal blocks)."""
        s, r = self._pair(sendbuf, recvbuf, "alltoall")
        if s.count != r.count or s.count % self.size != 0:
            raise ValueError(f"alltoall: sendbuf and recvbuf must hold the same multiple of "
                             f"{self.size} elements ({s.count}, {r.count})")
        return self._call("alltoall", (s.addr, r.addr, s.count // self.size, s.dtype), (s, r),
                          async_op)

    def send(self, buf, peer, async_op=False):
        b = _buffers.view(buf, "buf", False)
        return self._call("send", (b.addr, b.count, b.dtype, peer), (b,), async_op)

    def recv(self, buf, peer, async_op=False):
        b = _buffers.view(buf, "buf", True)
        return self._call("recv", (b.addr, b.count, b.dtype, peer), (b,), async_op)

    def barrier(self, async_op=False):
        return self._call("barrier", (), (), async_op)
