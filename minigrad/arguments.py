"""Checks of plain arguments, with PyTorch's refusals: a flag must be a bool
(PyTorch refuses ``keepdim='x'`` where Python would take it as true), a size
or a position an int (not 1.5, not True)."""
from __future__ import annotations

import numpy as np


def check_bool(owner: str, name: str, value) -> bool:
    """``value`` as a bool; TypeError naming the argument for anything else."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{owner}: argument '{name}' must be bool, not "
                        f"{type(value).__name__} {value!r}")
    return bool(value)


def check_int(owner: str, name: str, value) -> int:
    """``value`` as an int; TypeError naming the argument for a float, a bool
    or anything else."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{owner}: argument '{name}' must be int, not "
                        f"{type(value).__name__} {value!r}")
    return int(value)


def check_shape(owner: str, shape) -> tuple:
    """A shape: ints >= 0 (TypeError for a non-int, ValueError for a negative size)."""
    shape = tuple(shape)
    for n in shape:
        check_int(owner, "size", n)
        if n < 0:
            raise ValueError(f"{owner}: negative dimension {n} in size {shape}; sizes must "
                             f"be >= 0")
    return shape
