#!/usr/bin/env python3
"""File-level call graph of libtutti, read from its object files (issue 19).

Each object file of the shared library (found through build/compile_commands.json) defines some
global symbols (`nm --defined-only`) and uses others (`nm -u`). File A uses file B when A names
a symbol that B defines: a call, or a reference to B's data. The static inline functions of the
library's headers, which nm cannot see, are read from the sources: a file that calls one uses
its header, and the header uses what the function's body names (a global symbol's file, or
another header's inline function).

Prints the strongly connected components of more than one file (files that reach one another
through uses: a cycle), largest first, for the whole library and for src/ alone (the uses
between src/ files only). With -v, each use inside a component is listed with its symbols.

Then the folder graph (a folder uses another when one of its files or headers uses one of the
other's): the folders must form no cycle, so that every folder calls only folders below it.

Usage: call_graph.py [--build DIR] [-v] [--check N]
  --check N  exit 1 when the largest cycle among the library's files (src/, transports/,
             topology/, kernels/) has more than N files, or when any cycle joins two folders.
"""
import argparse
import json
import os
import re
import subprocess
import sys

INLINE = re.compile(r'^static inline [^;{(]*?\b(\w+)\s*\(', re.M)
CALL = re.compile(r'\b(\w+)\s*\(')
LIB_DIRS = ("src", "transports", "topology", "kernels")


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
    add_inlines(g, objs, defined_by, os.path.abspath(os.path.join(build, "..")))
    for src in g:
        for to in g[src]:
            g[src][to].sort()
    return g


def strip_comments(text):
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)


def inline_bodies(text):
    """{name: body} of the static inline functions defined in a header's text."""
    out = {}
    for m in INLINE.finditer(text):
        i = text.find("{", m.end())
        if i < 0 or ";" in text[m.end():i]:
            continue
        depth, j = 0, i
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                break
            j += 1
        out[m.group(1)] = text[i:j + 1]
    return out


def add_inlines(g, objs, defined_by, root):
    """Edges through the headers' static inline functions (see the module's doc)."""
    where, bodies = {}, {}
    for d in LIB_DIRS:
        for dp, dn, fn in os.walk(os.path.join(root, d)):
            dn[:] = [x for x in dn if x != "python"]
            for f in fn:
                if f.endswith((".h", ".cuh")):
                    path = os.path.join(dp, f)
                    rel = os.path.relpath(path, root)
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        for name, body in inline_bodies(strip_comments(fh.read())).items():
                            where[name], bodies[name] = rel, body
    if not where:
        return
    def uses(text, me):
        for name in set(CALL.findall(text)):
            to = where.get(name) or defined_by.get(name)
            if to is not None and to != me:
                g.setdefault(me, {}).setdefault(to, []).append(name)
    for name, body in bodies.items():
        uses(body, where[name])
    for src in set(objs.values()):
        path = os.path.join(root, src)
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = strip_comments(fh.read())
            for name in set(CALL.findall(text)) & set(where):
                if where[name] != src:
                    g.setdefault(src, {}).setdefault(where[name], []).append(name)
    for to in set(t for e in list(g.values()) for t in e):
        g.setdefault(to, {})


def folders(g):
    """The folder graph of g: {folder: {used folder: sorted "file -> file" lines}}."""
    out = {}
    for a, e in g.items():
        fa = os.path.dirname(a)
        out.setdefault(fa, {})
        for b, syms in e.items():
            fb = os.path.dirname(b)
            if fb != fa:
                out[fa].setdefault(fb, []).append("%s -> %s (%s)" % (a, b, " ".join(sorted(set(syms))[:3])))
                out.setdefault(fb, {})
    return out


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
    whole = report("library", g, a.verbose)
    src = {f: {t: s for t, s in e.items() if t.startswith("src/")}
           for f, e in g.items() if f.startswith("src/")}
    largest = report("src/", src, a.verbose)
    fg = folders(g)
    crossing = report("folders", fg, True)
    rc = 0
    if a.check is not None and max(whole, largest) > a.check:
        print("call_graph: the largest cycle has %d files, more than %d" %
              (max(whole, largest), a.check))
        rc = 1
    if a.check is not None and crossing > 1:
        print("call_graph: %d folders call one another in a cycle (listed above): a folder "
              "may call only the folders below it" % crossing)
        rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
