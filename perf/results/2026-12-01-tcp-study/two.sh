#!/bin/bash
# two.sh MIN: per round tutti and ompi sendrecv 1M and all_gather 2M, alltoall 2M
end=$(( $(date +%s) + $1 * 60 ))
ex='import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("%.2f"%r["out_of_place"]["time"] for r in d["results"]))'
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp)
for c in "sendrecv -b 512K -e 1M -f 2" "all_gather -b 1M -e 2M -f 2" "alltoall -b 1M -e 2M -f 2"; do set -- $c; coll=$1; shift
 rm -f j2.json; env TUTTI_TRANSPORT=tcp /work/main/build/perf/${coll}_perf -N 2 --bind core "$@" -n 40 -w 5 --json j2.json >/dev/null 2>&1; echo "$p t_$coll $(python3 -c "$ex" j2.json)"
 rm -f j2.json; mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --bind-to core -np 2 --mca btl self,tcp /work/main/build/perf/mpi_coll_perf --coll $coll "$@" -n 40 -w 5 --json j2.json >/dev/null 2>&1; echo "$p o_$coll $(python3 -c "$ex" j2.json)"
done; done
