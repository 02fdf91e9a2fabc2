"""_torch_patches.py - two places where torch 2.x cannot serve a backend written in Python as
it serves its C++ ones, mended from the outside when "tutti" is registered (torch 2.x only;
each patch leaves torch's own backends as they were).

- Work.is_completed: torch hands out its own Work handle for a Python backend's Work and
  forwards only wait() and get_future() to it, so is_completed() would stay False forever.
- ProcessGroup.split_group on a rank outside every new group: torch asks each backend to split
  and takes "no backend" (None) as "not a member", but its Python trampoline (PyBackend::split,
  torch 2.15) dereferences the None it gets back and the process dies of SIGSEGV. So a
  TuttiBackend answers a non-member with a placeholder, and split_group returns None for it,
  as it does for a C++ backend's non-member."""
from torch._C._distributed_c10d import ProcessGroup, Work


def _once(cls, name, wrap):
    plain = getattr(cls, name)
    if getattr(plain, "_tutti", False):
        return
    patched = wrap(plain)
    patched._tutti = True
    setattr(cls, name, patched)


def _is_completed(plain):
    def is_completed(self):
        if plain(self):
            return True
        try:
            return self.get_future().done()
        except Exception:  # a work without a future: only its own answer
            return False
    return is_completed


def _split_group(plain):
    def split_group(self, ranks, *args, **kwargs):
        group = plain(self, ranks, *args, **kwargs)
        if self.rank() not in ranks and group is not None:
            return None  # a placeholder from TuttiBackend.split: this rank is in no new group
        return group
    return split_group


def apply():
    _once(Work, "is_completed", _is_completed)
    _once(ProcessGroup, "split_group", _split_group)
