"""harness.py - runs each check of a test file on N forked ranks and reports like the C suites.

Each check is a function check(rank, nranks, *args) run in nranks processes (fork, so a unique
id made in the parent reaches them); a rank passes by returning, fails by raising; a rank that
hangs is killed after a timeout. Output: "name ok|failed|skipped (why)" per check, then a
Criterion-style "Synthesis:" line that scripts/test-summary.py counts; exit status 1 if any
check failed. Needs /usr/bin/python3 with numpy (and torch for the torch checks): without them
every check is skipped with the reason, and the run exits 77 (meson's skip)."""
import faulthandler
import multiprocessing as mp
import os
import queue
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src", "python"))


def _child(fn, rank, n, args, q, timeout):
    # a rank still running near the deadline prints every thread's stack: why it hangs
    faulthandler.dump_traceback_later(max(1, timeout - 10), exit=False)
    try:
        fn(rank, n, *args)
        q.put((rank, None))
    except BaseException:  # report everything, SystemExit included
        q.put((rank, traceback.format_exc()))


def run_ranks(fn, n, *args, timeout=120):
    """Run fn(rank, n, *args) on n forked ranks; returns a list of failure texts (empty: ok)."""
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=_child, args=(fn, r, n, args, q, timeout)) for r in range(n)]
    for p in procs:
        p.start()
    errors, seen = [], set()
    deadline = time.time() + timeout
    while len(seen) < n and time.time() < deadline:
        try:
            rank, err = q.get(timeout=0.2)
        except queue.Empty:
            # a rank may end on purpose without a report (a check that kills a rank): exit
            # status 0 counts as done once its report can no longer come
            if all(not procs[r].is_alive() for r in range(n) if r not in seen) and q.empty():
                for r in set(range(n)) - seen:
                    seen.add(r)
                    if procs[r].exitcode != 0:
                        errors.append(f"rank {r} ended with exit status {procs[r].exitcode}")
            continue
        seen.add(rank)
        if err:
            errors.append(f"rank {rank}:\n{err}")
    if len(seen) < n:
        errors.append(f"ranks {sorted(set(range(n)) - seen)} did not finish in {timeout} s")
    for p in procs:
        p.join(5)
        if p.is_alive():
            p.kill()
            p.join()
    return errors


def in_child(fn, *args):
    """fn(*args) in a forked process that ends with os._exit: torch 1.13 can deadlock tearing
    down a Gloo group under DDP (the group's destructor joins a Gloo thread that waits for
    the GIL the destructor holds), so each training runs where nothing is torn down."""
    import pickle
    import traceback
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            out = (True, fn(*args))
        except BaseException:
            out = (False, traceback.format_exc())
        with os.fdopen(w, "wb") as f:
            pickle.dump(out, f)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        data = f.read()
    os.waitpid(pid, 0)
    if not data:
        raise RuntimeError(f"{fn.__name__}{args[:1]}: the child died without a result")
    ok, val = pickle.loads(data)
    if not ok:
        raise RuntimeError(val)
    return val


def main(checks, need=("numpy",)):
    """checks: list of (name, fn, nranks, make_arg): fn(rank, nranks, make_arg()) on nranks
    ranks, make_arg called in this process just before (a unique id, a port). Reports all."""
    missing = []
    for mod in need:
        try:
            __import__(mod)
        except ImportError as e:
            missing.append(f"{mod} ({e})")
    npass = nfail = nskip = 0
    for name, fn, n, make_arg in checks:
        if missing:
            print(f"[SKIP] {name}: {', '.join(missing)} not importable by {sys.executable}")
            nskip += 1
            continue
        errors = run_ranks(fn, n, make_arg())
        print(f"{name} {'failed' if errors else 'ok'}", flush=True)
        for e in errors:
            print("  " + e.replace("\n", "\n  "), flush=True)
        nfail += bool(errors)
        npass += not errors
    if missing:
        sys.exit(77)  # meson's skip (no Synthesis line: nothing ran)
    print(f"Synthesis: Tested: {npass + nfail} | Passing: {npass} | Failing: {nfail} | "
          f"Crashing: 0")
    sys.exit(1 if nfail else 0)
