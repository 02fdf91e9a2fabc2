"""_torch_engine.py - how the torch backend (torch_backend.py) runs tutti requests: the Work
torch waits on, and per group the lock under which requests are issued and the thread that
completes them in issue order.

Why a Work subclass and not torch's _create_work_from_future: on torch 1.13 the latter's
wait() returns True even when the future failed, so a failed collective would go unnoticed.
A Python Work is only reached from C++ while its Python object lives (pybind11 finds the
override through the live instance; without it C++ falls back to the base wait(), which never
returns), so the group keeps each Work until it has completed and 1024 newer ones exist."""
import atexit
import collections
import datetime
import queue
import threading
import weakref

import torch
from torch._C._distributed_c10d import Work

import tutti


def _seconds(timeout):
    """Work.wait's timeout in seconds, or None for none (torch's default, kNoTimeout, is 0)."""
    if timeout is None:
        return None
    s = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else float(timeout)
    return s if s > 0 else None


class TorchWork(Work):
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
        """Block until the operation is done; raise its error. With a timeout (a timedelta, as
        torch passes it), raise a RuntimeError saying "Timed out" once it has passed: the
        operation goes on (bounded by the communicator's TUTTI_TIMEOUT)."""
        self._start()
        secs = _seconds(timeout)
        if secs is not None and not self._fut.done():
            done = threading.Event()
            self._fut.then(lambda _: done.set())
            if not done.wait(secs):
                raise RuntimeError(f"tutti backend: Timed out waiting {int(secs * 1000)}ms for "
                                   "the operation to complete (it is still running)")
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


def torch_error(e):
    """The exception a Work fails with: a timeout worded as torch's backends word it."""
    if isinstance(e, tutti.Error) and e.status == "ERR_TIMEOUT" and e.args:
        e.args = (f"tutti backend: Timed out ({e.args[0]})",) + e.args[1:]
    return e


_live_engines = weakref.WeakSet()  # closed at exit (_close_at_exit) if still open


@atexit.register
def _close_at_exit():
    for engine in list(_live_engines):
        engine.close(at_exit=True)


class Engine:
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
        self.seq = 0  # operations issued: torch's sequence number for the group
        self.coalesced = None  # between _start_coalescing and _end_coalescing: their Works
        self.thread = threading.Thread(target=self._complete, name="tutti-completion",
                                       daemon=True)
        self.thread.start()
        _live_engines.add(self)

    def submit(self, issue, outputs, finish=None):
        """Run issue() (which returns requests) under the lock; the Work completes with
        `outputs` once they are done and finish() ran."""
        fut = torch.futures.Future()
        work = TorchWork(fut)
        with self.lock:
            self._flush_locked()  # sends and receives issued before go first
            reqs = issue()
            self.busy += 1
            self.seq += 1
            self.pending.put((reqs, finish, outputs, fut))
            self._keep(work)
        return work

    def p2p(self, is_send, tensor, peer):
        """A send or receive. It waits in a batch until a Work of the batch is waited for (or
        another call comes): the batch then runs as one tutti group, so a rank's sends and
        receives are in flight together (a ring exchange cannot deadlock), which separate
        tutti requests, run one after the other, would not be."""
        fut = torch.futures.Future()
        work = TorchWork(fut, self)
        with self.lock:
            self.batch.append((is_send, tensor, peer, fut))
            self.seq += 1
            self._keep(work)
        return work

    def all_of(self, works):
        """A Work that completes when every one of works has (and fails with the first error)."""
        fut = torch.futures.collect_all([w.get_future() for w in works])
        done = torch.futures.Future()

        def settle(f):
            try:
                for each in f.wait():
                    each.wait()
                done.set_result([])
            except Exception as e:
                done.set_exception(e)
        fut.then(settle)
        work = TorchWork(done)
        with self.lock:
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
        if self.coalesced is not None:
            self.coalesced.append(work)
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
                error = torch_error(e)
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
                error = torch_error(e)
            with self.lock:
                self.busy -= 1  # before the future: a waiter may exit at once (close(at_exit))
            fut.set_exception(error) if error is not None else fut.set_result(outputs)

    def run(self, fn):
        """fn() with the communicator to itself, once every call issued before has ended (a
        failed one included); returns what fn returns."""
        if self.closed:
            raise RuntimeError("tutti backend: the process group was shut down or aborted")
        work = self.submit(lambda: [], [])
        done = threading.Event()
        work._fut.then(lambda _: done.set())
        done.wait()
        with self.lock:
            return fn()

    def close(self, at_exit=False, abort=False):
        """Stop the thread once the issued work is done, then free the communicator. With
        abort, or at exit with work still in flight (its peers may be gone), that work is
        failed and the communicator aborted instead."""
        if self.closed:
            return
        self.closed = True
        _live_engines.discard(self)
        with self.lock:
            in_flight = self.busy > 0 or bool(self.batch)
        aborting = abort or (at_exit and in_flight)
        if aborting:
            self.comm.abort()  # fails what is in flight; the thread then drains the queue
        self.flush()
        self.pending.put(None)
        if threading.current_thread() is self.thread:
            return  # the last reference was dropped by a completion: leave the comm to exit
        self.thread.join()
        if not aborting:
            try:
                self.comm.destroy()
            except tutti.Error:
                pass  # the communicator failed: the call that failed said so; it is freed
