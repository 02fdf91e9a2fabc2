#!/bin/bash
# clk.sh SECONDS: old clock vs median clock in turn, with the phase before and after
cd /tmp/ab2; end=$(( $(date +%s) + $1 )); r=0
while [ $(date +%s) -lt $end ]; do
 r=$((r+1))
 for c in sendrecv all_reduce reduce all_gather broadcast alltoall; do
  h=out; [ $c = broadcast ] && h=in
  for b in "" m_; do
   echo "$r $c ${b:-o_} $(/tmp/probe/pp | awk '{print $2}') | $(./$b$c -N 2 -b 4M -e 256M -f 4 -n 8 -w 2 -c 0 --halves $h 2>&1 | grep -E '^ +[0-9]' | awk -v h=$h '{printf "%s ", (h=="in"?$10:$6)}')| $(/tmp/probe/pp | awk '{print $2}')"
  done
 done
done
