#!/usr/bin/env python3
"""Print one closing line for a meson test run: "N passed, N failed, N skipped".

Criterion suites count each of their tests (from their "Synthesis" line and [SKIP] lines);
other meson tests (scripts, perf tool checks) count as one test each. Exit status 1 if any
test failed, crashed or timed out.
"""
import json
import re
import sys

SYNTH = re.compile(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)")


def main(path):
    passed = failed = skipped = 0
    try:
        lines = open(path, encoding="utf-8", errors="replace").read().splitlines()
    except OSError as e:
        print(f"0 passed, 1 failed, 0 skipped (no test log: {e})")
        return 1
    for line in lines:
        rec = json.loads(line)
        out = (rec.get("stdout") or "") + "\n" + (rec.get("stderr") or "")
        m = SYNTH.search(out)
        result = rec.get("result", "")
        if m:
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
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "build/meson-logs/testlog.json"))
