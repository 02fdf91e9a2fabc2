#!/usr/bin/env bash
# Only src/base/env.c reads the environment: every setting goes through env.h's table (TUTTI_*) or
# tutti__env_foreign() (launchers' variables), so that it is parsed, range-checked and listed in
# one place. Fails when getenv, secure_getenv or environ appears in the code (comments aside) of
# the library's C and CUDA files outside src/base/env.c.
# Scope: src/ (tools included), transports/, topology/, kernels/, include/. Not checked: tests/,
# perf/ and trainer/ (programs and harnesses that set up the environment of the ranks they start,
# not the library) and src/python (Python: it reads TUTTI_LIBRARY to find the library before the
# library is loaded). Allowed: src/tools/topo_dot.c hands environ unchanged to the dot(1) it
# starts and reads nothing from it.
# Usage: check_env.sh [SOURCE_ROOT]
set -uo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root" || exit 1
allowed_environ="src/tools/topo_dot.c"
dirs=()
for d in src transports topology kernels include; do
  [ -d "$d" ] && dirs+=("$d")
done
bad=0
while IFS= read -r -d '' f; do
  [ "$f" = src/base/env.c ] && continue
  # code lines only: drop // comments, /* ... */ on one line, and lines inside block comments
  hits=$(awk '
    { line = $0
      if (inc) { if (line ~ /\*\//) { sub(/.*\*\//, "", line); inc = 0 } else next }
      gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, "", line)
      if (line ~ /\/\*/) { sub(/\/\*.*/, "", line); inc = 1 }
      sub(/\/\/.*/, "", line)
      if (line ~ /(^|[^A-Za-z0-9_])(secure_)?getenv[ \t]*\(/) print FILENAME ":" FNR ": " $0
      else if (line ~ /(^|[^A-Za-z0-9_])(__)?environ([^A-Za-z0-9_]|$)/) print FILENAME ":" FNR ": environ: " $0
    }' "$f")
  if [ -n "$hits" ] && [ "$f" = "$allowed_environ" ]; then
    hits=$(echo "$hits" | grep -v ': environ: ' || true)
  fi
  if [ -n "$hits" ]; then
    echo "$hits"
    bad=$((bad + 1))
  fi
done < <(find "${dirs[@]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) \
           -print0 | sort -z)
if [ "$bad" -ne 0 ]; then
  echo "check_env: $bad files read the environment outside src/base/env.c; add the variable to"
  echo "src/base/env.h's table (or use tutti__env_foreign) instead"
  exit 1
fi
echo "check_env: only src/base/env.c reads the environment"
