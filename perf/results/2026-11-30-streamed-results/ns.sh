#!/bin/bash
# ns.sh SECONDS: in the seconds without a shared cache, sendrecv 64M-256M timed (with the clock's log), timed, streamed
cd /tmp/ab2; end=$(( $(date +%s) + $1 )); k=0
while [ $(date +%s) -lt $end ]; do
  p=$(/tmp/probe/pp | awk '{print $2}')
  if [ $p -lt 300 ]; then sleep 3; continue; fi
  k=$((k+1))
  echo "$k dbg $p | $(FILLDBG=1 ./sr_dbg -N 2 --bind core -b 64M -e 256M -f 4 -n 8 -w 2 -c 0 --halves out 2>dbg-ns-$k.txt | grep -E '^ +[0-9]' | awk '{printf "%s:%s ", $1, $6}') $(/tmp/probe/pp)"
  echo "$k fill1 $p | $(TUTTI_SHM_FILL=1 ./sendrecv -N 2 --bind core -b 64M -e 256M -f 4 -n 8 -w 2 -c 0 --halves out 2>&1 | grep -E '^ +[0-9]' | awk '{printf "%s:%s ", $1, $6}') $(/tmp/probe/pp)"
done
