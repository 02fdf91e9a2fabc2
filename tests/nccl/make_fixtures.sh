#!/usr/bin/env bash
# Makes (or, with --check, re-derives and compares) the NCCL shim's fixtures in
# tests/nccl/fixtures/ from the wheels they describe. CI has no wheel: the tests read only the
# committed files; this script is how they were made, and the test nccl_fixtures_current runs
# it with --check where a wheel is present.
#
#   nccl-2.32.3-symbols.txt      every nccl*/pnccl* symbol NVIDIA's libnccl.so.2 exports
#   nccl-2.32.3-abi.txt          tests/nccl/abi_probe.cc built against NVIDIA's nccl.h and
#                                nccl_device/host.h (CUDA's headers beside), its output
#   torch-2.15.0-nccl-symbols.txt  the nccl* symbols torch's libtorch_cuda.so leaves undefined
#
# The wheels: pip download --no-deps nvidia-nccl-cu13==2.32.3 (unzipped: NCCL_WHEEL_DIR is its
# nvidia/nccl folder) and torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl (TORCH_WHEEL; only
# torch/lib/libtorch_cuda.so is extracted, 520 MB, into a temporary folder).
#
# Usage: make_fixtures.sh [--check]
#   NCCL_WHEEL_DIR  default /work/wheels/nccl/nvidia/nccl
#   TORCH_WHEEL     default /work/wheels/torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl;
#                   with --check, the torch fixture is re-derived only when TORCH_WHEEL is set
#   CUDA_INC        default /usr/local/cuda/include (NVIDIA's nccl.h includes cuda_runtime.h)
# Exit status: 0 made or current; 1 a fixture differs (--check) or a step failed; 77 (--check)
# nothing to re-derive from, with the reason.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
fix=$here/fixtures
check=0
[ "${1:-}" = --check ] && check=1
nccl_dir=${NCCL_WHEEL_DIR:-/work/wheels/nccl/nvidia/nccl}
torch_default=/work/wheels/torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl
torch_whl=${TORCH_WHEEL:-}
[ "$check" -eq 0 ] && torch_whl=${torch_whl:-$torch_default}
cuda_inc=${CUDA_INC:-/usr/local/cuda/include}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
done_any=0 fails=0

# Write (or compare) fixture $1 from the file $2.
emit() {
  local name=$1 made=$2
  if [ "$check" -eq 1 ]; then
    if diff -u "$fix/$name" "$made" >"$tmp/diff"; then
      echo "current: $name"
    else
      echo "FAIL: $name differs from what the wheel gives now:"
      head -40 "$tmp/diff"
      fails=$((fails + 1))
    fi
  else
    cp "$made" "$fix/$name"
    echo "wrote $fix/$name ($(grep -vc '^#' "$made") entries)"
  fi
}

if [ -f "$nccl_dir/lib/libnccl.so.2" ] && [ -f "$nccl_dir/include/nccl.h" ]; then
  done_any=1
  {
    echo "# Every nccl*/pnccl* symbol that NVIDIA's NCCL 2.32.3 (libnccl.so.2 of the wheel"
    echo "# nvidia-nccl-cu13==2.32.3, sha256 of the library: $(sha256sum "$nccl_dir/lib/libnccl.so.2" | cut -c1-16)...) exports."
    echo "# Made by tests/nccl/make_fixtures.sh with:"
    echo "#   nm -D --defined-only nvidia/nccl/lib/libnccl.so.2 | awk '{ print \$NF }' | sed 's/@.*//' |"
    echo "#     grep -E '^p?nccl' | sort -u"
    nm -D --defined-only "$nccl_dir/lib/libnccl.so.2" | awk '{ print $NF }' | sed 's/@.*//' |
      grep -E '^p?nccl' | LC_ALL=C sort -u
  } >"$tmp/symbols.txt"
  emit nccl-2.32.3-symbols.txt "$tmp/symbols.txt"
  if ! command -v g++ >/dev/null || [ ! -f "$cuda_inc/cuda_runtime.h" ]; then
    echo "not made: nccl-2.32.3-abi.txt needs g++ and CUDA's headers at $cuda_inc"
    [ "$check" -eq 1 ] || fails=$((fails + 1))
  elif g++ -std=c++17 -w -DPROBE_NVIDIA -I"$nccl_dir/include" -I"$cuda_inc" \
      "$here/abi_probe.cc" -o "$tmp/probe" 2>"$tmp/cc.log"; then
    {
      echo "# The ABI of NVIDIA's NCCL 2.32.3 headers (nccl.h, nccl_device/host.h of the wheel"
      echo "# nvidia-nccl-cu13==2.32.3) as tests/nccl/abi_probe.cc prints it. Made by"
      echo "# tests/nccl/make_fixtures.sh with:"
      echo "#   g++ -std=c++17 -w -DPROBE_NVIDIA -Invidia/nccl/include -I/usr/local/cuda/include \\"
      echo "#     tests/nccl/abi_probe.cc -o probe && ./probe"
      "$tmp/probe"
    } >"$tmp/abi.txt"
    emit nccl-2.32.3-abi.txt "$tmp/abi.txt"
    # The probe names its members and enumerators by hand: every one NVIDIA's nccl.h and its
    # ncclCommProperties_t declare must be among them.
    python3 - "$nccl_dir/include/nccl.h" "$nccl_dir/include/nccl_device/host.h" "$tmp/abi.txt" \
      <<'EOF' || fails=$((fails + 1))
import re, sys
nccl_h, host_h, abi = sys.argv[1:4]
probed = open(abi).read()
def strip(s):
    return re.sub(r'//[^\n]*', '', re.sub(r'/\*.*?\*/', '', s, flags=re.S))
def blocks(text, kind):
    """(name, body) of every `typedef <kind> ... { body } name;`, nested braces kept."""
    out = []
    for m in re.finditer(r'typedef\s+' + kind + r'\b[^{;]*\{', text):
        depth, i = 1, m.end()
        while depth:
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            i += 1
        name = re.match(r'\s*(\w+)', text[i:]).group(1)
        out.append((name, text[m.end():i - 1]))
    return out
missing = []
src = strip(open(nccl_h).read())
host = strip(open(host_h).read())
for name, body in blocks(src, 'struct') + [b for b in blocks(host, 'struct')
                                           if b[0] == 'ncclCommProperties_t']:
    def idents(decls, prefix=''):
        out = []
        for decl in decls.split(';'):
            ident = re.findall(r'(\w+)\s*(?:\[[^\]]*\])?\s*$', decl.strip())
            out += [prefix + ident[0]] if ident else []
        return out
    nested = re.findall(r'\{([^{}]*)\}\s*(\w+)', body)  # a nested struct or union: its members
    members = idents(re.sub(r'\{[^{}]*\}\s*(\w+)', lambda m: m.group(1), body))
    for inner, outer in nested:
        members += idents(inner, outer + '.')
    missing += [f'{name}.{m}' for m in members if f'member {name}.{m} ' not in probed]
for name, body in blocks(src, 'enum'):
    for e in re.findall(r'(\w+)\s*(?:=[^,]*)?(?:,|$)', body.strip()):
        if f'value {e} ' not in probed:
            missing.append(e)
if missing:
    print('FAIL: abi_probe.cc does not probe: ' + ' '.join(missing))
    sys.exit(1)
print('every struct member and enumerator of NVIDIA\'s nccl.h (and ncclCommProperties_t) is probed')
EOF
  else
    echo "FAIL: abi_probe.cc does not build against NVIDIA's headers:"
    head -20 "$tmp/cc.log"
    fails=$((fails + 1))
  fi
else
  echo "not re-derived: no NCCL 2.32.3 wheel unpacked at $nccl_dir (set NCCL_WHEEL_DIR)"
fi

if [ -n "$torch_whl" ] && [ -f "$torch_whl" ]; then
  done_any=1
  if unzip -q -o "$torch_whl" torch/lib/libtorch_cuda.so -d "$tmp/torch"; then
    {
      echo "# The nccl* symbols that torch 2.15.0's libtorch_cuda.so needs (undefined there), from"
      echo "# $(basename "$torch_whl"). Made by tests/nccl/make_fixtures.sh with:"
      echo "#   unzip torch-2.15.0-cp311-cp311-manylinux_2_28_x86_64.whl torch/lib/libtorch_cuda.so"
      echo "#   nm -D --undefined-only torch/lib/libtorch_cuda.so | awk '{ print \$NF }' |"
      echo "#     sed 's/@.*//' | grep -E '^p?nccl' | sort -u"
      nm -D --undefined-only "$tmp/torch/torch/lib/libtorch_cuda.so" | awk '{ print $NF }' |
        sed 's/@.*//' | grep -E '^p?nccl' | LC_ALL=C sort -u
    } >"$tmp/torch.txt"
    emit torch-2.15.0-nccl-symbols.txt "$tmp/torch.txt"
  else
    echo "FAIL: could not extract torch/lib/libtorch_cuda.so from $torch_whl"
    fails=$((fails + 1))
  fi
elif [ "$check" -eq 1 ]; then
  echo "not re-derived: torch-2.15.0-nccl-symbols.txt (set TORCH_WHEEL to the torch 2.15.0 wheel;" \
    "extracting libtorch_cuda.so takes 520 MB)"
else
  echo "not made: torch-2.15.0-nccl-symbols.txt (no torch wheel at ${torch_whl:-$torch_default})"
fi

if [ "$check" -eq 1 ] && [ "$done_any" -eq 0 ]; then
  echo "SKIP: no wheel to re-derive the fixtures from (NCCL_WHEEL_DIR, TORCH_WHEEL)"
  exit 77
fi
exit $((fails > 0))
