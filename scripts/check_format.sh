#!/usr/bin/env bash
# The .clang-format file holds: every .c and .h of the library (src/, transports/, topology/,
# kernels/, include/) and of tests/ must be left unchanged by clang-format. Prints each file
# that is not, with the first lines clang-format would change, and fails. Fix with
#   clang-format -i FILE...
# Debian's clang-format package (installed by scripts/install-deps.sh) is the reference: other
# clang-format versions may disagree on a few lines. Without clang-format: skipped (77).
# Usage: check_format.sh [SOURCE_ROOT]
set -uo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root" || exit 1
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format not found (Debian package clang-format): skipped"
  exit 77
fi
dirs=()
for d in src transports topology kernels include tests; do
  [ -d "$d" ] && dirs+=("$d")
done
bad=0
total=0
while IFS= read -r -d '' f; do
  total=$((total + 1))
  if ! out=$(clang-format --dry-run --Werror "$f" 2>&1); then
    bad=$((bad + 1))
    echo "$f: not formatted as .clang-format says:"
    echo "$out" | head -6
  fi
done < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' \) \
           -print0 | sort -z)
if [ "$bad" -ne 0 ]; then
  echo "check_format: $bad of $total files differ from clang-format ($(clang-format --version));"
  echo "run clang-format -i on them"
  exit 1
fi
echo "check_format: $total files as .clang-format says"
