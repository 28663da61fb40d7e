"""Reductions over ``axis`` (None, an int, or a tuple; negative axes allowed) with ``keepdims``.

Backward broadcasts the output gradient back over the reduced axes: it first
restores them as size-1 axes (when ``keepdims`` was False), then broadcasts.
"""
from __future__ import annotations

import warnings

import numpy as np

from ..autograd import Function
from ..backend import count_as, get_array_module, opmath_dtype
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
        if ndim == 0 and a in (0, -1):    # a 0-d tensor: dim 0 or -1 reduces nothing,
            continue                        # as in PyTorch
        if not -ndim <= a < ndim:
            raise ValueError(f"{name}: axis {a} is out of range for a tensor with "
                             f"{ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{name}: repeated axis in {axis!r}")
    return tuple(sorted(out))


def _expand(g, in_shape, axes, keepdims):
    """Reshape the reduced gradient ``g`` so that it broadcasts against the input:
    without keepdims, the summed ``axes`` (normalized: sorted, non-negative) come
    back as size-1 axes, e.g. in_shape (2, 3, 4), axes (0, 2): (3,) -> (1, 3, 1).
    The backward of Sum, Mean, Max and Var start here."""
    # BEGIN SOLUTION ch01.9
    if not keepdims and axes:
        shape = list(in_shape)
        for a in axes:
            shape[a] = 1
        g = g.reshape(shape)
    return g
    # END SOLUTION


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
        count = 1
        for ax in self.axes:
            count *= a.shape[ax]
        self.count = count_as(count, a)      # float16: 70,000 entries would make it inf
        xp = get_array_module(a)
        # Over an empty axis the mean is 0/0 = nan, as in NumPy and PyTorch
        # (without NumPy's "Mean of empty slice" warning).
        # float16 is summed in float32, as PyTorch does (60000 + 60000 overflows).
        total = xp.sum(a, axis=self.axes, keepdims=self.keepdims, dtype=opmath_dtype(a.dtype))
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


class AMax(Max):
    """``amax``: the same values; PyTorch's ``amax`` backward multiplies by the
    mask, g / count · (a == max), so an inf or nan upstream gradient gives nan
    at the other entries (0 · inf), and a row whose maximum is nan gets nan
    everywhere (no entry equals nan: 0 / 0).  ``max()`` blocks instead."""

    def backward(self, g):
        grad = super().backward(g)          # max()'s: ties share g, the others get 0
        g = _expand(g, self.a.shape, self.axes, self.keepdims)
        xp = get_array_module(grad)
        with np.errstate(invalid="ignore"):
            # off the maximum, the product with a False mask: 0 · g (nan where g is
            # inf or nan) ...
            grad = xp.where(self.a == self.out, grad, g * 0)
        # ... and where the maximum is nan no entry equals it: 0 / 0, nan everywhere
        return xp.where(xp.isnan(self.out), grad.dtype.type(np.nan), grad)


class AMin(AMax):
    """``amin``; see :class:`AMax`."""

    reduce = "min"


class Var(Function):
    """Variance over axes: Σ(a_i - mean)² / max(0, n - correction), with
    ``correction`` 1 (Bessel's, unbiased: PyTorch's default) or 0 (biased).

    d var / d a_i = 2 (a_i - mean) / (n - correction).
    """

    def __init__(self, axis=None, keepdims=False, correction=1):
        self.axis, self.keepdims, self.correction = axis, keepdims, correction

    def forward(self, a):
        a = to_floating(a)
        dtype = a.dtype
        a = a.astype(opmath_dtype(a.dtype), copy=False)   # float16: computed in float32
        self.axes = normalize_axis(self.axis, a.ndim, "var")
        self.in_shape = a.shape
        n = 1
        for ax in self.axes:
            n *= a.shape[ax]
        self.denominator = max(0, n - self.correction)     # PyTorch's: n <= correction gives nan/inf
        if n - self.correction <= 0:
            warnings.warn(f"{self.name}(): degrees of freedom is <= 0. Correction should be "
                          f"strictly less than the reduction factor (input numel divided by "
                          f"output numel)", UserWarning, stacklevel=4)
        with np.errstate(divide="ignore", invalid="ignore"):   # empty: nan, no warning
            mean = a.sum(axis=self.axes, keepdims=True) / n
        self.centered = a - mean
        with np.errstate(divide="ignore", invalid="ignore"):
            var = (self.centered * self.centered).sum(
                axis=self.axes, keepdims=self.keepdims) / self.denominator
        return var.astype(dtype, copy=False)

    name = "var"

    def backward(self, g):
        g = _expand(g, self.in_shape, self.axes, self.keepdims)
        with np.errstate(divide="ignore", invalid="ignore"):   # n - correction <= 0: nan
            return g * self.centered * 2 / self.denominator


class Std(Var):
    """Standard deviation, the square root of :class:`Var`.

    d std / d a_i = (a_i - mean) / ((n - correction) std), taken as 0 where
    std = 0 (a constant slice), as PyTorch does (not 0/0 = nan)."""

    name = "std"

    def forward(self, a):
        var = super().forward(a)
        self.out = get_array_module(var).sqrt(var)
        return self.out

    def backward(self, g):
        xp = get_array_module(g)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = xp.where(self.out == 0, 0, g / (2 * self.out)).astype(g.dtype, copy=False)
        return super().backward(g)


# --------------------------------------------------------- more reductions
class LogSumExp(Function):
    """log Σ exp(a) over ``axis``, stable: m + log Σ exp(a - m), m the maximum
    (0 where it is ±inf, so that a row of -inf gives -inf, not nan).
    d/da = exp(a - out), the softmax."""

    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, a):
        xp = get_array_module(a)
        a = to_floating(a)
        self.axes = normalize_axis(self.axis, a.ndim, "logsumexp")
        self.a, self.in_shape = a, a.shape
        m = a.max(axis=self.axes, keepdims=True) if a.size else xp.zeros((1,) * a.ndim, a.dtype)
        m = xp.where(xp.isfinite(m), m, 0)
        with np.errstate(divide="ignore", under="ignore"):
            self.out = xp.log(xp.exp(a - m).sum(axis=self.axes, keepdims=True)) + m
        return self.out if self.keepdims else self.out.reshape(
            [n for i, n in enumerate(a.shape) if i not in self.axes])

    def backward(self, g):
        g = _expand(g, self.in_shape, self.axes, self.keepdims)
        with np.errstate(invalid="ignore", under="ignore"):
            return g * get_array_module(g).exp(self.a - self.out)


class CumSum(Function):
    """Running sum along ``dim``; backward is the running sum of the gradient
    from the other end (out_j depends on every a_i with i <= j)."""

    def __init__(self, dim):
        self.dim = dim

    def forward(self, a):
        self.axis = normalize_axis(self.dim, max(a.ndim, 1), "cumsum")[0]
        dtype = np.int64 if a.dtype.kind in "biu" else None      # PyTorch's int64
        return get_array_module(a).cumsum(a, axis=self.axis if a.ndim else None,
                                          dtype=dtype).reshape(a.shape)

    def backward(self, g):
        xp = get_array_module(g)
        if g.ndim == 0:
            return g
        return xp.flip(xp.cumsum(xp.flip(g, self.axis), axis=self.axis), self.axis)


class Prod(Function):
    """Product over ``axis`` (one int, or None for all entries).

    d/da_i = Π_{j != i} a_j, computed as (product of the entries before i) ·
    (product of the entries after i), so that it stays exact when some a_j
    are 0 (dividing the product by a_i would give 0/0)."""

    def __init__(self, axis=None, keepdims=False):
        self.axis, self.keepdims = axis, keepdims

    def forward(self, a):
        xp = get_array_module(a)
        self.in_shape, self.a = a.shape, a
        self.axes = normalize_axis(self.axis, a.ndim, "prod")
        dtype = np.int64 if a.dtype.kind in "biu" else None
        return xp.prod(a, axis=self.axes, keepdims=self.keepdims, dtype=dtype)

    def backward(self, g):
        xp = get_array_module(g)
        if self.a.size == 0:                 # an empty input: an empty gradient
            return xp.zeros(self.in_shape, dtype=g.dtype)
        g = _expand(g, self.in_shape, self.axes, self.keepdims)
        rest = [i for i in range(self.a.ndim) if i not in self.axes]
        # the reduced axes flattened into one last axis
        moved = xp.moveaxis(self.a, self.axes, range(len(rest), self.a.ndim))
        flat = moved.reshape(moved.shape[:len(rest)] + (-1,))
        ones = xp.ones(flat.shape[:-1] + (1,), dtype=flat.dtype)
        before = xp.cumprod(xp.concatenate([ones, flat[..., :-1]], axis=-1), axis=-1)
        after = xp.flip(xp.cumprod(xp.concatenate(
            [ones, xp.flip(flat, -1)[..., :-1]], axis=-1), axis=-1), -1)
        others = (before * after).reshape(moved.shape)
        others = xp.moveaxis(others, range(len(rest), self.a.ndim), self.axes)
        return g * others
