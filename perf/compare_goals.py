"""compare_goals.py - the goals compare.sh's summary evaluates, and how (standard library).

Two sets: issue 38's (the open one: every size at least the best peer, small calls no slower
than the best MPI, TCP too) and issue 3's (the first, kept so that old and new summaries read
alike). compare_table.py's summary prints one table per set.

A goal is (text, collectives, transport, peers, sizes, need, kind, ranks):
- text: "%s" is replaced by the collective;
- peers: None for every peer (Gloo over TCP included), else the peers it is held against;
- sizes: (lo, hi) inclusive, or a tuple of exact sizes other than two long;
- kind "bw": tutti's busbw over the best peer's >= need; "lat": the best peer's time over
  tutti's >= need (the same ratio, from the other column; both medians over launches);
- ranks: the rank counts it is judged at, or None for every one measured.
"""

KIB, MIB = 1 << 10, 1 << 20
ALL = ("all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter", "alltoall",
       "sendrecv")
MPIS = ("ompi", "mpich")

GOALS_38 = [
    ("1: %s time 8 B-4 KiB <= the best MPI's", ALL, "shm", MPIS, (8, 4 * KIB), 1.0, "lat", (2,)),
    ("2: %s busbw >= the best peer at every size", ALL, "shm", None, (8, 1 << 40), 1.0, "bw",
     (2,)),
    ("5: TCP: %s busbw >= the best TCP peer at every size", ALL, "tcp", None, (8, 1 << 40), 1.0,
     "bw", (2,)),
]

GOALS_3 = [
    ("all-reduce busbw at 64 MiB and 256 MiB >= 2x the best peer",
     ("all_reduce",), "shm", None, (64 * MIB, 256 * MIB), 2.0, "bw", None),
    ("all-reduce 64 KiB-1 MiB >= 1.5x Open MPI",
     ("all_reduce",), "shm", ("ompi",), (64 * KIB, MIB), 1.5, "bw", None),
    ("all-reduce latency 8 B-1 KiB no worse than Open MPI",
     ("all_reduce",), "shm", ("ompi",), (8, KIB), 1.0, "lat", None),
    ("%s >= the best peer at every size >= 64 KiB",
     ("broadcast", "reduce_scatter", "all_gather", "alltoall"), "shm", None,
     (64 * KIB, 1 << 40), 1.0, "bw", None),
    ("%s >= 1.5x the best peer at 256 MiB",
     ("broadcast", "reduce_scatter", "all_gather", "alltoall"), "shm", None,
     (256 * MIB,), 1.5, "bw", None),
    ("TCP: %s >= 1.5x the best TCP peer from 1 MiB up", ALL, "tcp", None, (MIB, 1 << 40), 1.5,
     "bw", None),
    ("TCP: %s latency 8 B-1 KiB no worse than Open MPI's tcp", ALL, "tcp", ("ompi",), (8, KIB),
     1.0, "lat", None),
]

SETS = (("issue 38", GOALS_38), ("issue 3", GOALS_3))


def in_scope(size, sizes):
    return size in sizes if len(sizes) != 2 else sizes[0] <= size <= sizes[1]


def best_of(libs, size, peers):
    """(peer, its per-size stats) of the fastest of peers (by busbw median) at size, or None."""
    cands = [(libs[p][size]["bw_med"], p) for p in peers if p in libs and size in libs[p]]
    if not cands:
        return None
    p = max(cands)[1]
    return p, libs[p][size]


def evaluate(stats, runs, goal, coll, all_peers):
    """[(ratio, size, nranks, peer)] at every measured size in the goal's scope.
    stats(runs, nranks, transport) gives {library: {size: per-size stats}}."""
    _, _, transport, peers, sizes, _, kind, ranks = goal
    found = []
    for nranks in sorted({r["nranks"] for r in runs}):
        if ranks is not None and nranks not in ranks:
            continue
        libs = stats(runs, nranks, transport)
        t = libs.get("tutti", {})
        for b in sorted(t):
            if b == 0 or not in_scope(b, sizes):
                continue
            best = best_of(libs, b, peers or all_peers)
            if best is None:
                continue
            p, s = best
            if kind == "bw":
                r = t[b]["bw_med"] / s["bw_med"] if s["bw_med"] > 0 else None
            else:
                r = s["t_med"] / t[b]["t_med"] if t[b]["t_med"] > 0 else None
            if r is not None:
                found.append((r, b, nranks, p))
    return found


def goal_rows(colls, stats, all_peers, goals, need_fmt, title, fmt_size):
    """The table rows of one set of goals over {collective: runs}."""
    rows = []
    for goal in goals:
        text, gcolls, _, _, _, need, _, _ = goal
        for coll in gcolls:
            label = text % coll.replace("_", "-") if "%s" in text else text
            runs = colls.get(coll)
            if runs is None:
                rows.append("| %s | - | not measured | %s | - |" % (label, need_fmt % need))
                continue
            found = evaluate(stats, runs, goal, coll, all_peers)
            if not found:
                rows.append("| %s | - | no peer measured | %s | - |" % (label, need_fmt % need))
                continue
            worst = min(found)
            short = [f for f in found if f[0] < need]
            where = ", ".join(fmt_size(b) for b in sorted({f[1] for f in short}))
            rows.append("| %s | %s | %.2f (%s, %d, %s) | %s | %s |" % (
                label, ", ".join(str(n) for n in sorted({f[2] for f in found})), worst[0],
                fmt_size(worst[1]), worst[2], title[worst[3]], need_fmt % need,
                "met" if not short else "not met at %s" % where))
    return rows
