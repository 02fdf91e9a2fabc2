#!/bin/bash
# va.sh MIN COLL "variants" ARGS: variants are /tmp/va<v>/ binaries
end=$(( $(date +%s) + $1 * 60 )); h=out; [ $2 = broadcast ] && h=in
ex='import json,sys; d=json.load(open(sys.argv[1])); h=sys.argv[2]; print(" ".join("%.3f"%r["in_place" if h=="in" else "out_of_place"]["time"] for r in d["results"]))'
while [ $(date +%s) -lt $end ]; do p=$(/tmp/probe/pp); for v in $3; do rm -f /tmp/ab3/jv.json
 env TUTTI_TRANSPORT=shm /tmp/va$v/${2}_perf -N 2 --bind core $4 --halves $h --json /tmp/ab3/jv.json >/dev/null 2>&1
 echo "$p $v $(python3 -c "$ex" /tmp/ab3/jv.json $h 2>/dev/null)"; done; done
