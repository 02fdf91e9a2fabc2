#!/usr/bin/env bash
# check_boot_model.sh - tutti-model's bootstrap against the real thing: N forked ranks of
# scale_probe with the star (TUTTI_BOOT_TREE=0) and with the tree (TUTTI_BOOT_TREE=2), and the
# bytes the root's closing info line counts must be exactly what `tutti-model --boot-counts N`
# computes from the code's set-up sequence (model_boot.c). Fails when either drifts.
#
# Usage: perf/check_boot_model.sh BUILD_DIR [N]   (N: 24 by default)
set -euo pipefail
build=${1:?usage: check_boot_model.sh BUILD_DIR [N]}
n=${2:-24}
fail=0
for mode in star tree; do
    tree=0; [ "$mode" = tree ] && tree=2
    got=$(TUTTI_BOOT_TREE=$tree TUTTI_LOG_LEVEL=info TUTTI_LOG_SUBSYS=boot \
        "$build/perf/scale_probe" "$n" 2>&1 | sed -n 's/.*bootstrap root: [0-9]* ranks[a-z ]*; [0-9]* messages (\([0-9]*\) bytes) received, [0-9]* (\([0-9]*\) bytes) sent.*/\1 \2/p')
    want=$("$build/perf/tutti-model" --boot-counts "$n" | sed -n "s/^$mode $n ranks: \([0-9]*\) bytes received, \([0-9]*\) sent/\1 \2/p")
    if [ -n "$got" ] && [ "$got" = "$want" ]; then
        echo "ok: $mode, $n ranks: the root received and sent $got bytes, as modelled"
    else
        echo "FAILED: $mode, $n ranks: the root's line says '${got:-nothing}', the model '$want'"
        fail=1
    fi
done
[ "$fail" = 0 ] && echo "2 passed, 0 failed" || echo "$((2 - fail)) passed, $fail failed"
exit "$fail"
