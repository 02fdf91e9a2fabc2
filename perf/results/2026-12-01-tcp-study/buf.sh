#!/bin/bash
# buf.sh MIN [ARGS]: send/recv with the default and a 4 MiB initial tcp_rmem/tcp_wmem (sysctl)
# for tutti, tutti with 1 socket, Open MPI. buf.txt: default ARGS; buf2.txt: "-b 1M -e 4M -f 2 -n 300 -w 50"
end=$(( $(date +%s) + $1 * 60 ))
ex='import json,sys; d=json.load(open(sys.argv[1])); print(" ".join("%.2f"%r["out_of_place"]["time"] for r in d["results"]))'
A="${2:--b 256K -e 4M -f 2 -n 40 -w 5}"
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp)
for big in 0 1; do
 if [ $big = 1 ]; then sysctl -qw net.ipv4.tcp_rmem="4096 4194304 33554432" net.ipv4.tcp_wmem="4096 4194304 4194304"; else sysctl -qw net.ipv4.tcp_rmem="4096 131072 33554432" net.ipv4.tcp_wmem="4096 16384 4194304"; fi
 rm -f j3.json; env TUTTI_TRANSPORT=tcp /work/main/build/perf/sendrecv_perf -N 2 --bind core $A --json j3.json >/dev/null 2>&1; echo "$p t$big $(python3 -c "$ex" j3.json)"
 rm -f j3.json; env TUTTI_TRANSPORT=tcp TUTTI_NSOCKS=1 /work/main/build/perf/sendrecv_perf -N 2 --bind core $A --json j3.json >/dev/null 2>&1; echo "$p s$big $(python3 -c "$ex" j3.json)"
 rm -f j3.json; mpirun.openmpi --allow-run-as-root --oversubscribe --mca pml ob1 --bind-to core -np 2 --mca btl self,tcp /work/main/build/perf/mpi_coll_perf --coll sendrecv $A --json j3.json >/dev/null 2>&1; echo "$p o$big $(python3 -c "$ex" j3.json)"
done; done
sysctl -qw net.ipv4.tcp_rmem="4096 131072 33554432" net.ipv4.tcp_wmem="4096 16384 4194304"
