#!/usr/bin/python3
"""gloo_perf.py - the perf tools' benchmark over Gloo, through PyTorch's torch.distributed.

Run with Debian's /usr/bin/python3 (python3-torch). The same options, loop, table and JSON as
build/perf/<coll>_perf (perf/README.md), for the collectives torch's Gloo backend has:

    /usr/bin/python3 perf/gloo_perf.py --coll all_reduce -N 4 -b 8 -e 1M -f 2 --json out.json

-N RANKS starts RANKS local ranks (this script again, in new processes, with torchrun's
environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT); without it the script is one rank
of a job launched by torchrun or such. Gloo moves data over TCP, also between local ranks; the
interface is GLOO_SOCKET_IFNAME (lo when -N starts the ranks and nothing else is set).

The loop is perf_bench.c's: warm up at the largest and the smallest size; per size and form,
fill the inputs, one untimed call, a barrier, -n timed calls (time.perf_counter), the time per
call averaged over ranks; then -c checks (fresh inputs, one call, every output element
compared with its exact value, wrong elements summed over ranks). Inputs are small integers,
so sums are exact in any order.

Mapping: all_reduce, broadcast and reduce are in place only in torch: both forms time the
in-place call (out of place, the output buffer is filled with this rank's input first, outside
the timing; no copy is timed). all_gather writes into views of one output buffer; alltoall is
all_to_all_single; sendrecv is isend to rank + 1 and irecv from rank - 1 (out of place only:
one buffer cannot be sent and received at once). torch's Gloo has no reduce-scatter (exit 3),
and divides by zero on empty all-gathers and all-to-alls: zero-count rows are left out.
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import time

COLLS = {  # name: (bus factor, reduces, rooted, has in place)
    "all_reduce": (lambda n: 2.0 * (n - 1) / n, True, False, True),
    "all_gather": (lambda n: (n - 1) / n, False, False, True),
    "broadcast": (lambda n: 1.0, False, True, True),
    "reduce": (lambda n: 1.0, True, True, True),
    "alltoall": (lambda n: (n - 1) / n, False, False, False),
    "sendrecv": (lambda n: 1.0, False, False, False),
}
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_ABSENT = 0, 1, 2, 3


def parse_size(s):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    mult = units.get(s[-1:].lower(), 1)
    return int(float(s[:-1] if mult > 1 else s) * mult)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--coll", default="all_reduce")
    ap.add_argument("-N", "--nranks", type=int, default=0)
    ap.add_argument("-b", "--minbytes", type=parse_size, default=32 << 20)
    ap.add_argument("-e", "--maxbytes", type=parse_size, default=32 << 20)
    ap.add_argument("-i", "--stepbytes", type=parse_size, default=1 << 20)
    ap.add_argument("-f", "--stepfactor", type=int, default=1)
    ap.add_argument("-n", "--iters", type=int, default=20)
    ap.add_argument("-w", "--warmup_iters", type=int, default=5)
    ap.add_argument("-c", "--check", type=int, default=1)
    ap.add_argument("-d", "--datatype", default="float",
                    choices=["float", "double", "int32", "int64"])
    ap.add_argument("-o", "--op", default="sum", choices=["sum", "min", "max"])
    ap.add_argument("-r", "--root", type=int, default=0)
    ap.add_argument("-a", "--average", type=int, default=1, choices=[0, 1, 2, 3])
    ap.add_argument("--halves", default="both", choices=["out", "in", "both"])
    ap.add_argument("-J", "--json")
    ap.add_argument("--bind", default="none", choices=["core", "none"],
                    help="core: rank r runs on the r-th allowed CPU when the ranks fit")
    a = ap.parse_args(argv)
    if a.coll == "reduce_scatter":
        sys.stderr.write("gloo_perf: torch's Gloo backend has no reduce-scatter\n")
        sys.exit(EXIT_ABSENT)
    if a.coll not in COLLS:
        ap.error("--coll: one of " + ", ".join(COLLS))
    if a.minbytes > a.maxbytes or a.iters < 1 or a.warmup_iters < 0 or a.check < 0:
        ap.error("invalid sizes or iteration counts")
    return a


def sizes(a):
    size = a.minbytes
    while size <= a.maxbytes:
        yield size
        nxt = size * a.stepfactor if a.stepfactor > 1 else size + a.stepbytes
        if nxt <= size:
            break
        size = nxt


def spawn(a, argv):
    """-N: start the ranks as new processes of this script; the worst exit code wins."""
    with socket.socket() as s:  # a free port for rank 0's store
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args, skip = [], False
    for x in argv:  # the ranks' command line: this one without -N
        if not skip and x in ("-N", "--nranks"):
            skip = True
        elif skip or x.startswith("--nranks=") or (x.startswith("-N") and x[2:].isdigit()):
            skip = False
        else:
            args.append(x)
    procs = []
    for r in range(a.nranks):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE=str(a.nranks), LOCAL_RANK=str(r),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__)] + args, env=env))
    worst = 0
    while procs:  # a failed rank ends the others, which would wait for it until the timeout
        for p in [p for p in procs if p.poll() is not None]:
            procs.remove(p)
            worst = max(worst, p.returncode if p.returncode >= 0 else EXIT_FAIL)
            if p.returncode != 0:
                for q in procs:
                    q.terminate()
        time.sleep(0.05)
    return worst


class Bench:
    """One rank's benchmark: buffers, the collective's layout, fill, call and check."""

    def __init__(self, a, torch, dist):
        self.a, self.torch, self.dist = a, torch, dist
        self.rank, self.n = dist.get_rank(), dist.get_world_size()
        self.bus, self.reduces, self.rooted, self.has_in = COLLS[a.coll]
        self.dt = getattr(torch, {"float": "float32", "double": "float64"}.get(a.datatype,
                                                                             a.datatype))
        self.esz = torch.empty(0, dtype=self.dt).element_size()
        self.op = {"sum": dist.ReduceOp.SUM, "min": dist.ReduceOp.MIN,
                   "max": dist.ReduceOp.MAX}[a.op]
        elems = a.maxbytes // self.esz + 1
        self.sendbuf = torch.zeros(elems, dtype=self.dt)  # touched: no page faults when timed
        self.recvbuf = torch.zeros(elems, dtype=self.dt)
        self.seed = 1000
        self.root = a.root if self.rooted else -1

    def layout(self, nbytes):
        """(send count, recv count, count argument) as perf_<coll>.c."""
        count = nbytes // self.esz
        if self.a.coll == "all_gather":
            base = count // self.n
            return base, base * self.n, base
        if self.a.coll == "alltoall":
            base = count // self.n
            return base * self.n, base * self.n, base
        return count, count, count

    def input(self, rank, first, count):
        """Rank `rank`'s input at indices first .. first + count: integers in -8 .. 8."""
        t = self.torch
        wide = (first + count) * 7 + rank * 13 + self.seed * 5 >= 1 << 31
        idx = t.arange(first, first + count, dtype=t.int64 if wide else t.int32)
        return ((idx * 7 + (rank * 13 + self.seed * 5)) % 17 - 8).to(self.dt)

    def expected(self, first, count):
        """The reduction of every rank's input: what all_reduce and reduce produce."""
        out = self.input(0, first, count)
        for r in range(1, self.n):
            v = self.input(r, first, count)
            if self.a.op == "sum":
                out += v
            else:
                out = self.torch.minimum(out, v) if self.a.op == "min" else self.torch.maximum(out, v)
        return out

    def setup(self, nbytes, in_place):
        """The call's tensors; in place, send is rank r's block of the receive buffer."""
        sc, rc, pc = self.layout(nbytes)
        recv = self.recvbuf[:rc]
        if not in_place:
            send = self.sendbuf[:sc]
        elif self.a.coll == "all_gather":
            send = recv[self.rank * pc:(self.rank + 1) * pc]
        else:
            send = recv[:sc]
        return {"send": send, "recv": recv, "count": pc, "in_place": in_place}

    def fill(self, c):
        """Fresh inputs, outputs poisoned; in-place-only torch calls get theirs in recv."""
        self.seed += 1
        poison = float("nan") if self.dt.is_floating_point else -12345
        c["recv"].fill_(poison)
        c["send"].copy_(self.input(self.rank, 0, c["send"].numel()))
        if self.a.coll in ("all_reduce", "broadcast", "reduce") and not c["in_place"]:
            c["recv"].copy_(c["send"])

    def call(self, c):
        d, a = self.dist, self.a
        if a.coll == "all_reduce":
            d.all_reduce(c["recv"], op=self.op)
        elif a.coll == "broadcast":
            d.broadcast(c["recv"], src=self.root)
        elif a.coll == "reduce":
            d.reduce(c["recv"], dst=self.root, op=self.op)
        elif a.coll == "all_gather":
            d.all_gather(list(c["recv"].split(c["count"])), c["send"])
        elif a.coll == "alltoall":
            d.all_to_all_single(c["recv"], c["send"])
        else:  # sendrecv
            to, frm = (self.rank + 1) % self.n, (self.rank - 1) % self.n
            reqs = [d.isend(c["send"], to), d.irecv(c["recv"], frm)]
            for req in reqs:
                req.wait()

    def check(self, c):
        """Wrong output elements on this rank."""
        a, recv, pc, n = self.a, c["recv"], c["count"], self.n
        if a.coll == "all_reduce" or (a.coll == "reduce" and self.rank == self.root):
            want = self.expected(0, recv.numel())
        elif a.coll == "reduce":
            return 0
        elif a.coll == "broadcast":
            want = self.input(self.root, 0, recv.numel())
        elif a.coll == "all_gather":
            want = self.torch.cat([self.input(r, 0, pc) for r in range(n)])
        elif a.coll == "alltoall":
            want = self.torch.cat([self.input(j, self.rank * pc, pc) for j in range(n)])
        else:
            want = self.input((self.rank - 1) % n, 0, recv.numel())
        return int((recv != want).sum())

    def allreduce_scalar(self, value, op):
        t = self.torch.tensor([value], dtype=self.torch.float64)
        self.dist.all_reduce(t, op=op)
        return float(t[0])

    def timed(self, c):
        """Time per call in microseconds, combined over ranks as -a says."""
        a, d = self.a, self.dist
        if a.check > 0:
            self.fill(c)
        self.call(c)
        d.barrier()
        t0 = time.perf_counter()
        for _ in range(a.iters):
            self.call(c)
        us = (time.perf_counter() - t0) * 1e6 / a.iters
        if a.average == 0:
            t = self.torch.tensor([us], dtype=self.torch.float64)
            d.broadcast(t, src=0)
            return float(t[0])
        op = [None, d.ReduceOp.SUM, d.ReduceOp.MIN, d.ReduceOp.MAX][a.average]
        total = self.allreduce_scalar(us, op)
        return total / self.n if a.average == 1 else total

    def checked(self, c):
        wrong = 0
        for _ in range(self.a.check):
            self.fill(c)
            self.call(c)
            wrong = int(self.allreduce_scalar(self.check(c), self.dist.ReduceOp.SUM))
            if wrong:
                break
        return wrong if self.a.check > 0 else None

    def half(self, nbytes, in_place):
        want = self.a.halves in ("both", "in" if in_place else "out")
        if not want or (in_place and not self.has_in):
            return None
        c = self.setup(nbytes, in_place)
        if c["count"] == 0 and self.a.coll in ("all_gather", "alltoall"):
            return None  # Gloo divides by zero on empty blocks
        us = self.timed(c)
        wrong = self.checked(c)
        algbw = nbytes / 1e3 / us if us > 0 else 0.0
        return {"time_us": us, "algbw": algbw, "busbw": algbw * self.bus(self.n), "wrong": wrong}

    def warm_up(self):
        for nbytes in (self.a.maxbytes, self.a.minbytes):
            c = self.setup(nbytes, False)
            if c["count"] == 0 and self.a.coll in ("all_gather", "alltoall"):
                continue
            for _ in range(self.a.warmup_iters):
                self.call(c)


def fmt_half(h):
    if h is None:
        return "  %7s  %6s  %6s  %6s" % ("N/A", "N/A", "N/A", "N/A")
    return "  %7.2f  %6.2f  %6.2f  %6s" % (h["time_us"], h["algbw"], h["busbw"],
                                         "N/A" if h["wrong"] is None else h["wrong"])


def bind_rank(a):
    """--bind core: as tutti's perf tools and mpirun --bind-to core (only when the ranks fit)."""
    cpus = sorted(os.sched_getaffinity(0))
    rank, n = int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))
    if a.bind == "core" and n <= len(cpus):
        os.sched_setaffinity(0, {cpus[rank]})


def run_rank(a):
    bind_rank(a)
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)  # one rank per process, as the other tools
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=600))
    b = Bench(a, torch, dist)
    r0 = b.rank == 0
    if r0:
        print("# gloo_perf.py --coll %s: torch %s, Gloo over TCP (%s), %d ranks"
              % (a.coll, torch.__version__, os.environ.get("GLOO_SOCKET_IFNAME", "default"), b.n))
        print("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s"
              % ("size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                 "time", "algbw", "busbw", "#wrong"))
        sys.stdout.flush()
    dist.barrier()
    b.warm_up()
    rows, errors = [], 0
    for nbytes in sizes(a):
        sc, rc, pc = b.layout(nbytes)
        row = {"bytes": max(sc, rc) * b.esz, "count": pc, "type": a.datatype,
               "redop": a.op if b.reduces else "none", "root": b.root}
        row["out_of_place"] = b.half(row["bytes"], False)
        row["in_place"] = b.half(row["bytes"], True)
        errors += any(h is not None and h["wrong"] for h in (row["out_of_place"], row["in_place"]))
        rows.append(row)
        if r0:
            print("%12d  %12d  %8s  %6s  %6d%s%s" % (row["bytes"], pc, row["type"], row["redop"],
                                                   row["root"], fmt_half(row["out_of_place"]),
                                                   fmt_half(row["in_place"])))
            sys.stdout.flush()
    bws = [h["busbw"] for r in rows for h in (r["out_of_place"], r["in_place"]) if h]
    avg = sum(bws) / len(bws) if bws else 0.0
    if r0:
        print("# Out of bounds values : %d %s" % (errors, "FAILED" if errors else "OK"))
        print("# Avg bus bandwidth    : %g" % avg)
        if a.json:
            write_json(a, b, torch, rows, errors, avg)
    dist.barrier()
    dist.destroy_process_group()
    return EXIT_FAIL if errors else EXIT_OK


def write_json(a, b, torch, rows, errors, avg):
    """perf_json.c's schema."""
    doc = {"tool": "gloo_perf.py --coll " + a.coll, "collective": a.coll, "library": "gloo",
           "version": "torch %s Gloo" % torch.__version__, "nranks": b.n, "transport": "tcp",
           "host": socket.gethostname(),
           "date": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"),
           "config": {"minbytes": a.minbytes, "maxbytes": a.maxbytes, "stepbytes": a.stepbytes,
                      "stepfactor": a.stepfactor, "iters": a.iters,
                      "warmup_iters": a.warmup_iters, "agg_iters": 1, "check": a.check,
                      "average": a.average, "halves": a.halves},
           "results": rows, "out_of_bounds": errors, "avg_busbw": avg, "ok": errors == 0,
           "error": None}
    with open(a.json, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    argv = sys.argv[1:]
    a = parse_args(argv)
    if a.nranks > 0:
        sys.exit(spawn(a, argv))
    try:
        sys.exit(run_rank(a))
    except Exception as e:  # a failed call: say so and fail, the other ranks time out or fail
        sys.stderr.write("gloo_perf: rank %s: %s\n" % (os.environ.get("RANK", "?"), e))
        sys.exit(EXIT_FAIL)


if __name__ == "__main__":
    main()
