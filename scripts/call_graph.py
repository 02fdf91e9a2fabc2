#!/usr/bin/env python3
"""File-level call graph of libtutti, read from its object files (issue 19).

Each object file of the shared library (found through build/compile_commands.json) defines some
global symbols (`nm --defined-only`) and uses others (`nm -u`). File A uses file B when A names
a symbol that B defines: a call, or a reference to B's data. Static functions and inline
functions of headers are invisible here, as they are to the linker.

Prints the strongly connected components of more than one file (files that reach one another
through uses: a cycle), largest first, for the whole library and for src/ alone (the uses
between src/ files only). With -v, each use inside a component is listed with its symbols.

Usage: call_graph.py [--build DIR] [-v] [--check N]
  --check N  exit 1 when the largest cycle among src/ files has more than N files.
"""
import argparse
import json
import os
import subprocess
import sys


def objects(build):
    """{object path: source path relative to the source root} of the library's objects."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        cmds = json.load(f)
    root = os.path.abspath(os.path.join(build, ".."))
    out = {}
    for c in cmds:
        obj = c["output"]
        if not os.path.basename(os.path.dirname(obj)).startswith("libtutti.so"):
            continue
        src = os.path.normpath(os.path.join(c["directory"], c["file"]))
        out[os.path.join(c["directory"], obj)] = os.path.relpath(src, root)
    return out


def nm(args, obj):
    res = subprocess.run(["nm"] + args + [obj], capture_output=True, text=True, check=True)
    syms = set()
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:  # "[value] type name"
            syms.add(parts[-1])
    return syms


def graph(build):
    """{file: {used file: sorted symbols}}."""
    objs = objects(build)
    if not objs:
        sys.exit("call_graph: no object of libtutti in %s (build it first)" % build)
    defined_by = {}
    uses = {}
    for obj, src in objs.items():
        for s in nm(["--defined-only", "-g"], obj):
            defined_by[s] = src
        uses[src] = nm(["-u"], obj)
    g = {src: {} for src in uses}
    for src, syms in uses.items():
        for s in syms:
            to = defined_by.get(s)
            if to is not None and to != src:
                g[src].setdefault(to, []).append(s)
    for src in g:
        for to in g[src]:
            g[src][to].sort()
    return g


def sccs(g):
    """Strongly connected components of g (Tarjan, iterative), each a sorted list."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(g):
        if start in index:
            continue
        work = [(start, iter(sorted(g[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            nxt = next(it, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter[0]
                    counter[0] += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(g.get(nxt, {})))))
                elif nxt in on:
                    low[v] = min(low[v], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return sorted(out, key=lambda c: (-len(c), c))


def report(title, g, verbose):
    comps = [c for c in sccs(g) if len(c) > 1]
    print("%s: %d cycle(s)" % (title, len(comps)))
    for c in comps:
        print("  %d files: %s" % (len(c), " ".join(c)))
        if verbose:
            members = set(c)
            for a in c:
                for b in sorted(g[a]):
                    if b in members:
                        print("    %s -> %s: %s" % (a, b, " ".join(g[a][b])))
    return max((len(c) for c in comps), default=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(__file__), "..", "build"))
    ap.add_argument("--check", type=int, metavar="N")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    g = graph(a.build)
    report("library", g, a.verbose)
    src = {f: {t: s for t, s in e.items() if t.startswith("src/")}
           for f, e in g.items() if f.startswith("src/")}
    largest = report("src/", src, a.verbose)
    if a.check is not None and largest > a.check:
        print("call_graph: the largest cycle in src/ has %d files, more than %d" %
              (largest, a.check))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
