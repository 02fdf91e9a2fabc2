#!/bin/bash
end=$(( $(date +%s) + ${1:-300} ))
col() { grep -E "^ +(524288|4194304|33554432) " | awk '{printf "%s ", $6}'; }
colin() { grep -E "^ +(524288|4194304|33554432) " | awk '{printf "%s ", $10}'; }
while [ $(date +%s) -lt $end ]; do
  line="$(date +%T) $(./pp | awk '{print $2}') |"
  for x in sendrecv4 all_gather4 alltoall4; do
    line="$line $x cma $(/tmp/ab/$x -N 2 -b 512K -e 32M -f 8 -n 20 -w 3 -c 0 --halves out 2>&1 | col)"
    line="$line fifo $(TUTTI_SHM_CMA=0 /tmp/ab/$x -N 2 -b 512K -e 32M -f 8 -n 20 -w 3 -c 0 --halves out 2>&1 | col)|"
  done
  line="$line bc cma $(/tmp/ab/broadcast4 -N 2 -b 512K -e 32M -f 8 -n 20 -w 3 -c 0 --halves in 2>&1 | colin)"
  line="$line fifo $(TUTTI_SHM_CMA=0 /tmp/ab/broadcast4 -N 2 -b 512K -e 32M -f 8 -n 20 -w 3 -c 0 --halves in 2>&1 | colin)|"
  line="$line rd cached $(TUTTI_SHM_FILL=0 /tmp/ab/reduce4 -N 2 -b 512K -e 32M -f 8 -n 20 -w 3 -c 0 --halves out 2>&1 | col)"
  line="$line timed $(/tmp/ab/reduce4 -N 2 -b 512K -e 32M -f 8 -n 20 -w 3 -c 0 --halves out 2>&1 | col)"
  echo "$line"
done
