"""_torch_group.py - TuttiBackend, one tutti communicator as torch sees it: on torch 2.x a
Backend (torch's ProcessGroup dispatches CPU tensors to it, so "cpu:tutti,cuda:nccl" works), on
torch 1.13 a whole ProcessGroup. Its calls are in _torch_reduce.py and _torch_move.py; here are
its life (abort, shutdown, split, shrink), barriers, sequence numbers and coalescing."""
import datetime
import time

import torch

from ._torch_engine import Engine
from ._torch_move import MoveMethods
from ._torch_ops import TORCH_MAJOR, field
from ._torch_reduce import ReduceMethods

try:  # torch 2.x: a backend per device type
    from torch._C._distributed_c10d import Backend as _Base
except ImportError:  # torch 1.13
    from torch._C._distributed_c10d import ProcessGroup as _Base

BACKEND = "tutti"
# torch holds a backend in C++ and reaches our methods through its Python object: the object
# must outlive every C++ reference, so each backend stays here until it is shut down or aborted
# (as a group lives until destroy_process_group).
_alive = set()
_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)  # torch's default for CPU backends


def _delta(t, default):
    """A timeout as a timedelta: torch passes timedeltas (negative or zero: none given)."""
    if isinstance(t, datetime.timedelta) and t.total_seconds() >= 0:
        return t
    return default


class TuttiBackend(ReduceMethods, MoveMethods, _Base):
    """torch.distributed's view of a tutti communicator (CPU tensors)."""

    def __init__(self, comm, store=None, timeout=None):
        super().__init__(comm.rank, comm.size)
        self._comm = comm
        self._engine = Engine(comm)
        self._store = store  # for monitored_barrier (None: not available)
        self._timeout = _delta(timeout, _DEFAULT_TIMEOUT)
        self._monitored = 0  # monitored barriers run: each has its own store keys
        self._children = 0  # groups split or shrunk from this one: each has its own keys
        _alive.add(self)

    def getBackendName(self):
        return BACKEND

    def __del__(self):
        engine = getattr(self, "_engine", None)
        if engine is not None:
            engine.close()

    # ---- what torch 2.x asks a backend (properties: the C++ side reads them) ----
    @property
    def options(self):
        if getattr(self, "_options", None) is None:
            self._options = _Base.Options(BACKEND, self._timeout)
        return self._options

    @property
    def supports_splitting(self):
        return True

    @property
    def supports_shrinking(self):
        return True

    @property
    def supports_coalescing(self):
        return False  # batch_isend_irecv then issues op by op; the engine batches them

    @property
    def supports_reconfigure(self):
        return False

    @property
    def supports_window(self):
        return False

    @property
    def _supports_time_estimate(self):
        return False

    def set_timeout(self, timeout):
        self._timeout = _delta(timeout, self._timeout)

    def _get_sequence_number_for_group(self):
        return self._engine.seq

    def _set_sequence_number_for_group(self):
        pass  # every rank starts at 0 and counts the same calls

    def start_coalescing(self, *device):
        """Collect the Works of the calls until end_coalescing (torch's Backend names them
        so; a ProcessGroup subclass is called with the leading underscore and a device)."""
        self._engine.coalesced = []

    def end_coalescing(self, *device):
        works, self._engine.coalesced = self._engine.coalesced or [], None
        return self._engine.all_of(works)

    _start_coalescing = start_coalescing
    _end_coalescing = end_coalescing

    # ---- life ----
    def abort(self):
        """Fail what is in flight and free the communicator (ProcessGroup.abort)."""
        self._engine.close(abort=True)
        _alive.discard(self)

    def shutdown(self):
        """Finish what is in flight, then free the communicator (destroy_process_group)."""
        self._engine.close()
        _alive.discard(self)

    def _child(self, comm, what):
        if comm is None:
            return None
        self._children += 1
        store = None
        if self._store is not None:
            store = torch.distributed.PrefixStore(f"tutti/{what}/{self._children}/", self._store)
        return TuttiBackend(comm, store, self._timeout)

    def split(self, store, ranks, opts=None):
        """torch's split_group: every rank of this group calls it with the ranks of its new
        group (in order), or, off every new group, with ranks it is not in. One tutti_comm_split:
        the color is the new group's first rank (groups are disjoint), the key the position."""
        me = self.rank()
        if me not in ranks:
            self._engine.run(lambda: self._comm.split(None))
            # torch 2.x cannot take None from a Python backend here (_torch_patches.py): a
            # placeholder of one rank that split_group then drops
            return _Base(0, 1) if IS_BACKEND else None
        comm = self._engine.run(lambda: self._comm.split(min(ranks), list(ranks).index(me)))
        child = self._child(comm, "split")
        if store is not None:
            child._store = store
        return child

    def shrink(self, ranks_to_exclude, shrink_flags=0, opts_override=None):
        """torch 2.15's shrink_group: a new backend of the ranks that stay (tutti_comm_shrink;
        it works on a communicator that failed). Work still in flight ends first."""
        comm = self._engine.run(lambda: self._comm.shrink(list(ranks_to_exclude)))
        return self._child(comm, "shrink")

    # ---- barriers ----
    def barrier(self, opts=None):
        return self._engine.submit(lambda: [self._comm.barrier(async_op=True)], [])

    def monitored_barrier(self, opts=None, wait_all_ranks=False):
        """Gloo's monitored barrier: rank 0 waits for every other rank (up to the timeout), then
        releases them, or names the ranks that did not arrive. Through the group's store, so a
        rank stuck in a collective cannot hold it."""
        if self._store is None:
            raise RuntimeError("tutti backend: monitored_barrier needs the group's store (this "
                               "group was made without one)")
        if isinstance(opts, datetime.timedelta) or opts is None:
            timeout = _delta(opts, self._timeout)
        else:
            timeout = _delta(field(opts, "timeout", None), self._timeout)
        self._engine.run(lambda: None)  # calls issued before it finish first
        n, self._monitored = self._monitored, self._monitored + 1
        key = f"tutti/monitored_barrier/{n}/"
        rank, ms = self.rank(), int(timeout.total_seconds() * 1000)
        if rank != 0:
            self._store.set(key + str(rank), b"1")
            try:
                self._store.wait([key + "done"], timeout)
                ok = self._store.get(key + "done") == b"ok"
            except Exception:
                ok = False
            if not ok:
                raise RuntimeError(f"Rank {rank} successfully reached monitoredBarrier, but "
                                   "received errors while waiting for send/recv from rank 0. "
                                   "Please check rank 0 logs for faulty rank.")
            return
        deadline, missing = time.monotonic() + timeout.total_seconds(), []
        for r in range(1, self.size()):
            left = deadline - time.monotonic()
            if self._store.check([key + str(r)]):
                continue
            if left <= 0 and not missing and not wait_all_ranks:
                self._store.set(key + "done", b"failed")
                raise RuntimeError(f"Rank {rank} timed out in monitoredBarrier after {ms} ms.")
            try:
                if left <= 0:
                    raise TimeoutError
                self._store.wait([key + str(r)], datetime.timedelta(seconds=left))
            except Exception:
                missing.append(r)
                if not wait_all_ranks:
                    break
        if missing:
            self._store.set(key + "done", b"failed")
            if len(missing) == 1:
                raise RuntimeError(f"[Rank 0]: Rank {missing[0]} failed to pass monitoredBarrier "
                                   f"in {ms} ms")
            raise RuntimeError(f"[Rank 0]: Ranks {', '.join(map(str, missing))} failed to pass "
                               f"monitoredBarrier in {ms} ms")
        self._store.set(key + "done", b"ok")


ProcessGroupTutti = TuttiBackend  # its name before torch 2.x support
IS_BACKEND = TORCH_MAJOR >= 2 and _Base.__name__ == "Backend"
