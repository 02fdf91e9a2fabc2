#!/usr/bin/env python3
"""bench_table.py RUNS.TSV - the markdown tables of hosts_bench.sh and tuner_bench.sh.

RUNS.TSV has one row per (launch, size): hosts, per_host, coll, series, variant, launch, bytes,
time_us, busbw, picked and, optionally, net (the transport, printed in the heading). Variants are
"algo:NAME" (a forced algorithm), "tuner:NAME" (an automatic choice, timed) and "pick:NAME" (what
that tuner picked per size, untimed). One table per (hosts, per_host, net, coll, series): each
cell the median over the launches (small series: time per call in us; large: busbw in GB/s),
a tuner's cell with its pick in brackets, and the fastest forced algorithm per size.
"""
import collections
import csv
import statistics
import sys


def size(b):
    b = int(b)
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if b >= n and b % n == 0:
            return "%d %s" % (b // n, unit)
    return "%d B" % b


def table(hosts, per, net, coll, series, rs):
    timed = [r for r in rs if not r["variant"].startswith("pick:")]
    variants = list(collections.OrderedDict.fromkeys(r["variant"] for r in timed))
    picks = {(r["variant"][5:], r["bytes"]): r["picked"] for r in rs
             if r["variant"].startswith("pick:")}
    sizes = sorted({int(r["bytes"]) for r in timed if r["bytes"] != "na"})
    what = ("time per call (us), lower is better" if series == "small"
            else "busbw (GB/s), higher is better")
    n = int(hosts) * int(per)
    where = "%s hosts x %s rank(s) = %d ranks" % (hosts, per, n)
    if net:
        where = "%d ranks on %s host(s), %s" % (n, hosts, net)
    print("### %s, %s, %s messages: %s\n" % (coll, where, series, what))
    print("| size | " + " | ".join(v.split(":", 1)[1] if v.startswith("algo:")
                                   else "auto, " + v[6:] for v in variants)
          + " | fastest forced |")
    print("|---:|" + "---:|" * len(variants) + "---|")
    key = "time_us" if series == "small" else "busbw"
    for b in sizes:
        cells, best = [], None
        for v in variants:
            vals = [float(r[key]) for r in timed if r["variant"] == v and r["bytes"] == str(b)]
            if not vals:
                cells.append("n/a")
                continue
            m = statistics.median(vals)
            cell = ("%.2f" % m if m < 10 else "%.1f" % m) if series == "small" else "%.3f" % m
            if v.startswith("tuner:"):
                cell += " (%s)" % (picks.get((v[6:], str(b))) or "?")
            elif best is None or (m < best[1] if series == "small" else m > best[1]):
                best = (v[5:], m)
            cells.append(cell)
        print("| %s | %s | %s |" % (size(b), " | ".join(cells), best[0] if best else "-"))
    print()


def main():
    rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
    groups = collections.OrderedDict()
    for r in rows:
        key = (r["hosts"], r["per_host"], r.get("net") or "", r["coll"], r["series"])
        groups.setdefault(key, []).append(r)
    for key, rs in groups.items():
        table(*key, rs)


if __name__ == "__main__":
    main()
