#!/usr/bin/env bash
# Proves that a wrong result is caught: runs a perf tool with the hidden --debug-corrupt (one
# output element flipped after each checked call) and requires exit status 1, the FAILED footer
# and a JSON whose rows count wrong elements. Usage: test_corrupt.sh TOOL [tool options...]
set -u
tool="$1"
shift
json="$(mktemp)"
trap 'rm -f "$json"' EXIT
out="$("$tool" "$@" --debug-corrupt --json "$json")"
rc=$?
echo "$out"
if [ "$rc" -ne 1 ]; then
  echo "test_corrupt: expected exit status 1, got $rc"
  exit 1
fi
if ! grep -q "^# Out of bounds values : [1-9][0-9]* FAILED" <<<"$out"; then
  echo "test_corrupt: no FAILED 'Out of bounds values' line"
  exit 1
fi
python3 - "$json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
wrong = [h["wrong"] for r in doc["results"] for h in (r["out_of_place"], r["in_place"]) if h]
assert not doc["ok"] and doc["out_of_bounds"] > 0, "JSON does not report the failure"
assert any(w and w > 0 for w in wrong), "no row counts wrong elements"
print("test_corrupt: caught, %d of %d results wrong" % (sum(1 for w in wrong if w), len(wrong)))
PY
