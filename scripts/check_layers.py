#!/usr/bin/env python3
"""Layering of the library's folders (issue 19), checked from its #include lines.

Prints the folder-level include graph ("from -> to  N": N #include lines of files in `from`
naming a file in `to`) of src/, transports/, topology/ and kernels/, then checks:
  1. The base layer (src/base/ and src/net/) includes no other folder of the
     library except kernels/'s plain C headers it names in BASE_MAY.
  2. transports/, topology/ and kernels/ include nothing of src/ beyond the base layer.
  3. Inside src/, a folder includes only folders below it in ORDER (calls go down or sideways
     within a folder, never up), and there is no cycle between folders.
  4. Only src/comm and src/api touch the communicator's body: no other file writes `comm->`
     outside a comment (src/nccl's `comm` is the shim's own ncclComm). Each lower layer has an
     object of its own (exec's fabric, run's runner, gpu's struct tutti_gpu) that the
     communicator assembles; the tools use the public API.
An include that breaks a rule today is listed in KNOWN: that list may only shrink. A new one
fails the check; one that is gone is reported so that it is taken off the list.
An include "x.h" is resolved as the compiler does: next to the including file, then in the
include directories of meson.build (include/, the source root, src/).
Usage: check_layers.py [SOURCE_ROOT]
"""
import os, re, sys
from collections import Counter

# src/ folders from the top (entry points) down; a folder may include those after it.
ORDER = ['src/tools', 'src/nccl', 'src/api', 'src/comm', 'src/gpu', 'src/run', 'src/win', 'src/coll',
         'src/exec', 'topology', 'transports', 'kernels', 'src/net', 'src/base']
BASE = ('src/base', 'src/net')
LOWER = ('transports', 'topology', 'kernels')
# Known breaks, "including file -> included file": the list may only shrink (empty since
# issue 37 split the communicator into the objects each layer owns).
KNOWN = set()
COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*', re.S)
COMM_BODY = re.compile(r'\bcomm->')

INC = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)

def folder(path):
    return os.path.dirname(path)

def top(path):
    """The layer a file belongs to: its src/ folder, or its top folder outside src/."""
    parts = path.split('/')
    if parts[0] == 'src':
        return 'src' if len(parts) == 2 else 'src/' + parts[1]
    return parts[0]

def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..')
    os.chdir(root)
    files = []
    for d in ('src', 'transports', 'topology', 'kernels'):
        for dp, dn, fn in os.walk(d):
            dn[:] = [x for x in dn if x != 'python']
            files += [os.path.join(dp, f) for f in fn if f.endswith(('.c', '.h', '.cu', '.cuh'))]
    edges = []
    for f in sorted(files):
        for name in INC.findall(open(f, encoding='utf-8', errors='replace').read()):
            for base in (folder(f), 'include', '.', 'src'):
                p = os.path.normpath(os.path.join(base, name))
                if os.path.isfile(p):
                    edges.append((f, p))
                    break
    print('folder include graph (from -> to: #include lines):')
    n = Counter((folder(a), folder(b)) for a, b in edges if folder(a) != folder(b))
    for (a, b), c in sorted(n.items()):
        print(f'  {a + " -> " + b:<44} {c}')
    rank = {l: i for i, l in enumerate(ORDER)}
    found = set()
    for a, b in edges:
        la, lb = top(a), top(b)
        if b.startswith('include/') or la == lb:
            continue
        if la in BASE and lb not in BASE:
            found.add(f'{a} -> {b}')  # rule 1
        elif la.split('/')[0] in LOWER and lb.startswith('src/') and lb not in BASE:
            found.add(f'{a} -> {b}')  # rule 2 (src itself is the base)
        elif la in rank and lb in rank and rank[lb] < rank[la]:
            found.add(f'{a} -> {b}')  # rule 3: upward
    rc = 0
    body_ok = ('src/comm', 'src/api', 'src/nccl')
    for f in sorted(files):
        if top(f) not in body_ok:
            text = COMMENT.sub(' ', open(f, encoding='utf-8', errors='replace').read())
            if COMM_BODY.search(text):
                print(f'check_layers: {f} reaches into the communicator (comm->): take the '
                      'object of its own layer (fabric, runner, gpu) as an argument, or the public API')
                rc = 1
    print('includes that go up a layer (known, may only shrink):')
    for e in sorted(found):
        print('  ' + e)
    new, gone = found - KNOWN, KNOWN - found
    if new:
        print('check_layers: new upward includes (pass what is needed as arguments or move the')
        print('declaration down to the layer that owns it):')
        for e in sorted(new):
            print('  ' + e)
        rc = 1
    if gone:
        print('check_layers: fixed, take off KNOWN in scripts/check_layers.py:')
        for e in sorted(gone):
            print('  ' + e)
        rc = 1
    if rc == 0:
        print(f'check_layers: {len(edges)} includes, no new upward include ({len(found)} known)')
    return rc

if __name__ == '__main__':
    sys.exit(main())
