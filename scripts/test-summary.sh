#!/usr/bin/env bash
# Sum the "Synthesis" lines of every Criterion suite in a meson test log and print one closing
# line: "N passed, N failed, N skipped". Exits non-zero if anything failed or crashed.
set -euo pipefail
log="${1:-build/meson-logs/testlog.txt}"
if [ ! -f "$log" ]; then echo "0 passed, 1 failed (no test log at $log)"; exit 1; fi
grep -a "Synthesis: Tested:" "$log" | awk '
  { for (i = 1; i <= NF; i++) {
      if ($i == "Tested:") t += $(i + 1);
      if ($i == "Passing:") p += $(i + 1);
      if ($i == "Failing:") f += $(i + 1);
      if ($i == "Crashing:") c += $(i + 1);
    } }
  END { s = t - p - f - c; if (s < 0) s = 0;
        printf "%d passed, %d failed, %d skipped\n", p, f + c, s; exit (f + c > 0) }'
