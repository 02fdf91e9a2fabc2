#!/usr/bin/env bash
# The RDMA checks on real verbs: boot the Soft-RoCE VM (tests/rdma/rxe_vm.sh; the image is
# built first when missing, about 6 min) with this tree shared, and run tutti's programs built
# on the host (./build, same Debian 12) against rxe0 and rxe1 inside it. Writes one
# "name ok|failed|skipped ..." line per check to build/rdma-vm-results.txt (read by
# scripts/test-summary.py --plain) and prints them. Checks:
#   rdma_vm_ports       tutti-info --rdma finds rxe0:1 and rxe1:1 active, RoCE v2, usable
#   rdma_vm_hca_filter  TUTTI_IB_HCA=^rxe1 leaves rxe1 out and keeps rxe0
#   rdma_vm_gid_index   TUTTI_IB_GID_INDEX=99 is no GID of rxe0:1 (said so), 1 is usable
#   rdma_vm_unit        the test_ib_hca suite passes in the guest (its enumeration test sees ports)
#   ib_qp_*             tests/rdma/ib_qp_test.c between rxe0 and rxe1: RC queue pairs, RDMA
#                       WRITE with immediate (4 MiB and 64 B inline), a dead peer's error
#   ib_perf_*           every collective's perf tool over the verbs transport (TUTTI_TRANSPORT=ib)
#                       with its results checked: 4 ranks (ranks 0 and 2 on rxe0, 1 and 3 on
#                       rxe1: two ranks per device, and pairs within and across devices), every
#                       datatype x op of all-reduce on 2 ranks, every all-reduce and broadcast
#                       algorithm forced in turn, a chosen GID index and traffic class, and tiny
#                       FIFOs on 3 queue pairs (credits and slot reuse wrapping many times)
#   ib_auto_choice ...  tests/rdma/ib_coll_test.c: the automatic choice (shared memory within a
#                       host, verbs across), registration without copies and without leaks, a
#                       queue pair forced into error, a rank killed mid-collective, a rank
#                       stopped, rxe1's link down, every packet lost (retries exhausted); the
#                       fault checks also require no registration and no file left after destroy
# The commands run in the guest are tests/rdma/vm_checks.sh.
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
bash "$vm" run -s "$PWD" -t 1500 -- 'bash tests/rdma/vm_checks.sh' | tee build/rdma-vm.log
rc=${PIPESTATUS[0]}
sed -n 's/^RESULT //p' build/rdma-vm.log >>"$out"
[ -s "$out" ] || echo "rdma_vm_boot failed (VM exit status $rc)" >>"$out"
echo "rdma-vm results:"
cat "$out"
! awk '$2 != "ok" && $2 !~ /^skipped:?$/ { bad = 1 } END { exit !bad }' "$out"
