#!/usr/bin/env bash
# tutti's nccl.h and nccl_device_host.h at NCCL 2.32.3's ABI: tests/nccl/abi_probe.cc, built
# here with g++ against them, must print exactly what it printed against NVIDIA's headers
# (tests/nccl/fixtures/nccl-2.32.3-abi.txt): every struct's size and member offsets, enum and
# #define values, initializer fields and entry-point types. The probe must also cover every
# nccl* function of the symbol fixture but the four NVIDIA's Linux headers do not declare
# (abi_probe.cc says which). Skips (77) without g++.
#   check_abi_layout.sh SRC_DIR(src/nccl) TESTS_DIR(tests/nccl)
set -uo pipefail
src=$1 tests=$2
command -v g++ >/dev/null || { echo "SKIP: no g++ to build tests/nccl/abi_probe.cc"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! g++ -std=c++17 -Wall -Werror -I"$src" "$tests/abi_probe.cc" -o "$tmp/probe" 2>"$tmp/cc.log"; then
  echo "FAIL: abi_probe.cc does not build against tutti's nccl.h:"
  head -30 "$tmp/cc.log"
  echo "0 passed, 1 failed"
  exit 1
fi
"$tmp/probe" >"$tmp/ours.txt"
grep -v '^#' "$tests/fixtures/nccl-2.32.3-abi.txt" >"$tmp/theirs.txt"
rc=0
if diff -u "$tmp/theirs.txt" "$tmp/ours.txt" >"$tmp/diff"; then
  echo "ok: $(wc -l <"$tmp/ours.txt") facts of the ABI as NVIDIA's 2.32.3 headers give them"
else
  echo "FAIL: tutti's headers differ from NVIDIA's 2.32.3 (- NVIDIA, + tutti):"
  grep '^[-+][^-+]' "$tmp/diff" | head -60
  rc=1
fi
unprobed=$(LC_ALL=C comm -23 \
  <(grep -E '^nccl' "$tests/fixtures/nccl-2.32.3-symbols.txt" | LC_ALL=C sort -u) \
  <(awk '$1 == "function" { print $2 }' "$tmp/ours.txt" | LC_ALL=C sort -u))
known=$'ncclGinInboxA2ACreateRequirement\nncclGinOutboxCreateRequirement\nncclResetDebugInit\nncclResetDebugInitInternal'
if [ "$unprobed" != "$known" ]; then
  echo "FAIL: exported functions whose type the probe does not compare (expected only the four"
  echo "NVIDIA's Linux headers do not declare):"
  echo "$unprobed" | sed 's/^/  /'
  rc=1
else
  echo "ok: every exported nccl* function's type is compared but the 4 NVIDIA does not declare"
fi
[ $rc -eq 0 ] && echo "1 passed, 0 failed" || echo "0 passed, 1 failed"
exit $rc
