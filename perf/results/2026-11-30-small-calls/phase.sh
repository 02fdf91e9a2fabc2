#!/bin/bash
# phase.sh MINUTES COLL "variants" ARGS: rounds of every variant in turn (Open MPI as "ompi") for
# MINUTES, each line tagged with the cache line's round trip measured before the round
end=$(( $(date +%s) + $1 * 60 )); h=out; [ $2 = broadcast ] && h=in
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp); for v in $3; do
 if [ $v = ompi ]; then o=$(mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --bind-to core -np 2 --mca btl self,vader /work/main/build/perf/mpi_coll_perf --coll $2 $4 --halves $h 2>&1)
 else o=$(/tmp/ab3/$2_$v -N 2 --bind core $4 --halves $h 2>&1); fi
 echo "$p $v $(echo "$o" | grep -E '^ +[0-9]' | awk -v h=$h '{printf "%s ", (h=="in"?$10:$6)}')"; done; done
