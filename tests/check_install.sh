#!/usr/bin/env bash
# `meson install` into a scratch prefix works, and a program builds against the installed
# headers and tutti.pc, then runs on one rank.
set -euo pipefail
build="$1"
src="$2"
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --no-rebuild --quiet
prefix=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])')
libdir=$(meson introspect "$build" --buildoptions | python3 -c \
  'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"][0])')
root="$dest$prefix"
pcdir="$root/$libdir/pkgconfig"
test -f "$root/include/tutti.h"
test -f "$root/include/tutti/version.h"
test -f "$pcdir/tutti.pc"
cflags=$(PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_PATH="$pcdir" pkg-config --cflags tutti)
libs=$(PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_PATH="$pcdir" pkg-config --libs tutti)
cc $cflags "$src/docs/example.c" -o "$dest/example" $libs
LD_LIBRARY_PATH="$root/$libdir" TUTTI_RANK=0 TUTTI_NRANKS=1 TUTTI_ROOT=127.0.0.1:0 \
  TUTTI_SECRET=000102030405060708090a0b0c0d0e0f "$dest/example"
# Statically: libtutti.a with what `pkg-config --static` lists (its dependencies stay shared),
# and the program needs no libtutti.so.
static=$(PKG_CONFIG_SYSROOT_DIR="$dest" PKG_CONFIG_PATH="$pcdir" pkg-config --static --libs tutti)
test -f "$root/$libdir/libtutti.a"
cc $cflags "$src/docs/example.c" -o "$dest/example_static" ${static/-ltutti/-l:libtutti.a}
! ldd "$dest/example_static" | grep -q libtutti || { echo "example_static needs libtutti.so"; exit 1; }
TUTTI_RANK=0 TUTTI_NRANKS=1 TUTTI_ROOT=127.0.0.1:0 \
  TUTTI_SECRET=000102030405060708090a0b0c0d0e0f "$dest/example_static"
echo "a static link with pkg-config --static works"
# The perf tools go to libexec/tutti, not bin/, where nccl-tests' tools of the same names live.
test -x "$root/libexec/tutti/all_reduce_perf"
test ! -e "$root/bin/all_reduce_perf"
# The GPU module, where it was built: installed beside libtutti, exporting its table only, and
# found by the installed tutti-info (0 GPUs here is fine: the module loaded).
if [ -f "$build/kernels/cuda/libtutti-cuda.so" ]; then
  mod="$root/$libdir/libtutti-cuda.so"
  test -f "$mod"
  exports=$(nm -D --defined-only "$mod" | awk '{print $3}')
  [ "$exports" = "tutti__cuda_module_v1" ] || { echo "libtutti-cuda.so exports: $exports"; exit 1; }
  LD_LIBRARY_PATH="$root/$libdir" TUTTI_CUDA_MODULE= "$root/bin/tutti-info" --gpu |
    grep -q "^gpu module: .*libtutti-cuda.so (CUDA"
  echo "installed GPU module loads"
fi
# The NCCL shim, in a directory of its own: NCCL's names only (tutti is inside it).
shim="$root/$libdir/tutti-nccl/libnccl.so.2"
test -f "$shim"
foreign=$(nm -D --defined-only "$shim" | awk '{print $3}' | grep -v -E '^p?nccl' || true)
[ -z "$foreign" ] || { echo "libnccl.so.2 exports: $foreign"; exit 1; }
echo "installed NCCL shim exports NCCL names only"
# The Python package beside the interpreter's other modules, loading the installed library.
pkg=$(find "$root/lib" -path '*dist-packages/tutti/__init__.py' | head -1)
if [ -n "$pkg" ] && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
  PYTHONPATH=$(dirname "$(dirname "$pkg")") LD_LIBRARY_PATH="$root/$libdir" /usr/bin/python3 -c \
    'import tutti; assert tutti.version() > 0; print("installed Python package loads", tutti._lib.path)'
  # and without LD_LIBRARY_PATH: the package knows the libdir it was installed with (_paths.py)
  PYTHONPATH=$(dirname "$(dirname "$pkg")") env -u LD_LIBRARY_PATH -u TUTTI_LIBRARY \
    /usr/bin/python3 -c 'import tutti, os; p = tutti._lib.path
assert p.endswith("/libtutti.so.0") and os.path.exists(p), p
print("installed Python package finds its library alone:", p)'
fi
echo "installed headers, library and tutti.pc work"
