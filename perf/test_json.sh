#!/usr/bin/env bash
# The perf tools' JSON as nccl-tests' tools read it (tools/analyze_perf_json.py of nccl-tests
# 2.19): runs TOOL with -I 1 -J and checks the keys that script reads, that every per-iteration
# time is the slowest rank's (its consistency check), that the in-place half of a tool without
# one is null, and that the file is strict JSON (no NaN); for the v collectives, that every row
# says the bytes moved (the size) and padded (at least as many).
# Usage: test_json.sh TOOL [options...]
set -u
tool="$1"
shift
json="$(mktemp)"
trap 'rm -f "$json"' EXIT
"$tool" "$@" -I 1 -J "$json" || { echo "test_json: $tool exited with $?"; exit 1; }
/usr/bin/python3 - "$json" <<'PY'
import json, sys

def strict(token):
    raise ValueError("not JSON: %s" % token)

doc = json.load(open(sys.argv[1]), parse_constant=strict)
cfg = doc["config"]
iters = cfg["iterations"]
assert cfg["aggregated_iterations"] >= 1 and cfg["per_iter_timing"] is True, cfg
assert "version" in doc and len(doc["devices"]) == doc["nranks"], doc["devices"]
assert all("hostname" in d for d in doc["devices"])
rows = doc["results"]
assert rows, "no results"
checked = 0
vform = "moved_bytes" in rows[0]
assert not vform or ("call" in doc and cfg["skew"] in ("none", "uniform", "zipf")), doc.get("call")
for r in rows:
    assert r["size"] == r["bytes"], r
    if vform:
        assert r["moved_bytes"] == r["size"] <= r["padded_bytes"], r
    for half in ("out_of_place", "in_place"):
        h = r[half]
        per = r.get(half + "_per_iter")
        if h is None:
            assert per is None, "%s of %d: per-iteration record without the half" % (half, r["size"])
            continue
        for k in ("time", "alg_bw", "bus_bw", "nwrong"):
            assert k in h, "%s of %d lacks %s" % (half, r["size"], k)
        assert per is not None, "%s of %d: no per-iteration record" % (half, r["size"])
        for k in ("min_us", "max_us", "avg_us", "p99_us", "cv_pct"):
            assert isinstance(per[k], (int, float)), (k, per[k])
        times = per["times_us"]
        procs = per["per_process_max_times_us"]
        assert len(times) == iters and len(procs) == doc["nranks"], (len(times), len(procs))
        assert all(len(p) == iters for p in procs)
        for i, t in enumerate(times):
            assert abs(t - max(p[i] for p in procs)) < 1e-3, "iteration %d is not the max" % i
        assert per["min_us"] <= per["avg_us"] <= per["max_us"], per
        checked += 1
print("test_json: %d halves of %d sizes carry nccl-tests' keys and consistent times" %
      (checked, len(rows)))
PY
