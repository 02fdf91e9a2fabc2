"""_windows.py - host symmetric memory from Python (tutti/mem.h, docs/design/windows.md).

shared_empty() gives a numpy array or a torch CPU tensor in memory that the other local ranks of
a communicator can map (tutti_mem_alloc); Comm.register_window() registers a buffer as a window
of the communicator, collectively. Collectives whose buffers lie in windows on every rank read
and write the peers' buffers in place. The memory is freed once the window is deregistered (or
its communicator destroyed) and no array or tensor over it is left.
"""
import ctypes

from ._lib import _decl, lib

_vp, _sz = ctypes.c_void_p, ctypes.c_size_t

_decl("tutti_mem_alloc", ctypes.c_int, ctypes.POINTER(_vp), _sz)
_decl("tutti_mem_free", ctypes.c_int, _vp)
_decl("tutti_comm_window_register", ctypes.c_int, _vp, _vp, _sz, ctypes.POINTER(_vp))
_decl("tutti_comm_window_deregister", ctypes.c_int, _vp, _vp)
_decl("tutti_window_query", ctypes.c_int, _vp, ctypes.POINTER(ctypes.c_int),
      ctypes.POINTER(ctypes.c_uint64))


class _Block:
    """One tutti_mem_alloc block; freed when nothing refers to it any more (every array or
    tensor over it holds it through its buffer object, and so does a window of it)."""

    def __init__(self, nbytes, check):
        p = _vp()
        check(lib.tutti_mem_alloc(ctypes.byref(p), nbytes))
        self.addr, self.nbytes = p.value, nbytes

    def __del__(self):
        addr, self.addr = getattr(self, "addr", None), None
        if addr:
            lib.tutti_mem_free(addr)


def shared_empty(count, dtype, check, torch=False):
    """count elements of dtype (a numpy dtype, or a torch dtype with torch=True) in a new block:
    zero-filled, page-aligned, a 1-D numpy array or torch tensor."""
    if torch:
        import torch as t
        itemsize = t.empty(0, dtype=dtype).element_size()
    else:
        import numpy as np
        itemsize = np.dtype(dtype).itemsize
    count = int(count)
    if count <= 0:
        raise ValueError(f"shared_empty: count {count} (at least 1 element)")
    block = _Block(count * itemsize, check)
    raw = (ctypes.c_uint8 * block.nbytes).from_address(block.addr)
    raw._tutti_block = block  # the buffer object holds the block; every view holds the buffer
    if torch:
        import torch as t
        return t.frombuffer(raw, dtype=dtype, count=count)
    import numpy as np
    return np.frombuffer(raw, dtype=dtype, count=count)


class Window:
    """A buffer registered with a communicator (Comm.register_window). `shared`: every rank maps
    every other rank's buffer (the buffer came from shared_empty on every rank, all on one
    host); `calls`: collectives that ran on it in place. deregister() is local."""

    def __init__(self, comm, handle, buf, check):
        self._comm, self._handle, self._buf, self._check = comm, handle, buf, check

    def _query(self):
        if self._handle is None or self._comm._handle is None:
            raise ValueError("the window was deregistered, or its communicator destroyed")
        shared, calls = ctypes.c_int(), ctypes.c_uint64()
        self._check(lib.tutti_window_query(self._handle, ctypes.byref(shared),
                                           ctypes.byref(calls)), self._comm)
        return shared.value, calls.value

    @property
    def shared(self):
        return bool(self._query()[0])

    @property
    def calls(self):
        return self._query()[1]

    def deregister(self):
        """Calls made afterwards with the buffer take the ordinary path. Nothing to do once the
        communicator is gone (destroying it undid its windows)."""
        h, self._handle = self._handle, None
        if h is not None and self._comm._handle is not None:
            self._check(lib.tutti_comm_window_deregister(self._comm._handle, h), self._comm)
        self._buf = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.deregister()
        return False


def register(comm, buf, view, check):
    """Register buf (a numpy array or torch CPU tensor; view gives its Buffer) as a window of
    comm: collective, every rank in the same order, each with its own buffer."""
    b = view(buf, "buf", True)
    if b.count == 0:
        raise ValueError("register_window: an empty buffer")
    size = b.count * lib.tutti_datatype_size(b.dtype)
    out = _vp()
    check(lib.tutti_comm_window_register(comm._live(), b.addr, size, ctypes.byref(out)), comm)
    return Window(comm, out.value, buf, check)
