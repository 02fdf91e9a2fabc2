#!/usr/bin/env bash
# The shim exports NCCL 2.32.3's whole host API: every nccl*/pnccl* symbol NVIDIA's
# libnccl.so.2 exports (tests/nccl/fixtures/nccl-2.32.3-symbols.txt) and every nccl* symbol
# torch 2.15.0's libtorch_cuda.so needs (torch-2.15.0-nccl-symbols.txt) must be a function the
# shim defines, and the shim exports NCCL names only. Reads only the committed fixtures (how
# they were made: their header lines, tests/nccl/make_fixtures.sh). Fails naming what is missing.
#   check_abi_symbols.sh SHIM FIXTURE_DIR
set -uo pipefail
shim=$1 fix=$2
entries() { grep -v -e '^#' -e '^$' "$1" | LC_ALL=C sort -u; }
# Functions the shim defines (T: strong, W: the weak nccl* aliases), without symbol versions.
ours=$(nm -D --defined-only "$shim" | awk '$2 ~ /^[TW]$/ { print $3 }' | sed 's/@.*//' |
  LC_ALL=C sort -u)
all=$(nm -D --defined-only "$shim" | awk '{ print $NF }' | sed 's/@.*//' | LC_ALL=C sort -u)
rc=0
for f in nccl-2.32.3-symbols.txt torch-2.15.0-nccl-symbols.txt; do
  if [ ! -f "$fix/$f" ]; then
    echo "FAIL: fixture $fix/$f is missing"
    rc=1
    continue
  fi
  want=$(entries "$fix/$f")
  missing=$(LC_ALL=C comm -23 <(echo "$want") <(echo "$ours"))
  if [ -n "$missing" ]; then
    echo "FAIL: $(echo "$missing" | wc -l) of the $(echo "$want" | wc -l) symbols of $f are not" \
      "functions exported by the shim:"
    echo "$missing" | sed 's/^/  /'
    rc=1
  else
    echo "ok: all $(echo "$want" | wc -l) symbols of $f are exported by the shim"
  fi
done
foreign=$(echo "$all" | grep -v -E '^p?nccl' || true)
if [ -n "$foreign" ]; then
  echo "FAIL: the shim exports names that are not NCCL's:"
  echo "$foreign" | sed 's/^/  /'
  rc=1
fi
if [ -f "$fix/nccl-2.32.3-symbols.txt" ]; then
  extra=$(LC_ALL=C comm -13 <(entries "$fix/nccl-2.32.3-symbols.txt") <(echo "$all"))
  [ -z "$extra" ] || { echo "exported by the shim only:"; echo "$extra" | sed 's/^/  /'; }
fi
[ $rc -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
