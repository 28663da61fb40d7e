"""``minigrad.cuda``: is a GPU usable, and GPU housekeeping."""
from __future__ import annotations

from . import backend


def is_available() -> bool:
    """True when CuPy imports and a GPU can allocate; never raises."""
    return backend.cuda_is_available()


def synchronize() -> None:
    """Wait for all queued GPU work (no-op without a GPU)."""
    if backend.cuda_is_available():
        backend.synchronize("cuda")


def memory_allocated() -> int:
    """Bytes currently used in CuPy's memory pool (0 without a GPU)."""
    return backend.gpu_memory_stats()["used"]
