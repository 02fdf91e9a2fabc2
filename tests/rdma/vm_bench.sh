#!/usr/bin/env bash
# The verbs transport's benchmark, run inside the Soft-RoCE VM (tests/rdma/rxe_vm.sh boots it
# with this tree as the working directory; see perf/results/*-rxe-verbs.md for the command):
# 2 ranks, rank 0 on rxe0 / veth0 (10.99.0.1), rank 1 on rxe1 / veth1 (10.99.0.2), so every
# byte crosses the veth pair, for
#   wire   perftest's ib_write_bw between rxe0 and rxe1, one way and both ways (-b)
#   ib     tutti over verbs (TUTTI_TRANSPORT=ib), buffers copied into the FIFOs
#   ib+reg tutti over verbs with the buffers registered (--register 1: sends without a copy)
#   tcp    tutti over TCP between the same two addresses (TUTTI_SOCKET_IFNAME per rank)
# for all_reduce and broadcast at SIZES, LAUNCHES rounds interleaved (every variant once, then
# again), each rank a process of its own started with tutti's launcher variables. Prints one
# "BENCH variant coll size value" line per run: MB/s for the wire, the time per call in us for
# tutti (2 ranks: busbw = algbw = size / time for both collectives); the reading is done on the
# host (perf/rxe_bench_table.py).
set -u
SIZES=${SIZES:-"65536 1048576 8388608"}
LAUNCHES=${LAUNCHES:-3}
port=29700
wire() { # one-way or bidirectional ib_write_bw at size $1: MB/s
  # A count of iterations (about 48 MiB, 20 to 20000 messages), not a duration: with -D the
  # bidirectional test of large messages often reported 0.00 in this VM.
  local s=$1 flag=${2:-} n=$(( 50331648 / $1 ))
  n=$(( n < 20 ? 20 : n > 20000 ? 20000 : n ))
  timeout 120 ib_write_bw -d rxe1 -x 1 -F -n $n $flag -s "$s" >/dev/null 2>&1 &
  sleep 1
  timeout 120 ib_write_bw -d rxe0 -x 1 -F -n $n $flag -s "$s" 10.99.0.2 2>/dev/null |
    awk -v s="$s" '$1 == s { print $4; exit }'
  wait
}
tutti() { # variant coll size: time per out-of-place call, us
  local variant=$1 coll=$2 s=$3 env=() reg=0
  port=$((port + 1))
  case $variant in
    ib) env=(TUTTI_TRANSPORT=ib) ;;
    ib+reg) env=(TUTTI_TRANSPORT=ib); reg=1 ;;
    tcp) env=(TUTTI_TRANSPORT=tcp) ;;
  esac
  local common=(TUTTI_NRANKS=2 TUTTI_ROOT=10.99.0.1:$port TUTTI_SECRET=0123456789abcdef0123456789abcdef
                TUTTI_TIMEOUT=120s "${env[@]}")
  env "${common[@]}" TUTTI_RANK=1 TUTTI_SOCKET_IFNAME=veth1 \
    "./build/perf/${coll}_perf" -b "$s" -e "$s" -n 5 -w 2 -c 1 --halves out --register $reg \
    >/dev/null 2>&1 &
  env "${common[@]}" TUTTI_RANK=0 TUTTI_SOCKET_IFNAME=veth0 \
    "./build/perf/${coll}_perf" -b "$s" -e "$s" -n 5 -w 2 -c 1 --halves out --register $reg \
    2>&1 | awk -v s="$s" '$1 == s && $9 == 0 { print $6 }'
  wait
}
echo "BENCH-START $(date -u +%FT%TZ) $(uname -r) $(nproc) vCPUs"
for k in $(seq "$LAUNCHES"); do
  for s in $SIZES; do
    echo "BENCH wire-1way - $s $(wire "$s")"
    echo "BENCH wire-2way - $s $(wire "$s" -b)"
    for coll in all_reduce broadcast; do
      for v in ib ib+reg tcp; do
        echo "BENCH $v $coll $s $(tutti $v $coll "$s")"
      done
    done
  done
done
echo "BENCH-END $(date -u +%FT%TZ)"
