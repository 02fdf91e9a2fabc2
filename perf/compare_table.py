#!/usr/bin/python3
"""compare_table.py - the statistics, tables and goal summary of compare.sh (standard library).

    compare_table.py coll --coll C --out-md F.md --out-json F.json [--meta k=v]... INPUT...
    compare_table.py summary --out-md F.md [--link LINK.json] [--meta k=v]... COLL.json...

coll: reads the perf tools' --json files named <lib>-<ranks>-<transport>-<launch>[.s<series>]
.json (lib: tutti, ompi, mpich or gloo; a launch may run its sizes in several series), and
earlier comparisons' JSON files (their runs are read too; a later input replaces a run with the
same library, ranks, transport, launch and series: this is how --merge reruns part of a
comparison). Per size it takes the median (and the best) over launches of each library's
time and busbw, out of place, or in place for the collectives a peer has only in place
(IN_PLACE_ONLY: compare.sh runs every library in place there, so like is held against like),
and writes one markdown table per rank count and transport, with
the tutti/peer ratios of the busbw medians, plus one JSON file holding every raw run.
Gloo always runs over TCP: its column appears in the shared-memory tables too, marked so.
For gather, scatter and the v collectives the runs also say which call each library timed and
the bytes moved and padded per size (perf/README.md): the tables give padded / size.

summary: evaluates the goals of issues 38 and 3 over the collectives' JSON files
(compare_goals.py).
"""
import argparse
import json
import os
import re
import statistics
import sys

import compare_goals

NAME = re.compile(r"^(tutti|ompi|mpich|gloo|mpi)-(\d+)-(\w+)-(\d+)(?:\.s(\d+))?\.json$")
TRANSPORTS = {"shm": "shared memory", "tcp": "TCP"}
PEERS = ("ompi", "mpich", "gloo")
TITLE = {"tutti": "tutti", "ompi": "Open MPI", "mpich": "MPICH", "gloo": "Gloo"}
# Collectives that a peer offers only in place: MPI_Bcast has one buffer, as has torch's (Gloo's)
# broadcast. compare.sh times them in place for every library (--halves in).
IN_PLACE_ONLY = {"broadcast": "MPI_Bcast and Gloo's broadcast have only the in-place form"}


def half_of(run):
    """The half a run timed: "out_of_place", or "in_place" when it timed only that one."""
    rows = run["data"]["results"]
    if rows and all(r.get("out_of_place") is None for r in rows) and \
            any(r.get("in_place") is not None for r in rows):
        return "in_place"
    return "out_of_place"
V_COLLS = ("alltoallv", "allgatherv", "gather", "scatter", "reduce_scatterv")
ABSENT = {("gloo", "reduce_scatter"): "torch's Gloo backend has no reduce-scatter"}
ABSENT.update({("gloo", c): "gloo_perf.py does not run it" for c in V_COLLS})
KEY_SIZES = (8, 1 << 10, 64 << 10, 1 << 20, 64 << 20, 256 << 20)


def load_runs(paths):
    """Runs by (library, nranks, transport, launch, series), later inputs winning; metadata."""
    runs, metas = {}, []
    for path in paths:
        with open(path) as f:
            doc = json.load(f)
        m = NAME.match(os.path.basename(path))
        if m is not None:
            found = [{"library": m.group(1), "nranks": int(m.group(2)), "transport": m.group(3),
                      "launch": int(m.group(4)), "series": int(m.group(5) or 0),
                      "file": os.path.basename(path), "data": doc}]
        elif isinstance(doc, dict) and "runs" in doc:
            found = doc["runs"]
            metas.append(doc.get("meta", {}))
        else:
            sys.exit("compare_table: %s is neither <lib>-<ranks>-<transport>-<launch>.json nor "
                     "a comparison's JSON" % path)
        for run in found:
            run.setdefault("series", 0)
            if run["library"] == "mpi":  # compare_mpi.sh's name for Open MPI
                run["library"] = "ompi"
            key = (run["library"], run["nranks"], run["transport"], run["launch"], run["series"])
            runs[key] = run
    return list(runs.values()), metas


def per_size(runs):
    """{bytes: {"time": [...], "busbw": [...], "wrong": total}} over the runs' rows (the half
    each run timed, half_of)."""
    sizes = {}
    for run in runs:
        key = half_of(run)
        for row in run["data"]["results"]:
            half = row[key]
            if half is None:
                continue
            s = sizes.setdefault(row["bytes"], {"time": [], "busbw": [], "wrong": 0})
            s["time"].append(half["time_us"])
            s["busbw"].append(half["busbw"])
            s["wrong"] += half["wrong"] or 0
    for s in sizes.values():
        s["t_med"], s["bw_med"] = statistics.median(s["time"]), statistics.median(s["busbw"])
        s["bw_best"] = max(s["busbw"])
    return sizes


def stats(runs, nranks, transport):
    """{library: per_size(...)} for one table; Gloo's runs are TCP whatever the table."""
    out = {}
    for lib in ("tutti",) + PEERS:
        sel = [r for r in runs if r["library"] == lib and r["nranks"] == nranks
               and (r["transport"] == transport or lib == "gloo")]
        if sel:
            out[lib] = per_size(sel)
    return out


def best_peer(libs, size):
    """(peer, busbw median) of the fastest peer at this size, or (None, 0)."""
    cands = [(libs[p][size]["bw_med"], p) for p in PEERS if p in libs and size in libs[p]]
    if not cands:
        return None, 0.0
    bw, p = max(cands)
    return p, bw


def ratio(a, b):
    return a / b if b > 0 else None


def fmt_size(b):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if b >= div and b % div == 0:
            return "%d%s" % (b // div, unit)
    return str(b)


def fmt_time(us):
    return "%.2f" % us if us < 100 else "%.1f" % us if us < 10000 else "%.0f" % us


def fmt_bw(s):
    return "%.3f (%.3f)" % (s["bw_med"], s["bw_best"]) if len(s["busbw"]) > 1 else \
        "%.3f" % s["bw_med"]


def fmt_ratio(r):
    return "-" if r is None else "%.2f" % r


def padded(runs):
    """{bytes: padded_bytes} from the rows that carry it (v collectives); every library runs the
    same counts, so any run's value is the value."""
    out = {}
    for run in runs:
        for row in run["data"]["results"]:
            if row.get("padded_bytes") is not None:
                out[row["bytes"]] = row["padded_bytes"]
    return out


def table(runs, coll, nranks, transport):
    libs = stats(runs, nranks, transport)
    pad = padded([r for r in runs if r["nranks"] == nranks])
    if "tutti" not in libs and not any(p in libs for p in PEERS if p != "gloo"):
        return []
    peers = [p for p in PEERS if p in libs]
    sizes = sorted(set().union(*[set(v) for v in libs.values()]))
    name = lambda p: TITLE[p] + (" (TCP)" if p == "gloo" and transport != "tcp" else "")
    head = ["size"]
    for lib in ["tutti"] + peers:
        head += ["%s time (us)" % name(lib), "%s busbw (GB/s)" % name(lib)]
    head += ["tutti/%s" % TITLE[p] for p in peers] + ["tutti/best peer"]
    head += ["padded / size"] if pad else []
    lines = ["### %d ranks, %s" % (nranks, TRANSPORTS.get(transport, transport)), "",
             "| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    t = libs.get("tutti", {})
    for b in sizes:
        cells = [fmt_size(b)]
        for lib in ["tutti"] + peers:
            s = libs[lib].get(b)
            cells += [fmt_time(s["t_med"]), fmt_bw(s)] if s else ["-", "-"]
        for p in peers:
            ok = b in t and b in libs[p]
            cells.append(fmt_ratio(ratio(t[b]["bw_med"], libs[p][b]["bw_med"]) if ok else None))
        p, bw = best_peer(libs, b)
        r = ratio(t[b]["bw_med"], bw) if b in t and p else None
        cells.append("-" if r is None else "%.2f (%s)" % (r, TITLE[p]))
        if pad:
            cells.append("%.2f" % (pad[b] / b) if pad.get(b) and b > 0 else "-")
        lines.append("| " + " | ".join(cells) + " |")
    launches = ", ".join("%d %s" % (len({r["launch"] for r in runs if r["library"] == lib
                                          and r["nranks"] == nranks
                                          and (r["transport"] == transport or lib == "gloo")}),
                                    TITLE[lib]) for lib in ["tutti"] + peers)
    wrong = sum(s["wrong"] for lib in libs.values() for s in lib.values())
    lines += ["", "Launches: %s. Wrong elements over all checked results: %d." % (launches, wrong)]
    absent = [TITLE[p] + ": " + why for (p, c), why in ABSENT.items() if c == coll]
    if absent:
        lines += ["Absent: " + "; ".join(absent) + "."]
    return lines + [""]


def coll_markdown(runs, meta, coll):
    libs = [lib for lib in ("tutti",) + PEERS if any(r["library"] == lib for r in runs)]
    out = ["# %s: tutti vs %s, %s on %s" % (coll, ", ".join(TITLE[p] for p in libs[1:]) or "-",
                                            meta.get("date", "?"), meta.get("host", "?")),
           "",
           "Machine: %s, %s cores, Linux %s; memory bandwidth %s. tutti %s; %s." % (
               meta.get("cpu", "?"), meta.get("cores", "?"), meta.get("kernel", "?"),
               meta.get("membw", "?"), meta.get("tutti_commit", "?"),
               "; ".join(meta[k] for k in ("ompi_version", "mpich_version", "gloo_version")
                         if meta.get(k))),
           "",
           "Generated by `perf/compare.sh`: the libraries launched in turn (tutti, then each "
           "peer, then tutti again), %s launches each per rank count and transport (%s s for "
           "this collective; load average %s before, %s after)." % (
               meta.get("launches", "?"), meta.get("elapsed_s", "?"),
               meta.get("load_before", "?"), meta.get("load_after", "?")),
           ""]
    if meta.get("note"):
        out += [meta["note"], ""]
    for e in meta.get("earlier", []):
        out += ["Other launches come from the comparison of %s (%s s; load average %s before, "
                "%s after)." % (e.get("date", "?"), e.get("elapsed_s", "?"),
                                e.get("load_before", "?"), e.get("load_after", "?")), ""]
    for lib in libs:
        if meta.get(lib + "_cmd"):
            out.append("- %s: `%s`" % (TITLE[lib], meta[lib + "_cmd"]))
    calls = {}
    for r in runs:
        if r["data"].get("call"):
            calls.setdefault(r["library"], r["data"]["call"])
    if calls:
        out += ["", "Calls timed: " + "; ".join("%s: %s" % (TITLE[lib], calls[lib])
                                                for lib in libs if lib in calls) + "."]
    if coll in V_COLLS:
        out += ["", "Block sizes: `-v %s` (perf/README.md): every rank's counts sum to the size, "
                "so the bytes moved per rank equal the size column and busbw compares with the "
                "equal-block collectives; \"padded / size\" is what padding every block to the "
                "largest block of any rank would move instead (nranks x that block), as an "
                "all-to-all or all-gather of equal blocks must." % meta.get("skew", "none")]
    halves = {half_of(r) for r in runs}
    if halves == {"in_place"}:
        form = "in-place result (%s; every library is timed in place, like against like)" % \
            IN_PLACE_ONLY.get(coll, "every library timed only its in-place form")
    elif halves == {"out_of_place"}:
        form = "out-of-place result"
    else:
        form = "result of mixed forms (out of place for some runs, in place for others: not " \
            "like against like; rerun them)"
    out += ["",
            "Each cell is the median over launches of the " + form + " (time: the "
            "average over ranks of the time per call, in microseconds; busbw in GB/s as "
            "nccl-tests computes it, with the best launch in brackets). The ratios are those of "
            "the busbw medians (for a given size, the inverse ratio of the times): above 1, tutti "
            "is faster. The best peer is the one with the highest median at that size.",
            ""]
    for nranks in sorted({r["nranks"] for r in runs}):
        for transport in ("shm", "tcp"):
            if any(r["transport"] == transport and r["library"] != "gloo" for r in runs):
                out += table(runs, coll, nranks, transport)
    return "\n".join(out) + "\n"


# --- summary: the goals of issues 38 and 3 (compare_goals.py) ----------------------------


def all_metas(metas):
    """The metadata of every comparison a collective's file merges, earlier ones included."""
    for m in metas.values():
        yield m
        for e in m.get("earlier", []):
            yield e


def link_row(link):
    """Issue 38's goal 5 (issue 3's too) on a shaped link: link_efficiency.sh's worst case."""
    eff = link.get("worst_efficiency")
    return ("| 5: TCP on a tbf-shaped 10 Gbit/s veth: bytes each rank puts on the wire per "
            "second >= 90%% of iperf3 (of --bidir's, same direction, for collectives that send "
            "both ways) | %s | %s | 0.90 | %s |" % (
                link.get("ranks", "-"), "-" if eff is None else "%.2f (%s)" % (
                    eff, link.get("worst_case", "?")),
                "-" if eff is None else "met" if eff >= 0.9 else "not met"))


def summary_markdown(colls, metas, link, meta):
    sets = [(name, goals) for name, goals in compare_goals.SETS
            if any(c in colls for g in goals for c in g[1])]
    out = ["# tutti vs its peers on one host: %s, %s on %s" % (
               " and ".join("the goals of " + n for n, _ in sets) or ", ".join(colls),
               meta.get("date", "?"), meta.get("host", "?")), "",
           "Machine: %s, %s cores, Linux %s; memory bandwidth %s. tutti %s. Launches of every "
           "collective: %d s in all (the last compare.sh run: %s s). Per-collective tables: "
           "`%s-<collective>.md` beside this file." % (
               meta.get("cpu", "?"), meta.get("cores", "?"), meta.get("kernel", "?"),
               meta.get("membw", "?"), meta.get("tutti_commit", "?"),
               sum(int(m.get("elapsed_s", 0)) for m in all_metas(metas)), meta.get("wall_s", "?"),
               meta.get("stem", "?")), "",
           "A goal is met when the ratio holds at every size in its range, at every rank count "
           "it names; the worst ratio is shown with where it occurred, and a goal not met names "
           "every size that falls short. Ratios of medians over launches: busbw tutti/peer for "
           "bandwidth goals, time peer/tutti for time goals (above 1: tutti is faster). The "
           "best peer is the fastest at that size of those the goal names (every peer, Gloo "
           "over TCP included, unless it says MPI); TCP goals count the TCP peers. Issue 38's "
           "goals 3, 4 and 6 are measured by perf/bound.sh and perf/allreduce_bound.sh."]
    if not sets:  # the v collectives alone: no goal table, and the link row belongs to it
        out = out[:-1] + ["No goal of issue 3 or 38 covers the collectives measured here (%s); "
                          "their goals (issue 34) are read from the table below." %
                          ", ".join(colls)]
    for name, goals in sets:
        out += ["", "### The goals of %s" % name, "",
                "| goal | ranks | worst ratio (size, ranks, vs) | needed | status |",
                "|---|---|---|---:|---|"]
        out += compare_goals.goal_rows(colls, stats, PEERS, goals, "%.1f", TITLE, fmt_size)
        if link is not None and goals is compare_goals.GOALS_38:
            out.append(link_row(link))
    wrong = sum((h or {}).get("wrong") or 0 for runs in colls.values() for r in runs
                for row in r["data"]["results"] for h in (row["out_of_place"], row["in_place"]))
    failed = sum(int(m.get("failed_launches", 0)) for m in all_metas(metas))
    out += ["", "Every run checked its results: %d wrong elements in all; failed launches: %d."
            % (wrong, failed), "", "## tutti / best peer at the key sizes", "",
            "Ratio of busbw medians, tutti over the best peer at that size (which peer in "
            "brackets); `-`: not measured or no peer.", "",
            "| collective | ranks | transport | " + " | ".join(fmt_size(s) for s in KEY_SIZES)
            + " |", "|---|---:|---|" + "---:|" * len(KEY_SIZES)]
    for coll, runs in colls.items():
        for nranks in sorted({r["nranks"] for r in runs}):
            for tr in ("shm", "tcp"):
                libs = stats(runs, nranks, tr)
                if "tutti" not in libs or not any(r["transport"] == tr for r in runs
                                                  if r["library"] == "tutti"):
                    continue
                cells = []
                for b in KEY_SIZES:
                    p, bw = best_peer(libs, b)
                    r = ratio(libs["tutti"][b]["bw_med"], bw) if p and b in libs["tutti"] else None
                    cells.append("-" if r is None else "%.2f (%s)" % (r, TITLE[p]))
                out.append("| %s | %d | %s | %s |" % (coll, nranks, tr, " | ".join(cells)))
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mode", choices=["coll", "summary"])
    ap.add_argument("--out-md", required=True)
    ap.add_argument("--out-json")
    ap.add_argument("--coll", default="all_reduce")
    ap.add_argument("--link", help="link_efficiency.sh's JSON, for the summary")
    ap.add_argument("--meta", action="append", default=[], help="key=value for the header")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    meta = dict(kv.split("=", 1) for kv in args.meta)
    if args.mode == "summary":
        colls, metas = {}, {}
        for path in args.files:
            runs, (m,) = load_runs([path])
            coll = m.get("coll") or runs[0]["data"]["collective"]
            colls[coll], metas[coll] = runs, m
        link = None
        if args.link and os.path.exists(args.link):
            with open(args.link) as f:
                link = json.load(f)
        with open(args.out_md, "w") as f:
            f.write(summary_markdown(colls, metas, link, meta))
        return
    runs, earlier = load_runs(args.files)
    if earlier:  # flat: a comparison merged twice lists both earlier ones
        meta["earlier"] = [dict((k, v) for k, v in m.items() if k != "earlier")
                           for e in earlier for m in [e] + e.get("earlier", [])]
    meta["coll"] = args.coll
    with open(args.out_md, "w") as f:
        f.write(coll_markdown(runs, meta, args.coll))
    runs.sort(key=lambda r: (r["nranks"], r["transport"], r["launch"], r["library"], r["series"]))
    with open(args.out_json, "w") as f:
        json.dump({"meta": meta, "runs": runs}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
