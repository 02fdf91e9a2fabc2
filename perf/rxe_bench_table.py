#!/usr/bin/env python3
"""rxe_bench_table.py - read the BENCH lines of tests/rdma/vm_bench.sh (from the Soft-RoCE VM)
and print markdown tables: per size the medians of the wire (ib_write_bw one way and both ways)
and of tutti's all-reduce and broadcast over verbs (copied, registered) and over TCP, as MB/s
per direction, with the ratios that matter.

For 2 ranks both collectives move `size` bytes per direction per call (all-reduce: half in the
reduce-scatter, half in the all-gather, both ranks at once, so each direction of the link
carries size; broadcast: the root's size, one way), so MB/s = size / time. The all-reduce is
compared with both wire figures: one way, and ib_write_bw -b (both directions at once, as the
all-reduce runs; it reports both together, halved here). Sizes below 4 KiB are shown as time
per call instead.

Usage: perf/rxe_bench_table.py LOGFILE
"""
import statistics
import sys
from collections import defaultdict


def main():
    runs = defaultdict(list)
    start = end = ""
    for line in open(sys.argv[1], errors="replace"):
        f = line.split()
        if not f:
            continue
        if f[0] == "BENCH-START":
            start = " ".join(f[1:])
        elif f[0] == "BENCH-END":
            end = f[1]
        elif f[0] == "BENCH" and len(f) == 5:
            variant, coll, size, value = f[1], f[2], int(f[3]), float(f[4])
            if variant.startswith("wire"):
                mbs = value / 2 if variant == "wire-2way" else value
            else:
                mbs = size / value  # bytes per us = MB/s
            runs[(variant, coll, size)].append(mbs)
    med = {k: statistics.median(v) for k, v in runs.items()}
    n = {k: len(v) for k, v in runs.items()}
    sizes = sorted({k[2] for k in runs})
    small = [s for s in sizes if s < 4096]
    large = [s for s in sizes if s >= 4096]
    print(f"VM: {start}; ended {end}. Medians of {max(n.values()) if n else 0} launches "
          f"(every value: the .log).\n")

    def fmt(x, d=1):
        return f"{x:.{d}f}" if x is not None else "-"

    def ratio(a, b):
        return f"{a / b:.2f}" if a is not None and b else "-"

    if small:
        print("### small messages, 2 ranks: time per call (us), lower is better\n")
        print("| collective | size | tutti ib | tutti tcp | ib / tcp |")
        print("|---|---:|---:|---:|---:|")
        for coll in ("all_reduce", "broadcast"):
            for s in small:
                ib, tcp = med.get(("ib", coll, s)), med.get(("tcp", coll, s))
                ib_us = s / ib if ib else None
                tcp_us = s / tcp if tcp else None
                print(f"| {coll} | {s} B | {fmt(ib_us)} | {fmt(tcp_us)} | {ratio(ib_us, tcp_us)} |")
        print()
    for coll in ("all_reduce", "broadcast"):
        print(f"### {coll}, 2 ranks (rxe0 <-> rxe1): MB/s per direction, higher is better\n")
        print("| size | ib_write_bw one way | ib_write_bw -b, per way | tutti ib | tutti ib, "
              "registered | tutti tcp | ib / one way | ib / -b | registered / ib | ib / tcp |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        for s in large:
            w1, w2 = med.get(("wire-1way", "-", s)), med.get(("wire-2way", "-", s))
            ib, reg, tcp = (med.get((v, coll, s)) for v in ("ib", "ib+reg", "tcp"))
            label = f"{s // 1048576} MiB" if s >= 1048576 else f"{s // 1024} KiB"
            print(f"| {label} | {fmt(w1)} | {fmt(w2)} | {fmt(ib)} | {fmt(reg)} | {fmt(tcp)} | "
                  f"{ratio(ib, w1)} | {ratio(ib, w2)} | {ratio(reg, ib)} | {ratio(ib, tcp)} |")
        print()


if __name__ == "__main__":
    main()
