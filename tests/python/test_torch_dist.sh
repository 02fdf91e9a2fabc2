#!/usr/bin/env bash
# torch's own distributed tests (tests/python/torch_dist_suite.py: a selection of torch 1.13's
# DistributedTest, 2 spawned ranks each) on Gloo, the reference, then on tutti: every test that
# passes on Gloo must pass on tutti. Tests Gloo skips and tutti passes (the list form of
# all-to-all) are named. Skips (77) without torch.
#   test_torch_dist.sh PYTHON
set -u
py=$1
here=$(cd "$(dirname "$0")" && pwd)
if ! "$py" -c 'import torch.distributed, torch.testing' 2>/dev/null; then
  echo "SKIP: $py has no torch.distributed (apt-get install python3-torch)"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for b in gloo tutti; do
  (cd "$work" && TEMP_DIR=$(mktemp -d -p "$work") timeout 1200 "$py" "$here/torch_dist_suite.py" "$b" \
    >"$work/$b.txt" 2>&1)
  echo "== $b: $(grep -E '^Synthesis' "$work/$b.txt" | sed 's/^Synthesis: //')"
done
# the suite's own lines: "RESULT test_x ok" (or FAIL, skipped)
status() { sed -n 's/^RESULT \(test_[A-Za-z0-9_]*\) \(ok\|FAIL\|skipped\)$/\1 \2/p' "$1"; }
status "$work/gloo.txt" | sort >"$work/gloo.st"
status "$work/tutti.txt" | sort >"$work/tutti.st"
fails=0
while read -r t s; do
  ts=$(awk -v t="$t" '$1 == t { print $2 }' "$work/tutti.st")
  printf '%-45s gloo %-8s tutti %s\n' "$t" "$s" "${ts:-missing}"
  if [ "$s" = ok ] && [ "$ts" != ok ]; then
    fails=$((fails + 1))
  fi
done <"$work/gloo.st"
if [ "$fails" -gt 0 ] || [ ! -s "$work/gloo.st" ]; then
  echo "FAIL: $fails test(s) pass on Gloo and not on tutti"
  grep -E -A25 '^(FAIL|ERROR):' "$work/tutti.txt" | head -120
  exit 1
fi
grep -E '^Synthesis' "$work/tutti.txt"
echo "torch's distributed tests: tutti passes wherever Gloo does"
