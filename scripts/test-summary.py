#!/usr/bin/env python3
"""Print one closing line for meson test runs: "N passed, N failed, N skipped".

    test-summary.py [TESTLOG.json ...] [--plain RESULTS.txt ...]

Criterion suites count each of their tests (from their "Synthesis" line and [SKIP] lines);
other meson tests (scripts, perf tool checks) count as one test each. Several test logs (the
main build, the sanitizer build) add up. A --plain file has one "name ok|failed|skipped ..."
line per check (tests/fuzz/run.sh writes one per harness; a skipped line gives its reason); a
missing file counts as one failure. Exit status 1 if any test failed, crashed or timed out.
"""
import json
import re
import sys

SYNTH = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)")


def read_lines(path):
    try:
        return open(path, encoding="utf-8", errors="replace").read().splitlines(), None
    except OSError as e:
        return [], e


def count_log(path):
    """(passed, failed, skipped) of one meson testlog.json."""
    passed = failed = skipped = 0
    lines, err = read_lines(path)
    if err is not None:
        print(f"failed: no test log: {err}", file=sys.stderr)
        return 0, 1, 0
    for line in lines:
        rec = json.loads(line)
        out = (rec.get("stdout") or "") + "\n" + (rec.get("stderr") or "")
        m = SYNTH.search(out)
        result = rec.get("result", "")
        if m and result == "SKIP" and int(m.group(1)) == 0:
            # A Criterion program whose every test skipped (exit 77, e.g. no GPU): its skips.
            skipped += max(1, len(re.findall(r"^\[SKIP\]", out, re.M)))
        elif m:
            tested, ok, bad, crash = map(int, m.groups())
            passed += ok
            failed += bad + crash
            skipped += len(re.findall(r"^\[SKIP\]", out, re.M))
            if result not in ("OK", "EXPECTEDFAIL") and bad + crash == 0:
                failed += 1  # the suite itself died (timeout, signal) after its last test
        elif result in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif result == "SKIP":
            skipped += 1
        else:
            failed += 1
            print(f"failed: {rec.get('name')} ({result})", file=sys.stderr)
    return passed, failed, skipped


def count_plain(path):
    """(passed, failed, skipped) of a file of "name ok|failed|skipped ..." lines."""
    lines, err = read_lines(path)
    if err is not None:
        print(f"failed: no results: {err}", file=sys.stderr)
        return 0, 1, 0
    passed = failed = skipped = 0
    for line in lines:
        parts = line.split()
        if len(parts) >= 2 and parts[1] == "ok":
            passed += 1
        elif len(parts) >= 2 and parts[1].rstrip(":") == "skipped":
            skipped += 1
            print(f"skipped: {line}", file=sys.stderr)
        elif parts:
            failed += 1
            print(f"failed: {line}", file=sys.stderr)
    return passed, failed, skipped


def main(args):
    logs, plains = [], []
    while args:
        arg = args.pop(0)
        if arg == "--plain" and args:
            plains.append(args.pop(0))
        else:
            logs.append(arg)
    if not logs and not plains:
        logs = ["build/meson-logs/testlog.json"]
    totals = [0, 0, 0]
    for counts in [count_log(p) for p in logs] + [count_plain(p) for p in plains]:
        totals = [a + b for a, b in zip(totals, counts)]
    passed, failed, skipped = totals
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
