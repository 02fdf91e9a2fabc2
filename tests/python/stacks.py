"""stacks.py - the training stacks test_torch_stacks.py runs on Gloo and on tutti: each function
trains for STEPS steps on one rank of an initialised default group and returns that rank's
per-step losses (floats), from a seed that every run shares, so that two backends that move the
same bytes give the same losses.

- ddp: DistributedDataParallel in four settings one after another: small buckets (several
  all-reduces per backward), no_sync gradient accumulation, static_graph, and
  find_unused_parameters with a branch some steps do not use, under the fp16 compression hook
  (steps FP16_STEPS).
- fsdp2: fully_shard on a CPU DeviceMesh, then torch.distributed.checkpoint saves the sharded
  state, a fresh model loads it, and training goes on from it (losses of both halves).
- tp: parallelize_module with column- and row-wise plans on a small transformer block.
- pp: torch.distributed.pipelining, one stage per rank, a GPipe schedule (send/recv between
  stages); the last stage's losses, broadcast to every rank."""
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

STEPS = 20
DIM = 32
# ddp's last setting all-reduces gradients in float16 (the compression hook): its sums round at
# half precision (epsilon 9.8e-4), in an order that differs between libraries from 4 ranks on
FP16_STEPS = range(STEPS - STEPS // 4, STEPS)


def _data(step, rank, batch=8, dim=DIM, classes=4):
    """A batch of inputs and labels a model can learn (a fixed linear map's argmax)."""
    g = torch.Generator().manual_seed(1000 * step + rank)
    x = torch.randn(batch, dim, generator=g)
    w = torch.randn(dim, classes, generator=torch.Generator().manual_seed(7))
    return x, (x @ w).argmax(1)


class Block(nn.Module):
    """A transformer block: attention (q, k, v, o) and an MLP (up, down), pre-norm."""

    def __init__(self, dim=DIM, heads=4):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim) for _ in range(4))
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x):  # x: (batch, seq, dim)
        b, s, _ = x.shape
        h = self.norm1(x)
        q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2)
                   for t in (self.q(h), self.k(h), self.v(h)))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Net(nn.Module):
    """An MLP classifier with a side branch used only when asked (find_unused_parameters)."""

    def __init__(self, dim=DIM, classes=4):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, classes)
        self.side = nn.Linear(64, 64)

    def forward(self, x, use_side=True):
        h = self.body(x)
        if use_side:
            h = h + torch.tanh(self.side(h))
        return self.head(h)


def ddp(rank, n):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP
    losses = []
    settings = [dict(bucket_cap_mb=0.01), dict(), dict(static_graph=True),
                dict(find_unused_parameters=True)]
    for i, kw in enumerate(settings):
        torch.manual_seed(i)
        model = DDP(Net(), **kw)
        if "find_unused_parameters" in kw:
            model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        for step in range(STEPS // len(settings)):
            x, y = _data(step, rank)
            opt.zero_grad()
            if i == 1:  # no_sync: accumulate a first half-batch locally, then all-reduce
                with model.no_sync():
                    F.cross_entropy(model(x[:4]), y[:4]).backward()
                loss = F.cross_entropy(model(x[4:]), y[4:])
            else:
                loss = F.cross_entropy(model(x, use_side=step % 2 == 0 or i != 3), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


def _sharded_model():
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    model = nn.Sequential(Block(), Block(), nn.Linear(DIM, 4))
    for layer in model:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def _train_seq(model, opt, rank, steps, first):
    losses = []
    for step in range(first, first + steps):
        x, y = _data(step, rank, batch=4)
        x = x.view(4, 1, DIM).expand(4, 6, DIM).contiguous()
        opt.zero_grad()
        loss = F.cross_entropy(model(x).mean(1), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def fsdp2(rank, n, ckpt_dir):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
    model = _sharded_model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = _train_seq(model, opt, rank, STEPS // 2, 0)
    msd, osd = get_state_dict(model, opt)
    dcp.save({"model": msd, "optim": osd}, checkpoint_id=ckpt_dir)
    fresh = _sharded_model()
    fresh_opt = torch.optim.Adam(fresh.parameters(), lr=1e-3)
    fmsd, fosd = get_state_dict(fresh, fresh_opt)
    state = {"model": fmsd, "optim": fosd}
    dcp.load(state, checkpoint_id=ckpt_dir)
    set_state_dict(fresh, fresh_opt, model_state_dict=state["model"],
                   optim_state_dict=state["optim"])
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values()):
        assert torch.equal(a.full_tensor(), b.full_tensor()), f"{name} differs after load"
    return losses + _train_seq(fresh, fresh_opt, rank, STEPS - STEPS // 2, STEPS // 2)


def tp(rank, n):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)
    torch.manual_seed(0)
    mesh = init_device_mesh("cpu", (n,))
    block = Block(heads=n)
    block.heads = 1  # after the column split each rank holds heads / n = 1 head
    plan = {"q": ColwiseParallel(), "k": ColwiseParallel(), "v": ColwiseParallel(),
            "o": RowwiseParallel(), "up": ColwiseParallel(), "down": RowwiseParallel()}
    parallelize_module(block, mesh, plan)
    head = nn.Linear(DIM, 4)
    opt = torch.optim.SGD(list(block.parameters()) + list(head.parameters()), lr=0.05)
    losses = []
    for step in range(STEPS):
        x, y = _data(step, 0, batch=4)  # tensor parallel: every rank sees the same batch
        x = x.view(4, 1, DIM).expand(4, 6, DIM).contiguous()
        opt.zero_grad()
        loss = F.cross_entropy(head(block(x)).mean(1), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def pp(rank, n):
    from torch.distributed.pipelining import PipelineStage, ScheduleGPipe
    torch.manual_seed(0)
    layers = [nn.Sequential(nn.Linear(DIM, DIM), nn.Tanh()) for _ in range(n)]
    stage = PipelineStage(layers[rank], rank, n, torch.device("cpu"))
    schedule = ScheduleGPipe(stage, n_microbatches=4,
                             loss_fn=lambda out, y: F.mse_loss(out, y))
    opt = torch.optim.SGD(layers[rank].parameters(), lr=0.1)
    losses = []
    for step in range(STEPS):
        x, _ = _data(step, 0)
        y = torch.sin(x)
        opt.zero_grad()
        out = []
        if rank == 0:
            schedule.step(x)
        elif rank == n - 1:
            schedule.step(target=y, losses=out)
        else:
            schedule.step()
        opt.step()
        loss = torch.tensor([sum(o.item() for o in out) / 4 if out else 0.0])
        dist.broadcast(loss, n - 1)
        losses.append(loss.item())
    return losses
