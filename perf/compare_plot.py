#!/usr/bin/python3
"""compare_plot.py - the PNG of one collective's comparison (matplotlib, from Debian).

    compare_plot.py --out-png F.png COLL.json

One panel per rank count: busbw (median over launches, out of place) against the size, both
axes logarithmic, one line per library and transport (colour: library; solid: shared memory,
dashed: TCP), and the machine's memory bandwidth as measured by the same comparison (membw:
memcpy of 256 MiB) as horizontal lines: bytes copied per second, and read + written per second.
"""
import argparse
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from compare_table import PEERS, TITLE, fmt_size, load_runs, stats  # noqa: E402

COLOURS = {"tutti": "tab:red", "ompi": "tab:blue", "mpich": "tab:green", "gloo": "tab:purple"}
STYLE = {"shm": "-", "tcp": "--"}


def panel(ax, runs, nranks, membw):
    for tr in ("shm", "tcp"):
        if not any(r["transport"] == tr and r["nranks"] == nranks for r in runs):
            continue
        libs = stats(runs, nranks, tr)
        for lib in ("tutti",) + PEERS:
            if lib not in libs or (lib == "gloo" and tr != "tcp"):
                continue
            sizes = sorted(b for b in libs[lib] if b > 0)
            ax.plot(sizes, [max(libs[lib][b]["bw_med"], 1e-6) for b in sizes], STYLE[tr],
                    color=COLOURS[lib], marker=".", label="%s, %s" % (TITLE[lib], tr))
    m = re.search(r"copy ([\d.]+) GB/s, read\+write ([\d.]+) GB/s", membw or "")
    if m:
        copy, rw = float(m.group(1)), float(m.group(2))
        ax.axhline(rw, color="grey", linewidth=1.5)
        ax.axhline(copy, color="grey", linewidth=1, linestyle=":")
        ax.text(10, rw * 1.08, "memory bandwidth: memcpy read+write %.1f GB/s" % rw,
                color="dimgrey", fontsize=8)
        ax.text(10, copy * 0.72, "memcpy, bytes copied: %.1f GB/s" % copy, color="dimgrey",
                fontsize=8)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = [8, 64, 1 << 10, 8 << 10, 64 << 10, 1 << 20, 8 << 20, 64 << 20, 256 << 20]
    ax.set_xticks(ticks)
    ax.set_xticklabels([fmt_size(t) for t in ticks])
    ax.set_xlabel("size (bytes)")
    ax.set_ylabel("busbw (GB/s, log)")
    ax.set_title("%d ranks" % nranks)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out-png", required=True)
    ap.add_argument("comparison")
    args = ap.parse_args()
    runs, metas = load_runs([args.comparison])
    meta = metas[0] if metas else {}
    ranks = sorted({r["nranks"] for r in runs})
    fig, axes = plt.subplots(1, len(ranks), figsize=(6.5 * len(ranks), 5), squeeze=False)
    for ax, nranks in zip(axes[0], ranks):
        panel(ax, runs, nranks, meta.get("membw"))
    fig.suptitle("%s: busbw vs size, median of %s launches (%s, %s)" % (
        meta.get("coll", "?"), meta.get("launches", "?"), meta.get("host", "?"),
        meta.get("date", "?")[:10]))
    fig.tight_layout()
    fig.savefig(args.out_png, dpi=100)


if __name__ == "__main__":
    main()
