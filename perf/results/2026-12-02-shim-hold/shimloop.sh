#!/bin/bash
# rounds: line round trip (ns); us per call on rank 0 of: the shim before (bc_o), the shim now
# (bc_n), the shim now built with -mtls-dialect=gnu2 (bc_g), tutti's own API now (bc_n mode 1),
# and tutti's API built with gnu2 (bc_g mode 1)
export TUTTI_TRANSPORT=shm
for i in $(seq 1 $1); do
  rtt=$(/tmp/probe/pp 2>/dev/null | tail -1 | awk '{print $2}')
  o=$(/tmp/ab3/bc_o 200000 0 | awk '/rank 0/{print $4}')
  n=$(/tmp/ab3/bc_n 200000 0 | awk '/rank 0/{print $4}')
  g=$(/tmp/ab3/bc_g 200000 0 | awk '/rank 0/{print $4}')
  t=$(/tmp/ab3/bc_n 200000 1 | awk '/rank 0/{print $4}')
  tg=$(/tmp/ab3/bc_g 200000 1 | awk '/rank 0/{print $4}')
  echo "$i $rtt $o $n $g $t $tg"
done
