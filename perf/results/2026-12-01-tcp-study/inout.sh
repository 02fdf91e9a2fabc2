#!/bin/bash
end=$(( $(date +%s) + $1 * 60 )); coll=$2; A="$3"
ex='import json,sys; d=json.load(open(sys.argv[1])); h=sys.argv[2]; print(" ".join("%.2f"%r["in_place" if h=="in" else "out_of_place"]["time"] for r in d["results"]))'
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp)
 for v in tout tin oout oin; do rm -f j5.json; h=${v:1}
  if [ ${v:0:1} = o ]; then mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --bind-to core -np 2 --mca btl self,tcp /work/main/build/perf/mpi_coll_perf --coll $coll $A --halves $h --json j5.json >/dev/null 2>&1
  else env TUTTI_TRANSPORT=tcp /work/main/build/perf/${coll}_perf -N 2 --bind core $A --halves $h --json j5.json >/dev/null 2>&1; fi
  echo "$p $v $(python3 -c "$ex" j5.json $h)"; done; done
