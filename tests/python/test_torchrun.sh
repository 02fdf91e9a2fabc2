#!/usr/bin/env bash
# A real torchrun launch of the torch backend: `python3 -m torch.distributed.run --standalone
# --nproc_per_node 2` starts torchrun_job.py, which initialises from torchrun's environment,
# all-reduces, broadcasts and checks; Gloo runs the same job alongside as the reference. torch
# 1.13's torchrun on Python 3.11 dies before any worker starts without --redirects/--tee (its
# Std.from_str returns None), so they are given. With "c10d", torchrun rendezvous through its
# c10d backend on a local port (--rdzv-backend c10d --rdzv-endpoint, as a multi-node job does)
# instead of --standalone. Skips (77) without torch.
#   test_torchrun.sh PYTHON [c10d]
set -u
py=$1
launch=(--standalone)
if [ "${2:-}" = c10d ]; then
  port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  launch=(--nnodes 1 --rdzv-backend c10d --rdzv-endpoint "127.0.0.1:$port" --rdzv-id "tutti-$$")
fi
here=$(cd "$(dirname "$0")" && pwd)
if ! "$py" -c 'import torch.distributed.run' 2>/dev/null; then
  echo "SKIP: $py has no torch.distributed.run (apt-get install python3-torch)"
  exit 77
fi
fails=0
for backend in tutti gloo; do
  out=$(cd "$(mktemp -d)" && TUTTI_SECRET=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n') \
    GLOO_SOCKET_IFNAME=lo timeout 300 "$py" -m torch.distributed.run "${launch[@]}" \
    --nproc_per_node 2 --redirects 1 --tee 1 "$here/torchrun_job.py" "$backend" 2>&1)
  rc=$?
  echo "$out" | grep -E "torchrun $backend|Error|error" | head -20
  n=$(grep -c "torchrun $backend: rank [01] of 2 (LOCAL_RANK [01]): ok" <<<"$out")
  if [ "$rc" -ne 0 ] || [ "$n" -ne 2 ]; then
    echo "FAIL: torchrun with $backend: exit $rc, $n of 2 workers ok"
    fails=$((fails + 1))
  fi
done
[ "$fails" -eq 0 ] && echo "torchrun ${launch[*]}: tutti and gloo both ran 2 workers"
exit $((fails > 0))
