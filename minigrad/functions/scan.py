"""Cumulative (scan) operations along one dimension: cumprod, cummax, cummin,
logcumsumexp.  (cumsum lives with the reductions.)

Every function works on the chosen dimension moved to the last axis; a 0-d
input counts as a vector of one entry.  Output j depends on the entries
0..j, so each backward is a running sum of the gradient taken from the
other end.  ``numpy.ufunc.accumulate`` does the scans; on the GPU the
arrays visit the host for the scans that CuPy lacks (cummax, cummin,
logcumsumexp).
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd import Function
from ..backend import get_array_module
from .reduction import normalize_axis


def _last(a, dim, name):
    """``a`` with dimension ``dim`` moved last (a 0-d array as shape (1,)), and the axis."""
    axis = normalize_axis(dim, max(a.ndim, 1), name)[0]
    return get_array_module(a).moveaxis(a.reshape(a.shape or (1,)), axis, -1), axis


def _back(x, axis, shape):
    """Undo :func:`_last`: move the last axis back to ``axis``, restore ``shape``."""
    return get_array_module(x).moveaxis(x, -1, axis).reshape(shape)


def _reverse_cumsum(x):
    """Σ_{j >= i} x_j along the last axis."""
    xp = get_array_module(x)
    return xp.flip(xp.cumsum(xp.flip(x, -1), axis=-1), -1)


def _on_host(fn, *arrays):
    """``fn`` on NumPy copies of ``arrays``, results moved back to their device."""
    device = backend.device_of(arrays[0])
    out = fn(*[backend.asnumpy(a) for a in arrays])
    if isinstance(out, tuple):
        return tuple(backend.to_device(o, device) for o in out)
    return backend.to_device(out, device)


class CumProd(Function):
    """Running product along ``dim``: y_j = Π_{i<=j} a_i (``torch.cumprod``).

    d y_j / d a_i = Π_{k<=j, k!=i} a_k for i <= j.  Where a_i != 0 that is
    y_j / a_i, so grad_i = Σ_{j>=i} g_j y_j / a_i.  That quotient fails at a
    zero; only the *first* zero z of a row needs more: its gradient is
    Σ_{j>=z} g_j · (the running product with a_z replaced by 1)_j, and every
    entry after z gets 0 (each of its products holds a_z = 0).  PyTorch's
    ``cumprod_backward`` takes the same two cases.  (The quotient loses
    accuracy only where g·y underflows, for entries near 1e-308, as
    PyTorch's does.)
    """

    def __init__(self, dim):
        self.dim = dim

    def forward(self, a):
        xp = get_array_module(a)
        if a.dtype.kind in "biu":
            a = a.astype(np.int64)                  # PyTorch's int64
        self.shape = a.shape
        self.a, self.axis = _last(a, self.dim, "cumprod")
        self.out = xp.cumprod(self.a, axis=-1)
        return _back(self.out, self.axis, self.shape)

    def backward(self, g):
        xp = get_array_module(g)
        g, _ = _last(g, self.axis, "cumprod")
        a, out = self.a, self.out
        if not g.size:
            return xp.zeros(self.shape, dtype=g.dtype)
        zero = a == 0
        n = a.shape[-1]
        pos = xp.arange(n)
        first_zero = xp.where(zero.any(axis=-1, keepdims=True),
                              zero.argmax(axis=-1)[..., None], n)   # n: no zero
        with np.errstate(divide="ignore", invalid="ignore"):
            grad = _reverse_cumsum(g * out) / xp.where(zero, 1, a)
        grad = xp.where(pos < first_zero, grad, 0)   # after z: 0; at z: below
        ones_at_z = xp.where(pos == first_zero, 1, a)
        at_z = (xp.where(pos >= first_zero, g * xp.cumprod(ones_at_z, axis=-1), 0)
                .sum(axis=-1, keepdims=True))
        grad = xp.where(pos == first_zero, at_z, grad).astype(g.dtype, copy=False)
        return _back(grad, self.axis, self.shape)


def _running_extreme(a, largest):
    """(values, indices) of the running maximum (or minimum) along the last
    axis.  A tie moves the index to the later entry, and nan, once met, stays
    (with the index of the latest nan): PyTorch's ``cummax``/``cummin``."""
    ufunc = np.maximum if largest else np.minimum
    values = ufunc.accumulate(a, axis=-1) if a.shape[-1] else a.copy()
    is_new = (a == values) | (np.isnan(a) if a.dtype.kind == "f" else False)
    candidates = np.where(is_new, np.arange(a.shape[-1]), 0)
    indices = np.maximum.accumulate(candidates, axis=-1) if a.shape[-1] else candidates
    return values, indices.astype(np.int64)


class CumExtreme(Function):
    """Running maximum (``largest=True``, ``torch.cummax``) or minimum
    (``torch.cummin``) along ``dim``.  The output is the values; the int64
    positions they came from are left in ``self.positions`` (an integer
    output cannot carry a gradient).  The gradient of value j goes to the
    entry at position j (summed where several values point at one entry).
    """

    def __init__(self, dim, largest):
        self.dim, self.largest = dim, largest

    def forward(self, a):
        name = "cummax" if self.largest else "cummin"
        self.shape = a.shape
        moved, self.axis = _last(a, self.dim, name)
        values, self.indices = _on_host(lambda x: _running_extreme(x, self.largest), moved)
        self.positions = _back(self.indices, self.axis, self.shape)
        return _back(values, self.axis, self.shape)

    def backward(self, g):
        xp = get_array_module(g)
        g, _ = _last(g, self.axis, "cummax")
        grad = xp.zeros(g.shape, dtype=g.dtype)          # C order: the reshape is a view
        if g.size:
            flat = grad.reshape(-1, g.shape[-1])         # a view: writes reach grad
            rows = xp.arange(flat.shape[0])[:, None]
            backend.scatter_add(flat, (rows, self.indices.reshape(flat.shape)),
                                g.reshape(flat.shape))
        return _back(grad, self.axis, self.shape)


def _logcumsumexp(a):
    """log Σ_{i<=j} exp(a_i) along the last axis, one logaddexp at a time
    (stable for any spread of values; -inf entries add nothing)."""
    if not a.shape[-1]:
        return a.copy()
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        return np.logaddexp.accumulate(a, axis=-1)


class LogCumSumExp(Function):
    """y_j = log Σ_{i<=j} exp(a_i) along ``dim`` (``torch.logcumsumexp``).

    d y_j / d a_i = exp(a_i - y_j) for i <= j, so
    grad_i = Σ_{j>=i} g_j exp(a_i - y_j).  To stay finite for large values it
    is summed in log space, positive and negative parts of g apart:
    grad_i = exp(a_i + L⁺_i) - exp(a_i + L⁻_i), with L± the reversed
    logcumsumexp of log(g±) - y (PyTorch's ``logcumsumexp_backward``).
    """

    def __init__(self, dim):
        self.dim = dim

    def forward(self, a):
        if a.dtype.kind not in "fc":        # PyTorch refuses integers here too
            raise TypeError(f"logcumsumexp: expected a floating tensor, got {a.dtype}")
        self.shape = a.shape
        self.a, self.axis = _last(a, self.dim, "logcumsumexp")
        self.out = _on_host(_logcumsumexp, self.a)
        return _back(self.out, self.axis, self.shape)

    def backward(self, g):
        xp = get_array_module(g)
        g, _ = _last(g, self.axis, "logcumsumexp")

        def part(gp):
            with np.errstate(divide="ignore", invalid="ignore"):
                logs = xp.log(gp) - self.out
            rev = _on_host(_logcumsumexp, xp.flip(logs, -1))
            with np.errstate(invalid="ignore", over="ignore", under="ignore"):
                return xp.exp(self.a + xp.flip(rev, -1))

        grad = part(xp.maximum(g, 0)) - part(xp.maximum(-g, 0))
        return _back(grad.astype(g.dtype, copy=False), self.axis, self.shape)
