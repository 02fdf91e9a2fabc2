#!/usr/bin/env python3
"""intruder.py - another user of the host against a running job (fault_matrix.sh, fault
"foreign"; issue 36). Run as a user other than the job's, for --seconds, it does what such a
user can to the job's ranks (the processes named --comm, owned by someone else), until the file
--until exists:

  reader   opens every tutti-* name in /dev/shm for reading and for writing, and each rank's
           /proc/<pid>/mem and environ (TUTTI_SECRET is there); counts what opened and the bytes
           it read;
  planter  for every communicator id it sees in /dev/shm (and --id, given before the job
           starts), makes the names that id's segments had before names were salted
           (tutti-<id>-d, -f<src>-<dst>-<ch>), names of today's form with random hashes, and the
           id's topology share file and lock for the host hashes it sees (and --topo-hash), all
           mode 666, filled with 0xff (a topology claiming 2^32-1 NICs);
  signals  sends SIGSTOP and SIGKILL to every rank (must fail: EPERM).

Prints one line: "INTRUDER names_seen N opened N read_bytes N proc_opened N signals_sent N
planted N", removes what it planted, and exits 0 when nothing opened, nothing was read and no
signal was delivered; 1 otherwise; 2 on usage.
"""
import argparse
import os
import random
import re
import signal
import sys
import time

SHM = "/dev/shm"
NAME = re.compile(r"^tutti-([0-9a-f]{16})-")
TOPO = re.compile(r"^tutti-topo-([0-9a-f]{16})-([0-9a-f]{16})")


def ranks(comm):
    """Pids of processes named comm that belong to another user."""
    me, out = os.getuid(), []
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() != comm:
                    continue
            if os.stat(f"/proc/{p}").st_uid != me:
                out.append(int(p))
        except OSError:
            pass
    return out


def try_read(path, flags, stats):
    try:
        fd = os.open(path, flags | os.O_NONBLOCK)
    except OSError:
        return
    stats["opened"] += 1
    try:
        stats["read_bytes"] += len(os.read(fd, 1 << 20))
    except OSError:
        pass
    os.close(fd)


def plant(name, planted, stats):
    path = os.path.join(SHM, name)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError:
        return
    os.fchmod(fd, 0o666)
    os.write(fd, b"\xff" * 65536)
    os.close(fd)
    planted.add(path)
    stats["planted"] += 1


SALTED = {}  # per id: names of today's form, with hashes drawn once


def plant_for(cid, hashes, planted, stats):
    names = [f"tutti-{cid}-d"]
    names += SALTED.setdefault(cid, [f"tutti-{cid}-{k}{random.getrandbits(64):016x}" for k in "df"])
    names += [f"tutti-{cid}-f{s}-{d}-{c}" for s in range(4) for d in range(4) for c in range(2)
              if s != d]
    for h in hashes:
        names += [f"tutti-topo-{cid}-{h}", f"tutti-topo-{cid}-{h}.lock"]
    for n in names:
        plant(n, planted, stats)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, required=True, help="at most this long")
    ap.add_argument("--until", help="stop as soon as this file exists")
    ap.add_argument("--comm", default="fault_rank")
    ap.add_argument("--id", action="append", default=[])
    ap.add_argument("--topo-hash", action="append", default=[])
    a = ap.parse_args()
    if os.getuid() == 0:
        print("intruder: run as a user other than root and the job's", file=sys.stderr)
        return 2
    stats = dict(names_seen=0, opened=0, read_bytes=0, proc_opened=0, signals_sent=0, planted=0)
    planted, seen, ids, hashes = set(), set(), set(a.id), set(a.topo_hash)
    for cid in ids:
        plant_for(cid, hashes, planted, stats)
    end = time.monotonic() + a.seconds
    while time.monotonic() < end and not (a.until and os.path.exists(a.until)):
        for n in os.listdir(SHM):
            path = os.path.join(SHM, n)
            if not n.startswith("tutti-") or path in planted:
                continue
            if n not in seen:
                seen.add(n)
                stats["names_seen"] += 1
            try_read(path, os.O_RDONLY, stats)
            try_read(path, os.O_RDWR, stats)
            t, m = TOPO.match(n), NAME.match(n)
            if t is not None:
                hashes.add(t.group(2))
            cid = t.group(1) if t is not None else (m.group(1) if m is not None else None)
            if cid is not None:
                ids.add(cid)
        for cid in ids:  # again and again: a name freed by the job is taken at once
            plant_for(cid, hashes, planted, stats)
        for pid in ranks(a.comm):
            for f in ("mem", "environ"):
                before = stats["opened"]
                try_read(f"/proc/{pid}/{f}", os.O_RDONLY, stats)
                stats["proc_opened"] += stats["opened"] - before
            for sig in (signal.SIGSTOP, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                    stats["signals_sent"] += 1
                except OSError:
                    pass
        time.sleep(0.002)
    for p in planted:
        try:
            os.unlink(p)
        except OSError:
            pass
    stats["ids"], stats["topo_hashes"] = len(ids), len(hashes)
    print("INTRUDER " + " ".join(f"{k} {v}" for k, v in stats.items()))
    if os.environ.get("INTRUDER_VERBOSE"):
        print("ids", *sorted(ids), "hashes", *sorted(hashes), "seen", *sorted(seen))
    bad = stats["opened"] or stats["read_bytes"] or stats["signals_sent"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
