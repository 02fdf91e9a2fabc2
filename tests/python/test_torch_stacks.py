#!/usr/bin/env python3
"""test_torch_stacks.py - real training stacks on the CPU (stacks.py: DDP in four settings,
FSDP2 with a distributed checkpoint saved and loaded, DTensor tensor parallel, pipeline
parallel), each on Gloo and then on tutti with the same seed, at 2 and 4 ranks: every rank's
loss at every one of the 20 steps (fp32) must equal Gloo's to 1e-6 relative (DDP's steps under
the fp16 compression hook to 1e-4: half-precision sums). Prints the
largest relative difference per stack. Needs torch 2.x (skips, 77, on 1.x).

    TUTTI_LIBRARY=build/libtutti.so <venv>/bin/python tests/python/test_torch_stacks.py [STACK]
"""
import datetime
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

RTOL = 1e-6
# DDP's steps under the fp16 compression hook: gradients summed in half precision, whose
# rounding depends on the order of the sum (ring or tree, where each library starts); 1e-4 is
# a tenth of half's epsilon. At 2 ranks the sum has one order and these steps match exactly.
FP16_RTOL = 1e-4


def _train(backend, stack, rank, n, store_file):
    import torch.distributed as dist
    import stacks
    import tutti.torch_backend  # noqa: F401  (registers "tutti")
    dist.init_process_group(backend, init_method=f"file://{store_file}", rank=rank,
                            world_size=n, timeout=datetime.timedelta(seconds=120))
    # fsdp2's checkpoint: one directory for the group, beside the store
    args = (f"{store_file}-checkpoint",) if stack == "fsdp2" else ()
    losses = getattr(stacks, stack)(rank, n, *args)
    dist.destroy_process_group()
    return losses


def _check(stack):
    def check(rank, n, stores):
        ref = harness.in_child(_train, "gloo", stack, rank, n, stores[0])
        got = harness.in_child(_train, "tutti", stack, rank, n, stores[1])
        assert len(ref) == len(got) >= 20, (len(ref), len(got))
        import stacks
        rel = [abs(a - b) / max(abs(a), 1e-30) for a, b in zip(ref, got)]
        half = set(stacks.FP16_STEPS) if stack == "ddp" else set()
        worst = max(r for i, r in enumerate(rel) if i not in half)
        worst16 = max([rel[i] for i in half] or [0.0])
        assert worst <= RTOL and worst16 <= FP16_RTOL, (
            f"{stack}: losses differ by {worst:.3g} relative (fp16 steps {worst16:.3g}); "
            f"gloo {ref} tutti {got}")
        if rank == 0:
            print(f"  {stack} {n} ranks: {len(ref)} steps, loss {ref[0]:.6f} -> {ref[-1]:.6f}, "
                  f"largest relative difference gloo vs tutti {worst:.3g}"
                  + (f" (steps under the fp16 hook: {worst16:.3g})" if half else ""), flush=True)
    check.__name__ = f"check_{stack}"
    return check


def _stores():
    d = tempfile.mkdtemp(prefix="tutti-stacks-")
    return [os.path.join(d, "gloo"), os.path.join(d, "tutti")]


def main():
    import torch
    if int(torch.__version__.split(".")[0]) < 2:
        print(f"SKIP: {sys.executable} has torch {torch.__version__}: these stacks need torch 2.x")
        sys.exit(77)
    chosen = sys.argv[1:] or ["ddp", "fsdp2", "tp", "pp"]
    harness.main([(f"{s}_{n}", _check(s), n, _stores) for s in chosen for n in (2, 4)],
                 need=("numpy", "torch"))


if __name__ == "__main__":
    main()
