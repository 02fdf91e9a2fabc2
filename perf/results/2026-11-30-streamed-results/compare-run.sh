#!/bin/bash
cd /work/main
for i in 1 2 3; do
  for v in old new; do
    b=build; [ $v = old ] && b=/tmp/oldb
    perf/compare.sh --colls all --ranks 2 --transports shm --peers "ompi mpich" --launches 3 --no-install --build $b \
      --series "-b 128K -e 512K -f 4 -n 100 -w 10" --series "-b 4M -e 256M -f 4 -n 10 -w 2" --out /tmp/cmp4/$v-$i > /tmp/cmp4/$v-$i.log 2>&1
  done
done
echo done > /tmp/cmp4/done
