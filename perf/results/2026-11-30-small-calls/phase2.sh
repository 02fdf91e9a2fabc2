#!/bin/bash
# phase2.sh MINUTES COLL "variants" ARGS: as phase.sh, times from the JSON (4 digits)
end=$(( $(date +%s) + $1 * 60 )); h=out; [ $2 = broadcast ] && h=in
ex='import json,sys; d=json.load(open(sys.argv[1])); h=sys.argv[2]; print(" ".join("%.4f"%r["in_place" if h=="in" else "out_of_place"]["time"] for r in d["results"]))'
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp); for v in $3; do rm -f /tmp/ab3/j_$$.json
 if [ $v = ompi ]; then mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --bind-to core -np 2 --mca btl self,vader /work/main/build/perf/mpi_coll_perf --coll $2 $4 --halves $h --json /tmp/ab3/j_$$.json >/dev/null 2>&1
 else /tmp/ab3/$2_$v -N 2 --bind core $4 --halves $h --json /tmp/ab3/j_$$.json >/dev/null 2>&1; fi
 echo "$p $v $(python3 -c "$ex" /tmp/ab3/j_$$.json $h 2>/dev/null)"; done; done
