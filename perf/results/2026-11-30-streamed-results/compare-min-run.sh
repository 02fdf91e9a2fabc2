#!/bin/bash
cd /work/main
for i in 1 2 3; do
  for v in old new; do
    e=(); [ $v = old ] && e=(env TUTTI_STREAM_MIN=0)
    "${e[@]}" perf/compare.sh --colls all --ranks 2 --transports shm --peers "ompi mpich" --launches 3 --no-install \
      --series "-b 4M -e 256M -f 4 -n 10 -w 2" --out /tmp/cmp3/$v-$i > /tmp/cmp3/$v-$i.log 2>&1
  done
done
echo done > /tmp/cmp3/done
