"""Comparing lists of arrays: the numbers behind every "equal to rounding" claim.

Both functions take two equally long lists of arrays (NumPy or CuPy arrays,
or Tensors, e.g. the parameters of two models) with matching shapes, and
return one Python float over all of them.
"""
from __future__ import annotations

import numpy as np

from . import backend

__all__ = ["max_abs_diff", "max_rel_diff"]


def _as_numpy_pairs(a_list, b_list, name):
    a_list, b_list = list(a_list), list(b_list)
    if len(a_list) != len(b_list):
        raise ValueError(f"{name}: the lists have different lengths: {len(a_list)} and "
                         f"{len(b_list)}")
    pairs = []
    for i, (a, b) in enumerate(zip(a_list, b_list)):
        a = backend.asnumpy(getattr(a, "data", a)).astype(np.float64)
        b = backend.asnumpy(getattr(b, "data", b)).astype(np.float64)
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
