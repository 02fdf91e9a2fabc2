#!/usr/bin/env bash
# Runs inside the Soft-RoCE VM (tests/rdma/vm_suite.sh boots it with this tree at the working
# directory): one "RESULT name ok|failed|skipped ..." line per check; see vm_suite.sh for the
# list. Programs were built on the host (./build, same Debian 12).
set -u
check() { if eval "$2"; then echo "RESULT $1 ok"; else echo "RESULT $1 failed"; fi; }
info=$(./build/src/tools/tutti-info --rdma); echo "$info"
check rdma_vm_ports "echo \"\$info\" | grep -q \"^rdma: rxe0:1 active RoCE .*RoCEv2 .*: usable\" && echo \"\$info\" | grep -q \"^rdma: rxe1:1 active RoCE .*RoCEv2 .*: usable\""
f=$(TUTTI_IB_HCA=^rxe1 ./build/src/tools/tutti-info --rdma); echo "$f"
check rdma_vm_hca_filter "echo \"\$f\" | grep -q \"rxe1:1.*left out by TUTTI_IB_HCA\" && echo \"\$f\" | grep -q \"rxe0:1.*: usable\""
g=$(TUTTI_IB_GID_INDEX=99 ./build/src/tools/tutti-info --rdma); echo "$g"
check rdma_vm_gid_index "echo \"\$g\" | grep -q \"rxe0:1.*no gid 99 (TUTTI_IB_GID_INDEX)\" && TUTTI_IB_GID_INDEX=1 ./build/src/tools/tutti-info --rdma | grep -q \"rxe0:1.*gid\[1\].*: usable\""
check rdma_vm_unit "./build/tests/unit/test_ib_hca --verbose"
./build/tests/rdma/ib_qp_test rxe0 rxe1 | sed "s/^/RESULT /"

export TUTTI_TIMEOUT=60s
# A perf tool over verbs with its results checked (-c 1): name, then env assignments and the
# command. Ranks of one -N job share the VM's host id, so only TUTTI_TRANSPORT=ib puts them on
# verbs; ranks alternate between rxe0 and rxe1 (their index on the host, modulo the ports).
perf() {
  local name=$1 t0=$SECONDS; shift
  if env TUTTI_TRANSPORT=ib "$@" -c 1 > "/tmp/$name.log" 2>&1 &&
     grep -q "Out of bounds values : 0 OK" "/tmp/$name.log"; then
    echo "RESULT $name ok ($((SECONDS - t0)) s)"
  elif grep -q "does not apply" "/tmp/$name.log"; then
    echo "RESULT $name skipped: $(grep -m1 -o 'does not apply.*' "/tmp/$name.log")"
  else
    echo "RESULT $name failed"; tail -20 "/tmp/$name.log"
  fi
}
for c in all_reduce broadcast reduce reduce_scatter all_gather alltoall sendrecv; do
  perf "ib_perf_${c}_4ranks" "./build/perf/${c}_perf" -N 4 -b 8 -e 1M -f 32 -n 2 -w 1
done
perf ib_perf_all_reduce_types_ops TUTTI_IB_QPS=2 ./build/perf/all_reduce_perf -N 2 -b 4 -e 64K \
  -f 128 -d all -o all -n 1 -w 0
# Every algorithm of all-reduce and broadcast in turn, as `tutti-info --algos` lists them.
algos() {
  ./build/src/tools/tutti-info --algos |
    awk -v c="$1" '/^[a-z]/ { cur = $1; a = $2 } /^ / { a = $1 } cur == c && a != "" { print a }'
}
for a in $(algos allreduce); do
  perf "ib_perf_allreduce_$a" TUTTI_ALGO=allreduce:$a ./build/perf/all_reduce_perf -N 4 -b 8 \
    -e 256K -f 64 -n 1 -w 0
done
for a in $(algos broadcast); do
  perf "ib_perf_broadcast_$a" TUTTI_ALGO=broadcast:$a ./build/perf/broadcast_perf -N 4 -b 8 \
    -e 256K -f 64 -n 1 -w 0
done
perf ib_perf_gid_tc TUTTI_IB_GID_INDEX=1 TUTTI_IB_TC=106 ./build/perf/all_reduce_perf -N 2 \
  -b 8 -e 64K -f 64 -n 1 -w 0
perf ib_perf_tiny_fifos TUTTI_IB_QPS=3 TUTTI_IB_SLOT_SIZE=4k TUTTI_IB_NSLOTS=2 \
  ./build/perf/all_reduce_perf -N 3 -b 8 -e 512K -f 8 -n 2 -w 1
./build/tests/rdma/ib_coll_test 2>&1 | sed -E "s/^(ib_[a-z_]* (ok|failed))/RESULT \1/"
