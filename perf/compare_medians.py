#!/usr/bin/env python3
"""Medians over repeated perf/compare.sh runs.

The VM these figures come from has slow phases that hit one library's launches and not the
other's, so one compare.sh run (itself medians over launches) can be off by 2x at a size. Run
compare.sh K times into DIR/1 .. DIR/K and this prints, per collective and size, the median over
the runs of the time ratio best peer / tutti (above 1: tutti is faster), its range, and the
median times (us) of the best peer and of tutti, from the shared-memory tables.

    perf/compare_medians.py DIR [DIR ...]
"""
import collections
import glob
import os
import re
import statistics
import sys


def rows(path):
    """(collective, size, tutti us, best peer us) of a per-collective table's shm section."""
    coll = re.sub(r".*-vm-", "", os.path.basename(path))[:-3]
    section, peers = "", []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("### "):
                section = line
            cells = [c.strip() for c in line.split("|")]
            if line.startswith("| size |"):  # the peers' time columns
                peers = [i for i, c in enumerate(cells)
                         if c.endswith("time (us)") and not c.startswith("tutti")]
            if not line.startswith("| ") or "shared" not in section or not peers:
                continue
            if not cells[1][:1].isdigit():
                continue
            yield coll, cells[1], float(cells[2]), min(float(cells[i]) for i in peers)


def main(dirs):
    ratio, tt, pt = (collections.defaultdict(list) for _ in range(3))
    order = []
    for top in dirs:
        for path in sorted(glob.glob(os.path.join(top, "*", "*-vm-*.md"))):
            if path.endswith("summary.md"):
                continue
            for coll, size, tutti, peer in rows(path):
                key = (coll, size)
                if key not in ratio:
                    order.append(key)
                ratio[key].append(peer / tutti)
                tt[key].append(tutti)
                pt[key].append(peer)
    current = None
    for coll, size in order:
        if coll != current:
            print(f"\n{coll}:", end="")
            current = coll
        key = (coll, size)
        r = ratio[key]
        peer, tutti = statistics.median(pt[key]), statistics.median(tt[key])
        print(f" {size} {statistics.median(r):.2f} [{min(r):.2f}-{max(r):.2f}] "
              f"({peer:.2f}/{tutti:.2f});", end="")
    print()


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
