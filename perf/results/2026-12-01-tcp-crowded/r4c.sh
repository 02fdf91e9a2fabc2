#!/bin/bash
# r4.sh MIN COLL ARGS: 4 ranks TCP unbound, new defaults vs old (2 ch, 2 socks), ompi tcp
end=$(( $(date +%s) + $1 * 60 )); coll=$2; A="$3"; h=out; [ $coll = broadcast ] && h=in
ex='import json,sys; d=json.load(open(sys.argv[1])); h=sys.argv[2]; print(" ".join("%.2f"%r["in_place" if h=="in" else "out_of_place"]["time"] for r in d["results"]))'
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp)
 for v in base new ompi; do rm -f j6.json; e=; b=/work/main/build; [ $v = base ] && b=/tmp/epb
  if [ $v = ompi ]; then timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --bind-to none -np 4 --mca btl self,tcp /work/main/build/perf/mpi_coll_perf --coll $coll $A --halves $h --json j6.json >/dev/null 2>&1
  else env TUTTI_TRANSPORT=tcp $e timeout 120 $b/perf/${coll}_perf -N 4 --bind none $A --halves $h --json j6.json >/dev/null 2>&1; fi
  echo "$p $v $(python3 -c "$ex" j6.json $h 2>/dev/null)"; done; done
