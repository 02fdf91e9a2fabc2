#!/bin/bash
# loop.sh ROUNDS SMLIST: every collective at 4M-256M under each TUTTI_STREAM_MIN in turn
cd /tmp/ab2
for r in $(seq $1); do
 for c in all_reduce broadcast reduce reduce_scatter all_gather sendrecv alltoall; do
  h=out; [ $c = broadcast ] && h=in
  for m in $2; do
   echo "$r $c SM=$m $(/tmp/probe/pp) | $(TUTTI_STREAM_MIN=$m ./$c -N 2 -b 1M -e 256M -f 4 -n 8 -w 2 -c 0 --halves $h 2>&1 | grep -E '^ +[0-9]' | awk -v h=$h '{printf "%s:%s ", $1, (h=="in"?$10:$6)}')"
  done
 done
done
