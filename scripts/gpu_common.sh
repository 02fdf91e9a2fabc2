# Sourced by scripts/gpu_checks.sh and scripts/gpu_shim_checks.sh (run from the repository root,
# $out set): step NAME COMMAND... logs the command's output to $out/NAME.log and its exit status
# to $out/summary.txt; gpu_build records nvidia-smi, configures build/ for sm_90 when it is not
# configured yet, and builds it.
step() { # name, command...
  local name=$1; shift
  echo "== $name: $*" | tee -a "$out/summary.txt"
  "$@" >"$out/$name.log" 2>&1
  echo "   exit $?" | tee -a "$out/summary.txt"
}
gpu_build() {
  nvidia-smi >"$out/nvidia-smi.log" 2>&1
  [ -f build/build.ninja ] || meson setup build -Dgpu_archs=sm_90 >"$out/setup.log" 2>&1
  step build ninja -C build
}
