#!/usr/bin/python3
"""scale_plot.py - the table and the plot of perf/scale_bench.sh (no dependencies: SVG by hand).

    scale_plot.py RUNS.tsv OUT.svg OUT.md COMMAND

Per rank count, the median over launches of each column. The table gives them all; the plot has
two log-log panels against the rank count: time (launch to ready, the slowest rank; the first
8-byte all-reduce) and memory per rank (the median rank's peak resident set; /dev/shm's peak
divided by the ranks), with the ideal slopes of O(n) total time and O(1) memory for reference.
"""
import math
import statistics
import sys


def load(path):
    rows = [l.rstrip("\n").split("\t") for l in open(path)]
    head, rows = rows[0], rows[1:]
    by_n = {}
    for r in rows:
        by_n.setdefault(int(r[0]), []).append(dict(zip(head, r)))
    return head, by_n


def med(runs, key):
    vals = [float(r[key]) for r in runs if r[key] not in ("-", "")]
    return statistics.median(vals) if vals else None


def panel(x0, title, ns, series, ylabel):
    w, h, pad = 420, 300, 50
    ys = [v for _, pts, _ in series for v in pts if v]
    lo, hi = math.log10(min(ys)) - 0.2, math.log10(max(ys)) + 0.2
    nlo, nhi = math.log2(min(ns)), math.log2(max(ns))
    fx = lambda n: x0 + pad + (math.log2(n) - nlo) / max(nhi - nlo, 1) * (w - 2 * pad)
    fy = lambda v: 20 + h - pad - (math.log10(v) - lo) / (hi - lo) * (h - 2 * pad)
    out = [f'<text x="{x0 + w / 2}" y="16" text-anchor="middle" font-size="13">{title}</text>',
           f'<rect x="{x0 + pad}" y="{20 + pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" '
           'fill="none" stroke="#999"/>']
    for n in ns:
        out.append(f'<text x="{fx(n)}" y="{20 + h - pad + 15}" text-anchor="middle" '
                   f'font-size="10">{n}</text>')
    for e in range(math.floor(lo), math.ceil(hi) + 1):
        if lo <= e <= hi:
            out.append(f'<text x="{x0 + pad - 4}" y="{fy(10 ** e) + 3}" text-anchor="end" '
                       f'font-size="10">{10 ** e:g}</text>')
    out.append(f'<text x="{x0 + w / 2}" y="{20 + h - 12}" text-anchor="middle" '
               f'font-size="11">ranks on one host</text>')
    out.append(f'<text x="{x0 + 12}" y="{20 + h / 2}" font-size="11" transform="rotate(-90 '
               f'{x0 + 12} {20 + h / 2})" text-anchor="middle">{ylabel}</text>')
    for i, (name, pts, colour) in enumerate(series):
        p = [(fx(n), fy(v)) for n, v in zip(ns, pts) if v]
        dash = ' stroke-dasharray="4 3"' if name.startswith("ideal") else ""
        out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2"{dash} points="' +
                   " ".join(f"{a:.1f},{b:.1f}" for a, b in p) + '"/>')
        out.append(f'<text x="{x0 + pad + 6}" y="{20 + pad + 14 + 13 * i}" font-size="10" '
                   f'fill="{colour}">{name}</text>')
    return out


def main():
    tsv, svg, md, cmd = sys.argv[1:5]
    head, by_n = load(tsv)
    ns = sorted(by_n)
    m = {k: [med(by_n[n], k) for n in ns] for k in head[2:]}
    shm_rank = [s / n if s is not None else None for s, n in zip(m["shm_peak_mib"], ns)]
    base = m["init_max_s"][0]
    ideal_t = [base * n / ns[0] for n in ns] if base else [None] * len(ns)
    parts = panel(0, "time", ns, [("launch to ready, slowest rank (s)", m["init_max_s"], "#1f77b4"),
                                  ("first 8 B all-reduce (s)", [v / 1e3 if v else None for v in m["first_ms"]], "#d62728"),
                                  ("ideal: O(n) from the first point", ideal_t, "#999")], "seconds")
    parts += panel(440, "memory per rank", ns, [("peak RSS, median rank (MiB)", m["hwm_med_mib"], "#2ca02c"),
                                                ("/dev/shm peak / ranks (MiB)", shm_rank, "#9467bd")], "MiB")
    with open(svg, "w") as f:
        f.write('<svg xmlns="http://www.w3.org/2000/svg" width="880" height="330" '
                'font-family="sans-serif">\n<rect width="880" height="330" fill="white"/>\n')
        f.write("\n".join(parts) + "\n</svg>\n")
    cols = ["wall_s", "init_max_s", "init_med_s", "first_ms", "second_ms", "hwm_med_mib",
            "hwm_max_mib", "shm_peak_mib", "rendezvous_ms", "detect_ms", "local_ms", "records_ms",
            "connect_ms", "wrong"]
    with open(md, "w") as f:
        f.write(f"`{cmd}` (medians over launches; {tsv.rsplit('/', 1)[-1]} has every launch)\n\n")
        f.write("| ranks | launches | " + " | ".join(cols) + " |\n")
        f.write("|---:" * (len(cols) + 2) + "|\n")
        for i, n in enumerate(ns):
            cells = [("-" if m[c][i] is None else f"{m[c][i]:g}") for c in cols]
            f.write(f"| {n} | {len(by_n[n])} | " + " | ".join(cells) + " |\n")


main()
