"""torchft_pg.py - a process group torchft (0.2.0) can reconfigure, over tutti.

    from torchft import Manager
    from tutti.torchft_pg import ProcessGroupTutti
    manager = Manager(pg=ProcessGroupTutti(timeout=timedelta(seconds=10)), ...)

torchft keeps one process group per replica group and calls configure() with a new store each
time the quorum changes (a replica died, or one joined): the old communicator is aborted (its
calls in flight fail at once, a peer that died is not waited for) and a new tutti communicator
of the new quorum is made through that store, as torchft's own ProcessGroupGloo makes a new
Gloo context. CPU tensors go through tutti; a CUDA tensor is refused with tutti backend's error.
"""
from datetime import timedelta

import torch
from torch.distributed import ProcessGroup as BaseProcessGroup
from torchft.process_group import ProcessGroupWrapper

from .torch_backend import TuttiBackend
from ._torch_patches import apply as _apply_patches
from ._torch_store import join


class ProcessGroupTutti(ProcessGroupWrapper):
    """torchft's reconfigurable process group with a tutti communicator inside."""

    def __init__(self, timeout: timedelta = timedelta(seconds=60)) -> None:
        _apply_patches()
        super().__init__(timeout=timeout)

    def _create_pg(self, store, rank: int, world_size: int) -> BaseProcessGroup:
        backend = TuttiBackend(join(store, rank, world_size, self._timeout), store,
                               self._timeout)
        pg = BaseProcessGroup(store, rank, world_size)
        pg._set_default_backend(BaseProcessGroup.BackendType.CUSTOM)
        pg._register_backend(torch.device("cpu"), BaseProcessGroup.BackendType.CUSTOM, backend)
        return pg

    def getBackendName(self) -> str:
        return "torchft-tutti"
