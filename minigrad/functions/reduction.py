"""Reductions over ``axis`` (None, an int, or a tuple; negative axes allowed) with ``keepdims``.

Backward broadcasts the output gradient back over the reduced axes: it first
restores them as size-1 axes (when ``keepdims`` was False), then broadcasts.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import get_array_module
from ..dtypes import to_floating
from .elementwise import blocked_to_zero


def normalize_axis(axis, ndim, name="reduction"):
    """Return ``axis`` as a sorted tuple of non-negative ints (all axes for None).

    Raises ValueError naming the axis and the number of dimensions when it is
    out of range or repeated.
    """
    if axis is None:
        return tuple(range(ndim))
    axes = tuple(axis) if isinstance(axis, (tuple, list)) else (axis,)
    out = []
    for a in axes:
        if not isinstance(a, (int, np.integer)) or isinstance(a, bool):
            raise TypeError(f"{name}: axis must be an int or a tuple of ints, got {axis!r}")
        a = int(a)
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of range for a tensor with "
                             f"{ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {axis!r}")
    return tuple(sorted(out))


def _expand(g, in_shape, axes, keepdims):
    """Reshape the reduced gradient so that it broadcasts against the input."""
    if not keepdims and axes:
        shape = list(in_shape)
        for a in axes:
            shape[a] = 1
        g = g.reshape(shape)
    return g


class Sum(Function):
    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, a):
        self.in_shape = a.shape
        self.axes = normalize_axis(self.axis, a.ndim, "sum")
        # PyTorch sums bool and every integer dtype in int64 (NumPy: uint8 in
        # uint64, where ``x.sum() - 10`` would wrap around).
        dtype = np.int64 if a.dtype.kind in "biu" else None
        return get_array_module(a).sum(a, axis=self.axes, keepdims=self.keepdims, dtype=dtype)

    def backward(self, g):
        # BEGIN SOLUTION ch01.9
        g = _expand(g, self.in_shape, self.axes, self.keepdims)
        return get_array_module(g).broadcast_to(g, self.in_shape)
        # END SOLUTION


class Mean(Function):
    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, a):
        a = to_floating(a)          # the mean of integers is the default float dtype
        self.in_shape = a.shape
        self.axes = normalize_axis(self.axis, a.ndim, "mean")
        self.count = 1
        for ax in self.axes:
            self.count *= a.shape[ax]
        xp = get_array_module(a)
        # Over an empty axis the mean is 0/0 = nan, as in NumPy and PyTorch
        # (without NumPy's "Mean of empty slice" warning).
        # float16 is summed in float32, as PyTorch does (60000 + 60000 overflows).
        wide = np.float32 if a.dtype.kind == "f" and a.dtype.itemsize < 4 else None
        total = xp.sum(a, axis=self.axes, keepdims=self.keepdims, dtype=wide)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (total / self.count).astype(a.dtype, copy=False) if a.dtype.kind in "fc" \
                else total / self.count

    def backward(self, g):
        # BEGIN SOLUTION ch01.10
        with np.errstate(invalid="ignore", divide="ignore"):   # empty input: no entries
            g = _expand(g, self.in_shape, self.axes, self.keepdims) / self.count
        return get_array_module(g).broadcast_to(g, self.in_shape)
        # END SOLUTION


class Max(Function):
    """Maximum over axes; tied maxima share the gradient evenly (PyTorch's
    ``max()`` over all axes, and ``amax``).  Entries that are not the maximum
    get exactly 0, also for an inf or nan upstream gradient (PyTorch's
    ``amax`` multiplies by a mask and gives nan there)."""

    reduce = "max"

    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, a):
        xp = get_array_module(a)
        self.axes = normalize_axis(self.axis, a.ndim, self.reduce)
        if any(a.shape[ax] == 0 for ax in self.axes):
            raise ValueError(f"{self.reduce}: cannot reduce an empty tensor of shape "
                             f"{tuple(a.shape)} over axes {self.axes}")
        self.a = a
        self.out = getattr(xp, self.reduce)(a, axis=self.axes, keepdims=True)
        return self.out if self.keepdims else self.out.reshape(
            [n for i, n in enumerate(a.shape) if i not in self.axes])

    def backward(self, g):
        # BEGIN SOLUTION ch01.11
        g = _expand(g, self.a.shape, self.axes, self.keepdims)
        xp = get_array_module(g)
        # A nan maximum takes the gradient, as in PyTorch (nan == nan is False).
        mask = (self.a == self.out) | (xp.isnan(self.a) & xp.isnan(self.out))
        count = mask.sum(axis=self.axes, keepdims=True)
        share = g / count.astype(g.dtype, copy=False)
        # a non-maximum gets exactly 0 even when g is inf or nan
        with np.errstate(invalid="ignore"):
            product = share * mask
        return blocked_to_zero(product, mask)
        # END SOLUTION


class Min(Max):
    """Minimum over axes; tied minima share the gradient evenly."""

    reduce = "min"


class Var(Function):
    """Variance over axes: Σ(a_i - mean)² / max(0, n - correction), with
    ``correction`` 1 (Bessel's, unbiased: PyTorch's default) or 0 (biased).

    d var / d a_i = 2 (a_i - mean) / (n - correction).
    """

    def __init__(self, axis=None, keepdims=False, correction=1):
        self.axis, self.keepdims, self.correction = axis, keepdims, correction

    def forward(self, a):
        xp = get_array_module(a)
        a = to_floating(a)
        self.axes = normalize_axis(self.axis, a.ndim, "var")
        self.in_shape = a.shape
        n = 1
        for ax in self.axes:
            n *= a.shape[ax]
        self.denominator = max(0, n - self.correction)     # PyTorch's: n <= correction gives nan/inf
        with np.errstate(divide="ignore", invalid="ignore"):   # empty: nan, no warning
            mean = a.sum(axis=self.axes, keepdims=True) / n
        self.centered = a - mean
        with np.errstate(divide="ignore", invalid="ignore"):
            return (self.centered * self.centered).sum(
                axis=self.axes, keepdims=self.keepdims) / self.denominator

    def backward(self, g):
        g = _expand(g, self.in_shape, self.axes, self.keepdims)
        with np.errstate(divide="ignore", invalid="ignore"):   # n - correction <= 0: nan
            return g * self.centered * 2 / self.denominator
