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
Buffers from tutti.shared_empty, registered with Comm.register_window on every rank of one host,
make collectives read and write the peers' buffers in place (tutti/mem.h). The
torch.distributed backend "tutti" is in tutti.torch_backend.
"""
import ctypes

from . import _buffers, _windows
from ._buffers import (BFLOAT16, BOOL, FLOAT16, FLOAT32, FLOAT64, FP8_E4M3, FP8_E5M2, INT8,
                       INT16, INT32, INT64, UINT8, UINT16, UINT32, UINT64)
from ._lib import STATUS_NAMES, lib
from ._windows import Window

SUM, PROD, MIN, MAX, AVG, BAND, BOR, BXOR = range(8)  # tutti_op_t
OPS = {"sum": SUM, "prod": PROD, "min": MIN, "max": MAX, "avg": AVG, "band": BAND, "bor": BOR,
       "bxor": BXOR}
SPLIT_NOCOLOR = -1
SCALAR_DEVICE, SCALAR_HOST_IMMEDIATE = 0, 1  # tutti_scalar_residence_t

__all__ = ["Comm", "Error", "PremulSum", "Request", "UniqueId", "Window", "group", "shared_empty",
           "version",
           "SUM", "PROD", "MIN", "MAX", "AVG", "BAND", "BOR", "BXOR", "SPLIT_NOCOLOR"]


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


def shared_empty(count, dtype, torch=False):
    """count zero-filled elements of dtype (numpy's, or torch's with torch=True) in memory the
    other local ranks can map (tutti_mem_alloc): register it with Comm.register_window on every
    rank, and collectives on it run in place across the ranks (docs/design/windows.md)."""
    return _windows.shared_empty(count, dtype, _check, torch)


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
    if isinstance(op, PremulSum):
        return op.value
    if isinstance(op, str):
        if op.lower() not in OPS:
            raise ValueError(f"unknown reduction op {op!r} (one of {', '.join(OPS)})")
        return OPS[op.lower()]
    if op not in OPS.values():
        raise ValueError(f"unknown reduction op {op!r}")
    return op


class PremulSum:
    """A pre-multiplied sum made on a Comm (Comm.premul_sum): pass it as the op of a reduction
    whose buffers have its dtype. Each rank's input is multiplied by this rank's scalar before
    the sum (NCCL's ncclRedOpCreatePreMulSum). destroy() (or a with block) releases it."""

    def __init__(self, comm, value, dtype):
        self._comm = comm
        self.value = value
        self.dtype = dtype

    def destroy(self):
        comm, self._comm = self._comm, None
        if comm is not None and comm._handle is not None:
            _check(lib.tutti_op_destroy(self.value, comm._handle), comm)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False


def _counts(values, n, what):
    """A size_t[n] array of non-negative element counts or displacements."""
    vals = [int(v) for v in values]
    if len(vals) != n:
        raise ValueError(f"{what} must have {n} entries (one per rank), not {len(vals)}")
    if any(v < 0 for v in vals):
        raise ValueError(f"{what} must not be negative: {vals}")
    return (ctypes.c_size_t * n)(*vals)


def _prefix(counts):
    """The displacements of blocks laid end to end."""
    out, at = [], 0
    for c in counts:
        out.append(at)
        at += int(c)
    return out


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
        color = SPLIT_NOCOLOR if color is None else color
        _check(lib.tutti_comm_split(self._live(), color, key, ctypes.byref(out)), self)
        return self._child(out)

    def shrink(self, exclude=None):
        """A new communicator of the ranks that stay (tutti_comm_shrink): `exclude` lists ranks
        of this one to leave out (the same on every staying rank); None leaves out the ranks
        whose process has ended. Works on a communicator that failed; this one must still be
        destroyed or aborted."""
        out = ctypes.c_void_p()
        if exclude is None:
            _check(lib.tutti_comm_shrink(self._live(), None, 0, ctypes.byref(out)), self)
        else:
            arr = (ctypes.c_int * max(1, len(exclude)))(*exclude)
            _check(lib.tutti_comm_shrink(self._live(), arr, len(exclude), ctypes.byref(out)),
                   self)
        return self._child(out)

    def _child(self, out):
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

    # ---- gather, scatter and the variable-size collectives (counts in elements) ----
    def _arr(self, values, what):
        return _counts(values, self.size, what)

    def _fits(self, buf, counts, displs, what):
        """The blocks (counts at displs) must lie within buf."""
        end = max([d + c for c, d in zip(counts, displs) if c > 0] + [0])
        if buf is not None and end > buf.count:
            raise ValueError(f"{what}: the blocks need {end} elements, the buffer has "
                             f"{buf.count}")

    def alltoallv(self, sendbuf, sendcounts, recvbuf, recvcounts, sdispls=None, rdispls=None,
                  async_op=False):
        """sendcounts[j] elements at sdispls[j] of sendbuf to rank j, recvcounts[j] from rank j
        at rdispls[j] of recvbuf (displacements default to blocks end to end). recvbuf None:
        in place in sendbuf, with recvcounts/rdispls (sendcounts then is not read)."""
        s, r = self._pair(sendbuf, recvbuf, "alltoallv")
        rd = rdispls if rdispls is not None else _prefix(recvcounts)
        rc_a, rd_a = self._arr(recvcounts, "recvcounts"), self._arr(rd, "rdispls")
        self._fits(r, recvcounts, rd, "alltoallv recvbuf")
        if recvbuf is None:
            sc_a = sd_a = None
        else:
            sd = sdispls if sdispls is not None else _prefix(sendcounts)
            sc_a, sd_a = self._arr(sendcounts, "sendcounts"), self._arr(sd, "sdispls")
            self._fits(s, sendcounts, sd, "alltoallv sendbuf")
        return self._call("alltoallv", (s.addr, sc_a, sd_a, r.addr, rc_a, rd_a, s.dtype),
                          (s, r, sc_a, sd_a, rc_a, rd_a), async_op)

    def allgatherv(self, sendbuf, recvbuf, recvcounts, displs=None, async_op=False):
        """Rank j's sendbuf (recvcounts[j] elements) into recvbuf at displs[j] on every rank."""
        s, r = self._pair(sendbuf, recvbuf, "allgatherv")
        d = displs if displs is not None else _prefix(recvcounts)
        rc_a, d_a = self._arr(recvcounts, "recvcounts"), self._arr(d, "displs")
        self._fits(r, recvcounts, d, "allgatherv recvbuf")
        return self._call("allgatherv", (s.addr, s.count, r.addr, rc_a, d_a, s.dtype),
                          (s, r, rc_a, d_a), async_op)

    def _rooted(self, sendbuf, recvbuf, what, send_side):
        """Buffers of a rooted call where one side may be None off the root."""
        s = _buffers.view(sendbuf, "sendbuf", False) if sendbuf is not None else None
        r = _buffers.view(recvbuf, "recvbuf", True) if recvbuf is not None else None
        if s is not None and r is not None:
            _buffers.same_type(s, r, what)
        one = s if send_side else r
        if one is None:
            raise ValueError(f"{what}: {'sendbuf' if send_side else 'recvbuf'} is required")
        return s, r, (s or r).dtype

    def gather(self, sendbuf, recvbuf, root, async_op=False):
        """Every rank's sendbuf into recvbuf on root, rank j's at j * len(sendbuf)."""
        s, r, dt = self._rooted(sendbuf, recvbuf, "gather", True)
        if self.rank == root and (r is None or r.count < s.count * self.size):
            raise ValueError(f"gather: the root's recvbuf must hold {self.size} x {s.count} "
                             "elements")
        return self._call("gather", (s.addr, r.addr if r else None, s.count, dt, root), (s, r),
                          async_op)

    def scatter(self, sendbuf, recvbuf, root, async_op=False):
        """Block j (len(recvbuf) elements) of root's sendbuf into rank j's recvbuf."""
        s, r, dt = self._rooted(sendbuf, recvbuf, "scatter", False)
        if self.rank == root and (s is None or s.count < r.count * self.size):
            raise ValueError(f"scatter: the root's sendbuf must hold {self.size} x {r.count} "
                             "elements")
        return self._call("scatter", (s.addr if s else None, r.addr, r.count, dt, root), (s, r),
                          async_op)

    def gatherv(self, sendbuf, recvbuf, recvcounts=None, displs=None, root=0, async_op=False):
        """Rank j's sendbuf into root's recvbuf at displs[j] (recvcounts: root only)."""
        s, r, dt = self._rooted(sendbuf, recvbuf, "gatherv", True)
        rc_a = d_a = None
        if self.rank == root:
            d = displs if displs is not None else _prefix(recvcounts)
            rc_a, d_a = self._arr(recvcounts, "recvcounts"), self._arr(d, "displs")
            self._fits(r, recvcounts, d, "gatherv recvbuf")
        return self._call("gatherv",
                          (s.addr, s.count, r.addr if r else None, rc_a, d_a, dt, root),
                          (s, r, rc_a, d_a), async_op)

    def scatterv(self, sendbuf, recvbuf, sendcounts=None, displs=None, root=0, async_op=False):
        """sendcounts[j] elements at displs[j] of root's sendbuf into rank j's recvbuf."""
        s, r, dt = self._rooted(sendbuf, recvbuf, "scatterv", False)
        sc_a = d_a = None
        if self.rank == root:
            d = displs if displs is not None else _prefix(sendcounts)
            sc_a, d_a = self._arr(sendcounts, "sendcounts"), self._arr(d, "displs")
            self._fits(s, sendcounts, d, "scatterv sendbuf")
        return self._call("scatterv",
                          (s.addr if s else None, sc_a, d_a, r.addr, r.count, dt, root),
                          (s, r, sc_a, d_a), async_op)

    def reduce_scatterv(self, sendbuf, recvbuf, recvcounts, op=SUM, async_op=False):
        """recvbuf = block `rank` (recvcounts[rank] elements, blocks end to end in sendbuf) of
        op over the ranks' sendbufs."""
        s, r = self._pair(sendbuf, recvbuf, "reduce_scatterv")
        rc_a = self._arr(recvcounts, "recvcounts")
        if sum(int(c) for c in recvcounts) > s.count:
            raise ValueError(f"reduce_scatterv: the recvcounts sum to more than sendbuf's "
                             f"{s.count} elements")
        return self._call("reduce_scatterv", (s.addr, r.addr, rc_a, s.dtype, _op(op)),
                          (s, r, rc_a), async_op)

    def premul_sum(self, scalar, dtype, on_device=False):
        """A PremulSum op: sum over ranks of scalar * x, with this rank's scalar. dtype: a
        numpy or torch dtype, or a tutti datatype; scalar: a number (read now), or with
        on_device an address (int) read by each call as it runs."""
        dt = _buffers.dtype_of(dtype)
        size = lib.tutti_datatype_size(dt)
        if on_device:
            where, residence, keep = ctypes.c_void_p(int(scalar)), SCALAR_DEVICE, None
        else:
            keep = _scalar_bytes(scalar, dt, size)
            where, residence = ctypes.cast(keep, ctypes.c_void_p), SCALAR_HOST_IMMEDIATE
        out = ctypes.c_int()
        _check(lib.tutti_op_create_premul_sum(where, dt, residence, self._live(),
                                              ctypes.byref(out)), self)
        return PremulSum(self, out.value, dt)

    def register_window(self, buf):
        """Register buf as a window of this communicator (collective: every rank, in the same
        order, each with its own buffer); a tutti.Window (shared, calls, deregister()). Buffers
        from tutti.shared_empty on every rank of one host are shared, and collectives on them
        read and write the peers' buffers in place."""
        return _windows.register(self, buf, _buffers.view, _check)

    def send(self, buf, peer, async_op=False):
        b = _buffers.view(buf, "buf", False)
        return self._call("send", (b.addr, b.count, b.dtype, peer), (b,), async_op)

    def recv(self, buf, peer, async_op=False):
        b = _buffers.view(buf, "buf", True)
        return self._call("recv", (b.addr, b.count, b.dtype, peer), (b,), async_op)

    def barrier(self, async_op=False):
        return self._call("barrier", (), (), async_op)


def _scalar_bytes(value, dt, size):
    """value as one element of tutti datatype dt, in a ctypes buffer."""
    import struct
    buf = ctypes.create_string_buffer(8)
    if dt in _buffers.INTEGER_TYPES:
        signed = dt in (INT8, INT16, INT32, INT64)
        raw = int(value).to_bytes(8, "little", signed=True) if signed else \
            (int(value) % (1 << 64)).to_bytes(8, "little")
        ctypes.memmove(buf, raw, size)
    elif dt == FLOAT32:
        ctypes.memmove(buf, struct.pack("<f", float(value)), 4)
    elif dt == FLOAT64:
        ctypes.memmove(buf, struct.pack("<d", float(value)), 8)
    elif dt == FLOAT16:
        ctypes.memmove(buf, struct.pack("<e", float(value)), 2)
    elif dt == BFLOAT16:  # the top half of the float32, rounded to nearest even
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
        ctypes.memmove(buf, bits.to_bytes(2, "little"), 2)
    else:
        raise TypeError(f"premul_sum: a scalar of tutti datatype {dt} is not supported here "
                        "(float8: pass the encoded byte as an address with on_device)")
    return buf
