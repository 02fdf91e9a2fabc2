"""torch_dist_suite.py BACKEND [TEST ...] - a selection of torch's own distributed tests
(torch/testing/_internal/distributed/distributed_test.py, the DistributedTest that torch's
test_distributed_spawn.py drives) on BACKEND, gloo or tutti, 2 spawned ranks per test.

The tests decide what to run by the backend's name when they are defined (Gloo-only tests,
collectives a backend lacks). tutti runs under Gloo's name at that point, so it gets Gloo's
selection, and init_process_group("gloo") then makes a tutti group: the gates are opened at run
time, the tests themselves are torch's. Prints a line per test and a Synthesis line.
"""
import os
import sys
import tempfile
import unittest

if __name__ == "__main__" and len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
    os.environ["TORCH_DIST_TARGET"] = sys.argv[1]  # spawned ranks import this file again
TARGET = os.environ.get("TORCH_DIST_TARGET", "tutti")
os.environ["BACKEND"] = "gloo"           # the gates, as for Gloo
os.environ.setdefault("WORLD_SIZE", "2")
os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="tutti-torch-dist-"))
os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
os.environ.setdefault("INIT_METHOD", "file://")  # the timeout tests want file:// (as upstream runs)

try:
    import expecttest  # noqa: F401  (torch's test utilities import it; Debian 12 lacks it)
except ImportError:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "shims"))

import torch.distributed as dist  # noqa: E402

if TARGET == "tutti":
    import tutti.torch_backend  # noqa: E402,F401  (registers "tutti")

    _init = dist.init_process_group

    def _init_as_tutti(*args, **kwargs):
        if kwargs.get("backend") == "gloo":
            kwargs["backend"] = "tutti"
        return _init(*args, **kwargs)

    dist.init_process_group = _init_as_tutti

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest, TestDistBackend)

# Collectives, point to point, groups of tensors, object collectives, and the barrier timeout's
# message. Not DDP: this harness turns on DDP's ReplicatedTensor, whose torch.distributed._shard
# fails to import on Python 3.11 (dataclass with a mutable default), on Gloo as on tutti; DDP
# runs in test_torch_backend.py's ddp_tutti_matches_gloo instead.
SELECTION = [
    "test_all_reduce_sum", "test_all_reduce_min", "test_all_reduce_max",
    "test_all_reduce_product", "test_all_reduce_sum_async", "test_all_reduce_coalesced_sum",
    "test_broadcast", "test_reduce_sum", "test_all_gather", "test_all_gather_coalesced_simple",
    "test_all_gather_coalesced_complex", "test_all_gather_coalesced_with_empty", "test_gather",
    "test_scatter", "test_all_to_all", "test_all_to_all_single_equal_split",
    "test_all_to_all_single_unequal_split", "test_barrier", "test_send_recv", "test_isend",
    "test_irecv", "test_broadcast_object_list", "test_all_gather_object_default_pg",
    "test_barrier_timeout_global",
]


class TestDist(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        # fork (TORCH_DIST_FORK=1): the ranks start without importing torch again (~2 s each)
        if os.environ.get("TORCH_DIST_FORK") == "1":
            import torch.multiprocessing as tmp
            self._start_processes(tmp.get_context("fork").Process)
        else:
            self._spawn_processes()


def main():
    names = sys.argv[2:] or SELECTION
    if names == ["all"]:  # every test of the class, as torch's test_distributed_spawn.py runs
        names = sorted(n for n in dir(TestDist) if n.startswith("test_"))
    missing = [n for n in names if not hasattr(TestDist, n)]
    if missing:
        sys.exit(f"torch_dist_suite: torch {__import__('torch').__version__} has no {missing}")
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(
        unittest.TestSuite(TestDist(n) for n in names))
    bad = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    status = {t._testMethodName: "FAIL" for t, _ in result.failures + result.errors}
    status.update({t._testMethodName: "skipped" for t, _ in result.skipped})
    for n in names:  # one line each, for test_torch_dist.sh
        print(f"RESULT {n} {status.get(n, 'ok')}")
    for test, why in result.skipped:
        print(f"[SKIP] {TARGET}: {test._testMethodName}: {why}")
    print(f"Synthesis: Tested: {result.testsRun - skipped} | Passing: "
          f"{result.testsRun - skipped - bad} | Failing: {bad} | Crashing: 0")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
