"""Seeded random streams.

minigrad owns one NumPy ``Generator`` (initialization, ``randn``, dropout's
default masks) and, when a GPU is used, one CuPy generator.
:func:`manual_seed` resets every stream, so a notebook can always start over.
Functions that draw random numbers also accept an explicit
``numpy.random.Generator`` through a ``generator=`` argument.
"""
from __future__ import annotations

import numpy as np

from . import backend

_seed = 0
_cpu = np.random.default_rng(_seed)
_gpu = None


def manual_seed(seed: int) -> None:
    """Reset minigrad's random streams (CPU and GPU) to ``seed``.

    Raises TypeError unless ``seed`` is a non-negative int.
    """
    global _seed, _cpu, _gpu
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise TypeError(f"manual_seed: seed must be a non-negative int, got {seed!r}")
    _seed = int(seed)
    _cpu = np.random.default_rng(_seed)
    _gpu = None


def initial_seed() -> int:
    """The seed last given to :func:`manual_seed` (0 at import)."""
    return _seed


def default_generator() -> np.random.Generator:
    """The CPU stream that functions use when no generator is given."""
    return _cpu


def gpu_generator():
    """CuPy's generator for GPU draws, seeded from the current seed on first use."""
    global _gpu
    if _gpu is None:
        cp = backend.array_module("cuda")
        _gpu = cp.random.default_rng(_seed)
    return _gpu


def get_generator(device="cpu", generator=None):
    """The generator to draw with: ``generator`` if given, else the device's stream."""
    if generator is not None:
        return generator
    return _cpu if backend.normalize_device(device) == "cpu" else gpu_generator()
