#!/usr/bin/env bash
# The shared library must export exactly the functions declared TUTTI_API in include/tutti/,
# nothing internal (tutti__*) and nothing missing.
set -euo pipefail
lib="$1"
inc="$2"
declared=$(grep -h -A2 'TUTTI_API' "$inc"/tutti/*.h "$inc"/tutti/*.h.in | grep -o '\btutti_[a-z0-9_]*(' | tr -d '(' \
           | sort -u)
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" {print $3}' | sort -u)
if [ "$declared" != "$exported" ]; then
  echo "declared but not exported:"; comm -23 <(echo "$declared") <(echo "$exported")
  echo "exported but not declared:"; comm -13 <(echo "$declared") <(echo "$exported")
  exit 1
fi
echo "exports match the public headers: $(echo "$exported" | wc -l) functions"
