#!/usr/bin/env bash
# Layering of the library's folders (issue 19). Prints the folder-level include graph of src/,
# transports/, topology/ and kernels/ ("from -> to  N": N #include lines of files in `from`
# naming a file in `to`), then checks the one rule in force today: transports/, topology/ and
# kernels/ include nothing of src/ beyond its base layer (BASE below: environment, logging,
# checks, small helpers, status and the sockets of src/net/). The includes that break the rule
# today are listed in KNOWN: the list may only shrink. A new one fails the check; one that is
# gone is reported so that it is taken off the list.
# An include "x.h" is resolved as the compiler does: next to the including file, then in the
# include directories of meson.build (include/, the source root, src/).
# Usage: check_layers.sh [SOURCE_ROOT]
set -uo pipefail
root="${1:-$(dirname "$0")/..}"
cd "$root" || exit 1

# The base layer of src/ that any folder may include: headers that include nothing of src/
# outside this list (environment, logging, checks, helpers, a process's identity, fork safety,
# the collective ids that plans and the tuner share, sockets).
BASE="src/env.h src/log.h src/check.h src/util.h src/proc.h src/fork_gate.h src/coll_id.h
src/net/sock.h src/net/handshake.h src/net/admit.h"
# Today's violations, "including file -> included file": remove a line when it is fixed.
# (global.h is not base: it includes handle.h.)
KNOWN="
"

resolve() { # $1 including file, $2 include name: print the resolved path, or nothing
  local dir
  dir=$(dirname "$1")
  for base in "$dir" include . src; do
    if [ -f "$base/$2" ]; then
      realpath -m --relative-to=. "$base/$2"
      return
    fi
  done
}

edges=$(mktemp)
trap 'rm -f "$edges"' EXIT
while IFS= read -r -d '' f; do
  sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
    while IFS= read -r name; do
      to=$(resolve "$f" "$name")
      [ -n "$to" ] && echo "$f $to"
    done
done < <(find src transports topology kernels -type f \
           \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0 | sort -z) \
  >"$edges"

echo "folder include graph (from -> to: #include lines):"
awk '{ a = $1; b = $2; sub(/\/[^\/]*$/, "", a); sub(/\/[^\/]*$/, "", b)
       if (a != b) n[a " -> " b]++ }
     END { for (k in n) printf "  %-40s %d\n", k, n[k] }' "$edges" | sort

found=$(awk -v base="$BASE" '
  BEGIN { nb = split(base, b, /[ \n]+/); for (i = 1; i <= nb; i++) ok[b[i]] = 1 }
  $1 ~ /^(transports|topology|kernels)\// && $2 ~ /^src\// && !($2 in ok) { print $1 " -> " $2 }
' "$edges" | sort -u)
known=$(echo "$KNOWN" | sed '/^[[:space:]]*$/d' | sort -u)

new=$(comm -23 <(echo "$found" | sed '/^$/d') <(echo "$known" | sed '/^$/d'))
gone=$(comm -13 <(echo "$found" | sed '/^$/d') <(echo "$known" | sed '/^$/d'))
echo "lower layers including src/ beyond its base layer (known, may only shrink):"
echo "$found" | sed '/^$/d; s/^/  /'
rc=0
if [ -n "$new" ]; then
  echo "check_layers: new includes of src/ from a lower layer (pass what is needed as arguments"
  echo "or through the layer's own interface instead):"
  echo "$new" | sed 's/^/  /'
  rc=1
fi
if [ -n "$gone" ]; then
  echo "check_layers: fixed, take off KNOWN in scripts/check_layers.sh:"
  echo "$gone" | sed 's/^/  /'
  rc=1
fi
[ $rc -eq 0 ] && echo "check_layers: no new upward include"
exit $rc
