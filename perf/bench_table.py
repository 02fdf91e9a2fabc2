#!/usr/bin/env python3
"""bench_table.py RUNS.TSV - the markdown tables of hosts_bench.sh and tuner_bench.sh.

RUNS.TSV has one row per (launch, size): hosts, per_host, coll, series, variant, launch, bytes,
time_us, busbw, picked and, optionally, net (the transport, printed in the heading). Variants are
"algo:NAME" (a forced algorithm), "tuner:NAME" (an automatic choice, timed) and "pick:NAME" (what
that tuner picked per size, untimed: "ALGO" or "ALGO/chunk bytes/channels"). One table per
(hosts, per_host, net, coll, series): each cell the median over the launches (small series:
time per call in us; large: busbw in GB/s), a tuner's cell with its algorithm in brackets, and
the fastest forced algorithm per size. When the picks carry chunk and channels and both tuners
ran, a last section compares them: where their configurations differ, each size with the
ratio of their times (model / static), and per configuration and collective the geometric
mean of that ratio where they differ and where they agree (the noise of the measurement).
"""
import collections
import csv
import math
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
                cell += " (%s)" % ((picks.get((v[6:], str(b))) or "?").split("/")[0])
            elif best is None or (m < best[1] if series == "small" else m > best[1]):
                best = (v[5:], m)
            cells.append(cell)
        print("| %s | %s | %s |" % (size(b), " | ".join(cells), best[0] if best else "-"))
    print()


def geo(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def compare(groups):
    """The tuners side by side where their configurations differ, and the noise where not."""
    diff, ratios = [], collections.OrderedDict()
    for (hosts, per, net, coll, series), rs in groups.items():
        picks = {(r["variant"][5:], r["bytes"]): r["picked"] for r in rs
                 if r["variant"].startswith("pick:")}
        if not any("/" in p for p in picks.values()):
            continue
        where = "%s:%s" % (net, per) if net else "%s hosts x %s" % (hosts, per)
        for b in sorted({int(r["bytes"]) for r in rs if r["bytes"] not in ("na", "0")}):
            t = {}
            for r in rs:
                if r["bytes"] == str(b) and not r["variant"].startswith("pick:"):
                    t.setdefault(r["variant"], []).append(float(r["time_us"]))
            st, mo = picks.get(("static", str(b))), picks.get(("model", str(b)))
            if not st or not mo or "tuner:static" not in t or "tuner:model" not in t:
                continue
            r = statistics.median(t["tuner:model"]) / statistics.median(t["tuner:static"])
            kind = "agree" if st == mo else "differ"
            ratios.setdefault((where, coll), {"agree": [], "differ": []})[kind].append(r)
            if kind == "differ":
                forced = {v[5:]: statistics.median(x) for v, x in t.items() if v.startswith("algo:")}
                best = min(forced, key=forced.get) if forced else "-"
                diff.append((where, coll, b, st, statistics.median(t["tuner:static"]), mo,
                             statistics.median(t["tuner:model"]), r, best, forced.get(best, 0)))
    if not ratios:
        return
    print("### The tuners side by side (time per call, median; model / static)\n")
    print("| configuration | collective | sizes | where they differ: sizes, geo mean (min-max) "
          "| where they agree (noise): geo mean (min-max) |")
    print("|---|---|---:|---|---|")
    for (where, coll), k in ratios.items():
        d, a = k["differ"], k["agree"]
        fd = "%d, %.2f (%.2f-%.2f)" % (len(d), geo(d), min(d), max(d)) if d else "0"
        fa = "%.2f (%.2f-%.2f)" % (geo(a), min(a), max(a)) if a else "-"
        print("| %s | %s | %d | %s | %s |" % (where, coll, len(d) + len(a), fd, fa))
    print()
    if diff:
        print("| configuration | collective | bytes | static: algorithm/chunk/channels | us | model "
              "| us | model / static | fastest forced | us |")
        print("|---|---|---:|---|---:|---|---:|---:|---|---:|")
        for row in diff:
            print("| %s | %s | %s | %s | %.4g | %s | %.4g | %.2f | %s | %.4g |" % (
                row[0], row[1], size(row[2]), row[3], row[4], row[5], row[6], row[7], row[8],
                row[9]))
        print()


def main():
    rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
    groups = collections.OrderedDict()
    for r in rows:
        key = (r["hosts"], r["per_host"], r.get("net") or "", r["coll"], r["series"])
        groups.setdefault(key, []).append(r)
    for key, rs in groups.items():
        table(*key, rs)
    compare(groups)


if __name__ == "__main__":
    main()
