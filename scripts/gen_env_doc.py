#!/usr/bin/env python3
"""gen_env_doc.py - docs/ENV.md from the one table of environment variables (src/base/env.h).

    scripts/gen_env_doc.py            # write docs/ENV.md
    scripts/gen_env_doc.py --check    # exit 1, saying so, when docs/ENV.md is not what it writes

Each X(NAME, TYPE, "default", "lo", "hi", "help" "help" ...) entry of TUTTI_ENV_VARS becomes a
row: TUTTI_NAME, its type, default, range and help, in the table's order.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "src", "base", "env.h")
DOC = os.path.join(ROOT, "docs", "ENV.md")

PREAMBLE = """# Environment variables

Generated from the table in `src/base/env.h` by `scripts/gen_env_doc.py` (a test fails when this
file is stale). `tutti-info --env` prints the same table with the values now set.

Integers are decimal (`010` is ten); sizes are digits and `k`, `m`, `g` or `t` (binary, either
case, optionally followed by `B` or `iB`: `4k`, `4KiB`); durations are digits, an optional
fraction and `ns`, `us`, `ms`, `s`, `m`, `min` or `h` (a bare number is seconds: `1.5s`, `250us`).
Nothing else is read as a number: no spaces, signs, hexadecimal or exponents (`1e3`, `0x10`),
and no `kb` (kilobits?). Every number has a range, both ends included: a
value out of it, or one that does not parse, fails `tutti_get_unique_id` and every
communicator's creation with `TUTTI_ERR_INVALID_ARG` naming the variable, the value and the
range (a job never runs on a default it was not asked for). An unknown `TUTTI_*` name is a
warning. Under the NCCL shim, `NCCL_*` variables stand in for unset `TUTTI_*` ones where tutti
has the concept (docs/FRAMEWORKS.md).

| variable | type | default | range | meaning |
|---|---|---|---|---|
"""

ENTRY = re.compile(r'X\(\s*([A-Z0-9_]+)\s*,\s*([A-Z]+)\s*,\s*"((?:[^"\\]|\\.)*)"\s*,\s*'
                   r'"((?:[^"\\]|\\.)*)"\s*,\s*"((?:[^"\\]|\\.)*)"\s*,((?:\s*"(?:[^"\\]|\\.)*")+)\s*\)')


def rows():
    text = open(HEADER, encoding="utf-8").read()
    body = text[text.index("#define TUTTI_ENV_VARS"):]
    body = body[:body.index("\n\n")].replace("\\\n", " ")
    out = []
    for name, typ, default, lo, hi, helps in ENTRY.findall(body):
        help_text = "".join(re.findall(r'"((?:[^"\\]|\\.)*)"', helps)).replace('\\"', '"')
        rng = f"{lo} to {hi}" if lo else ""
        out.append(f"| `TUTTI_{name}` | {typ.lower()} | {'`' + default + '`' if default else ''} "
                   f"| {rng} | {help_text.replace('|', '/')} |")
    return out


def main():
    r = rows()
    if len(r) < 40:
        sys.exit(f"gen_env_doc: only {len(r)} variables found in src/base/env.h: the parser is out of "
                 "step with the table")
    doc = PREAMBLE + "\n".join(r) + "\n"
    if "--check" in sys.argv[1:]:
        have = open(DOC, encoding="utf-8").read() if os.path.exists(DOC) else ""
        if have != doc:
            sys.exit("gen_env_doc: docs/ENV.md is stale: run scripts/gen_env_doc.py")
        print(f"gen_env_doc: docs/ENV.md lists the {len(r)} variables of src/base/env.h")
        return
    open(DOC, "w", encoding="utf-8").write(doc)
    print(f"gen_env_doc: wrote docs/ENV.md ({len(r)} variables)")


if __name__ == "__main__":
    main()
