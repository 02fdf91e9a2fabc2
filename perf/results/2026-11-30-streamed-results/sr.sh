#!/bin/bash
cd /work/main
for r in $(seq $1); do
 for v in 0 def ompi; do
  if [ $v = ompi ]; then
   out=$(mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --mca plm isolated --bind-to core -np 2 --mca btl self,vader build/perf/mpi_coll_perf --coll sendrecv -b 16M -e 256M -f 4 -n 10 -w 2 --halves out 2>&1)
  elif [ $v = 0 ]; then out=$(TUTTI_STREAM_MIN=0 /tmp/ab2/${2:-sr1} -N 2 -b 16M -e 256M -f 4 -n 10 -w 2 -c 0 --halves out 2>&1)
  else out=$(/tmp/ab2/${2:-sr1} -N 2 -b 16M -e 256M -f 4 -n 10 -w 2 -c 0 --halves out 2>&1); fi
  echo "$r $v $(/tmp/probe/pp) | $(echo "$out" | grep -E '^ +[0-9]' | awk '{printf "%s:%s ", $1, $6}')"
 done
done
