#!/bin/bash
end=$(( $(date +%s) + ${1:-300} ))
col() { grep -E "^ +524288 " | awk '{print $6}'; }
while [ $(date +%s) -lt $end ]; do
  t=$(date +%T)
  p=$(./pp | awk '{print $2}')
  r=$(/tmp/ab/rd0 -N 2 -b 512K -e 512K -n 200 -w 20 --halves out -c 0 2>&1 | col)
  o=$(mpirun.openmpi --allow-run-as-root --mca pml ob1 --bind-to core -np 2 --mca btl self,vader /work/main/build/perf/mpi_coll_perf --coll reduce -b 512K -e 512K -n 200 -w 20 --halves out 2>&1 | col)
  sc=$(/tmp/ab/sr0 -N 2 -b 512K -e 512K -n 200 -w 20 -c 0 2>&1 | col)
  sf=$(TUTTI_SHM_CMA=0 /tmp/ab/sr0 -N 2 -b 512K -e 512K -n 200 -w 20 -c 0 2>&1 | col)
  os=$(mpirun.openmpi --allow-run-as-root --mca pml ob1 --bind-to core -np 2 --mca btl self,vader /work/main/build/perf/mpi_coll_perf --coll sendrecv -b 512K -e 512K -n 200 -w 20 2>&1 | col)
  echo "$t rtt $p | reduce tutti $r ompi $o | sendrecv tutti-cma $sc tutti-fifo $sf ompi $os"
  sleep 2
done
