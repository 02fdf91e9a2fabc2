"""torchft_train.py - one replica of a fault-tolerant data-parallel training under torchft
(tests/python/test_torchft.sh starts the lighthouse and the replicas). Each replica is one
process; torchft's Manager forms a quorum of the live replicas through the lighthouse every
step, all-reduces the gradients over the process group (tutti's ProcessGroupTutti, or torchft's
Gloo one), commits the step only if every participant succeeded, and lets a replica that
(re)joins fetch the state of one that kept training.

    torchft_train.py BACKEND REPLICA STEPS [KILL_AT]
    env: TORCHFT_LIGHTHOUSE=http://host:port, MASTER_PORT (this replica's own store),
         STEP_SECONDS (default 0.15: a step's compute, so that replicas overlap in time)

Prints "replica R step S loss L participants P" per committed step; with KILL_AT the process
kills itself (SIGKILL) in the middle of that step, after the quorum and before the all-reduce,
as a crashed host would.

The gradients go through Manager.allreduce as one flat tensor: torchft 0.2.0's own
DistributedDataParallel wrapper dies on an AssertionError when an all-reduce fails (its comm
hook reads a future that the failed wait never set), on Gloo as on tutti."""
import logging
import os
import signal
import sys
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed import TCPStore
from torchft import Manager
from torchft.process_group import ProcessGroupGloo


def main():
    backend, replica, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    kill_at = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    logging.basicConfig(level=logging.WARNING)
    timeout = timedelta(seconds=10)
    if backend == "tutti":
        from tutti.torchft_pg import ProcessGroupTutti
        pg = ProcessGroupTutti(timeout=timeout)
    else:
        pg = ProcessGroupGloo(timeout=timeout)
    port = int(os.environ["MASTER_PORT"])
    store = TCPStore("127.0.0.1", port, 1, True, timeout=timedelta(seconds=30))  # noqa: F841
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    inner = torch.optim.SGD(model.parameters(), lr=0.1)

    def state_dict():
        return {"model": model.state_dict(), "optim": inner.state_dict()}

    def load_state_dict(sd):
        model.load_state_dict(sd["model"])
        inner.load_state_dict(sd["optim"])

    manager = Manager(pg=pg, load_state_dict=load_state_dict, state_dict=state_dict,
                      min_replica_size=1, replica_id=f"replica_{replica}", rank=0,
                      world_size=1, store_addr="127.0.0.1", store_port=port, timeout=timeout,
                      quorum_timeout=timedelta(seconds=30),
                      connect_timeout=timedelta(seconds=10))
    params = list(model.parameters())
    w = torch.randn(16, 4, generator=torch.Generator().manual_seed(7))
    while manager.current_step() < steps:
        step = manager.current_step()
        g = torch.Generator().manual_seed(1000 * step + replica)
        x = torch.randn(32, 16, generator=g)
        y = (x @ w).argmax(1)
        manager.start_quorum()
        inner.zero_grad()
        if step == kill_at:
            print(f"replica {replica} step {step}: killing myself (SIGKILL)", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(float(os.environ.get("STEP_SECONDS", "0.15")))
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        # the gradients, flat, averaged over the participants through the manager (a failed
        # all-reduce is reported to it and the step is not committed)
        flat = torch.cat([p.grad.view(-1) for p in params])
        manager.allreduce(flat).wait()
        committed = manager.should_commit()
        if committed:
            offset = 0
            for p in params:
                p.grad.copy_(flat[offset:offset + p.numel()].view_as(p))
                offset += p.numel()
            inner.step()
        print(f"replica {replica} step {step} loss {loss.item():.5f} participants "
              f"{manager.num_participants()} {'committed' if committed else 'NOT committed'}",
              flush=True)
    print(f"replica {replica}: done at step {manager.current_step()}", flush=True)
    manager.shutdown(wait=False)
    os._exit(0)


if __name__ == "__main__":
    main()
