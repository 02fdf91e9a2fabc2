#!/usr/bin/env bash
# The RDMA checks on real verbs: boot the Soft-RoCE VM (tests/rdma/rxe_vm.sh; the image is
# built first when missing, about 6 min) with this tree shared, and run tutti's programs built
# on the host (./build, same Debian 12) against rxe0 and rxe1 inside it. Writes one
# "name ok|failed" line per check to build/rdma-vm-results.txt (scripts/test-summary.py --plain)
# and prints them. Checks today (the verbs transport is in progress, issue 8):
#   rdma_vm_ports       tutti-info --rdma finds rxe0:1 and rxe1:1 active, RoCE v2, usable
#   rdma_vm_hca_filter  TUTTI_IB_HCA=^rxe1 leaves rxe1 out and keeps rxe0
#   rdma_vm_unit        the test_ib_hca suite passes in the guest (its enumeration test sees ports)
#   ib_qp_*             tests/rdma/ib_qp_test.c between rxe0 and rxe1: RC queue pairs, RDMA
#                       WRITE with immediate (4 MiB and 64 B inline), a dead peer's error
set -uo pipefail
cd "$(dirname "$0")/../.."
out=build/rdma-vm-results.txt
vm=tests/rdma/rxe_vm.sh
: >"$out"
if [ ! -f "${RXEVM_DIR:-/tmp/rxevm}/rootfs.img" ]; then
  if ! bash "$vm" build; then
    echo "rdma_vm_image failed" >>"$out"
    cat "$out"
    exit 1
  fi
fi
bash "$vm" run -s "$PWD" -t 900 -- '
check() { if eval "$2"; then echo "RESULT $1 ok"; else echo "RESULT $1 failed"; fi; }
info=$(./build/src/tools/tutti-info --rdma); echo "$info"
check rdma_vm_ports "echo \"\$info\" | grep -q \"^rdma: rxe0:1 active RoCE .*RoCEv2 .*: usable\" && echo \"\$info\" | grep -q \"^rdma: rxe1:1 active RoCE .*RoCEv2 .*: usable\""
f=$(TUTTI_IB_HCA=^rxe1 ./build/src/tools/tutti-info --rdma); echo "$f"
check rdma_vm_hca_filter "echo \"\$f\" | grep -q \"rxe1:1.*left out by TUTTI_IB_HCA\" && echo \"\$f\" | grep -q \"rxe0:1.*: usable\""
check rdma_vm_unit "./build/tests/unit/test_ib_hca --verbose"
./build/tests/rdma/ib_qp_test rxe0 rxe1 | sed "s/^/RESULT /"
' | tee build/rdma-vm.log
rc=${PIPESTATUS[0]}
sed -n 's/^RESULT //p' build/rdma-vm.log >>"$out"
[ -s "$out" ] || echo "rdma_vm_boot failed (VM exit status $rc)" >>"$out"
echo "rdma-vm results:"
cat "$out"
! awk '$2 != "ok" { bad = 1 } END { exit !bad }' "$out"
