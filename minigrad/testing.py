"""Comparing lists of arrays: the numbers behind every "equal to rounding" claim.

Both functions take two equally long lists of arrays (NumPy or CuPy arrays,
or Tensors, e.g. the parameters of two models) with matching shapes, and
return one Python float over all of them.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import backend
from .tensor import Tensor

__all__ = ["max_abs_diff", "max_rel_diff", "to_numpy"]


def to_numpy(x) -> np.ndarray:
    """The values of ``x`` as a NumPy array: a Tensor's ``.data``, a NumPy or CuPy
    array (copied from the GPU), a NumPy scalar, a Python number or a nested list.

    Each kind is recognized explicitly, never by reading a ``.data`` attribute
    that happens to exist: on a NumPy array ``.data`` is a memoryview of its
    buffer and on a CuPy array a device pointer, neither of which is the values.

    Raises:
        TypeError: anything else (the message names the type).
    """
    if isinstance(x, Tensor):
        x = x.data
    if backend.is_array(x):
        return backend.asnumpy(x)
    if isinstance(x, (np.generic, numbers.Number, list, tuple)):
        return np.asarray(x)
    raise TypeError(f"expected a Tensor, a NumPy or CuPy array, a number or a list, got "
                    f"{type(x).__name__}")


def _as_numpy_pairs(a_list, b_list, name):
    a_list, b_list = list(a_list), list(b_list)
    if len(a_list) != len(b_list):
        raise ValueError(f"{name}: the lists have different lengths: {len(a_list)} and "
                         f"{len(b_list)}")
    pairs = []
    for i, (a, b) in enumerate(zip(a_list, b_list)):
        a = to_numpy(a).astype(np.float64)
        b = to_numpy(b).astype(np.float64)
        if a.shape != b.shape:
            raise ValueError(f"{name}: item {i} has shapes {a.shape} and {b.shape}; "
                             "they must match")
        pairs.append((a, b))
    return pairs


def max_abs_diff(a_list, b_list) -> float:
    """max over all entries of |a - b| (0.0 for empty lists).

    Raises ValueError when the lists' lengths or an item's shapes differ.
    """
    pairs = _as_numpy_pairs(a_list, b_list, "max_abs_diff")
    return max((float(np.max(np.abs(a - b))) for a, b in pairs if a.size), default=0.0)


def max_rel_diff(a_list, b_list) -> float:
    """max |a - b| / max |b| over all entries of all items: the error relative to
    the scale of the reference ``b_list``.

    Dividing by the largest reference entry (not entry by entry) keeps the
    number meaningful when some entries of ``b`` are zero or tiny.  Returns
    0.0 when both are all zeros and inf when only ``b`` is.

    Raises ValueError when the lists' lengths or an item's shapes differ.
    """
    pairs = _as_numpy_pairs(a_list, b_list, "max_rel_diff")
    diff = max((float(np.max(np.abs(a - b))) for a, b in pairs if a.size), default=0.0)
    scale = max((float(np.max(np.abs(b))) for _, b in pairs if b.size), default=0.0)
    if scale == 0.0:
        return 0.0 if diff == 0.0 else float("inf")
    return diff / scale
