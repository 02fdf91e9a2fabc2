#!/bin/bash
# cc.sh MIN COLL ARGS: base, cubic, reno, big initial rmem (sysctl), ompi
end=$(( $(date +%s) + $1 * 60 )); coll=$2; A="$3"; h=out; [ $coll = broadcast ] && h=in
ex='import json,sys; d=json.load(open(sys.argv[1])); h=sys.argv[2]; print(" ".join("%.2f"%r["in_place" if h=="in" else "out_of_place"]["time"] for r in d["results"]))'
R0="4096 131072 33554432"; R1="4096 4194304 33554432"
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp)
 for v in b cubic reno big ompi; do rm -f j4.json; e=; [ $v = cubic ] && e=XCC=cubic; [ $v = reno ] && e=XCC=reno
  [ $v = big ] && sysctl -qw net.ipv4.tcp_rmem="$R1"
  if [ $v = ompi ]; then mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --bind-to core -np 2 --mca btl self,tcp /work/main/build/perf/mpi_coll_perf --coll $coll $A --halves $h --json j4.json >/dev/null 2>&1
  else env TUTTI_TRANSPORT=tcp $e /tmp/epb/perf/${coll}_perf -N 2 --bind core $A --halves $h --json j4.json >/dev/null 2>&1; fi
  sysctl -qw net.ipv4.tcp_rmem="$R0"
  echo "$p $v $(python3 -c "$ex" j4.json $h)"; done; done
