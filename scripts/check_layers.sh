#!/usr/bin/env bash
# Layering of the library's folders (issue 19): see scripts/check_layers.py, which this runs
# (the meson test `layers`, suite style).
exec python3 "$(dirname "$0")/check_layers.py" "$@"
