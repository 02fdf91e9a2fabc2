#!/bin/bash
# tcp3.sh MINUTES COLL "variants" ARGS: as phase3.sh over TCP; ompi is Open MPI's tcp btl
end=$(( $(date +%s) + $1 * 60 )); h=out; [ $2 = broadcast ] && h=in
ex='import json,sys; d=json.load(open(sys.argv[1])); h=sys.argv[2]; f="%%.%sf"%sys.argv[3]; print(" ".join(f%r["in_place" if h=="in" else "out_of_place"]["time"] for r in d["results"]))'
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp); for spec in $3; do v=${spec%%:*}; e=; [ "$v" != "$spec" ] && e=${spec#*:} && e=${e//+/ }; rm -f /tmp/ab3/j_$$.json
 if [ $v = ompi ]; then mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --bind-to core -np 2 --mca btl self,vader /work/main/build/perf/mpi_coll_perf --coll $2 $4 --halves $h --json /tmp/ab3/j_$$.json >/dev/null 2>&1
elif [ $v = mpich ]; then mpirun.mpich -bind-to core -np 2 /work/main/build/perf/mpich_coll_perf --coll $2 $4 --halves $h --json /tmp/ab3/j_$$.json >/dev/null 2>&1
 elif [ ${v:0:1} = n ]; then env TUTTI_TRANSPORT=shm $e /work/main/build/perf/${2}_perf -N 2 --bind core $4 --halves $h --json /tmp/ab3/j_$$.json >/dev/null 2>&1
 else env TUTTI_TRANSPORT=shm $e /tmp/epb/perf/${2}_perf -N 2 --bind core $4 --halves $h --json /tmp/ab3/j_$$.json >/dev/null 2>&1; fi
 echo "$p $v $(python3 -c "$ex" /tmp/ab3/j_$$.json $h ${SHM9_DIGITS:-2} 2>/dev/null)"; done; done
