#!/bin/bash
# every few seconds: SMT probe, cache-line round trip, tutti reduce 512K and 8B broadcast
end=$(( $(date +%s) + ${1:-300} ))
while [ $(date +%s) -lt $end ]; do
  t=$(date +%T)
  s=$(./smt2)
  p=$(./pp)
  r=$(/tmp/ab/rd0 -N 2 -b 512K -e 512K -n 200 -w 20 --halves out -c 0 2>&1 | grep -E "^ +524288 " | awk '{print $6}')
  b=$(/tmp/ab/bc0 -N 2 -b 8 -e 8 -n 100000 -w 1000 --halves in -c 0 2>&1 | grep -E "^ +8 " | awk '{print $10}')
  o=$(mpirun.openmpi --allow-run-as-root --mca pml ob1 --bind-to core -np 2 --mca btl self,vader /work/main/build/perf/mpi_coll_perf --coll reduce -b 512K -e 512K -n 200 -w 20 --halves out 2>&1 | grep -E "^ +524288 " | awk "{print \$6}")
  s2=$(/tmp/ab/rd0 -N 2 -b 512K -e 512K -n 200 -w 20 --halves out -c 0 2>&1 | grep -E "^ +524288 " | awk "{print \$6}")
  echo "$t | $s| $p | reduce512K $r us | bcast8 $b us | ompi reduce $o us | tutti again $s2"
  sleep 3
done
