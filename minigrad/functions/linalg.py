"""Matrix multiplication with NumPy's ``matmul`` rules (2-d, batched, 1-d operands)."""
from __future__ import annotations

import numbers

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module


def _shape_error(a, b):
    k_a = a.shape[-1]
    k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
    return ValueError(f"matmul: shapes {tuple(a.shape)} and {tuple(b.shape)} do not "
                      f"align: {k_a} != {k_b}")


class MatMul(Function):
    """``a @ b``.

    Shapes: (..., n, k) @ (..., k, m) -> (..., n, m) with broadcast batch axes;
    a 1-d ``a`` of shape (k,) acts as (1, k) and a 1-d ``b`` as (k, 1), the
    added axis removed from the result, as in ``numpy.matmul``.
    Backward: dA = dC · Bᵀ, dB = Aᵀ · dC, summed over broadcast batch axes.
    """

    def forward(self, a, b):
        if a.ndim == 0 or b.ndim == 0:
            raise ValueError(f"matmul: operands must be at least 1-d, got shapes "
                             f"{tuple(a.shape)} and {tuple(b.shape)}")
        k_b = b.shape[0] if b.ndim == 1 else b.shape[-2]
        if a.shape[-1] != k_b:
            raise _shape_error(a, b)
        if a.dtype != b.dtype:      # PyTorch promotes nothing in matmul
            raise TypeError(f"matmul: expected both operands to have the same dtype, but "
                            f"got {a.dtype} and {b.dtype}; convert one with .to(dtype)")
        self.a, self.b = a, b
        try:
            return a @ b
        except ValueError:
            raise ValueError(f"matmul: batch shapes of {tuple(a.shape)} and "
                             f"{tuple(b.shape)} cannot be broadcast together") from None

    def backward(self, g):
        # BEGIN SOLUTION ch01.12
        a, b = self.a, self.b
        a2 = a[None, :] if a.ndim == 1 else a          # (..., n, k)
        b2 = b[:, None] if b.ndim == 1 else b          # (..., k, m)
        g2 = g
        if a.ndim == 1:
            g2 = g2[..., None, :] if b.ndim > 1 else g2[..., None]
        if b.ndim == 1:
            g2 = g2[..., None]
        ga = gb = None
        if self.needs_input_grad[0]:
            ga = g2 @ b2.swapaxes(-1, -2)
            ga = unbroadcast(ga, a2.shape).reshape(a.shape)
        if self.needs_input_grad[1]:
            gb = a2.swapaxes(-1, -2) @ g2
            gb = unbroadcast(gb, b2.shape).reshape(b.shape)
        return ga, gb
        # END SOLUTION


def check_ord(ord) -> float:  # noqa: A002 (PyTorch's name)
    """The order of a vector norm, checked: p >= 0, inf or -inf (as a float)."""
    if isinstance(ord, bool) or not isinstance(ord, numbers.Real) or np.isnan(ord):
        raise TypeError(f"vector_norm: ord must be a number (p, inf, -inf or 0), got {ord!r}")
    if ord < 0 and ord != -np.inf:
        raise ValueError(f"vector_norm: ord must be >= 0, inf or -inf, got {ord}")
    return float(ord)


class VectorNorm(Function):
    """The vector ``ord``-norm of x over ``axes`` (``torch.linalg.vector_norm``):

    * ord = p (p > 0, finite): (Σ |x|^p)^(1/p); p = 2 is the Euclidean norm;
    * ord = inf / -inf: max |x| / min |x|;
    * ord = 0: the number of non-zero entries (gradient 0).

    Backward, with n the norm:  p finite: g·sign(x)·|x|^(p-1) / n^(p-1)
    (g·x / n for p = 2, g·sign(x) for p = 1); ±inf: g·sign(x) shared evenly by
    the entries where |x| = n.  Where n = 0 (the zero vector) the gradient is
    0, the subgradient PyTorch picks, not the 0/0 = nan of the formula.
    """

    def __init__(self, ord=2, axis=None, keepdims=False):  # noqa: A002 (NumPy's name)
        self.ord, self.axis, self.keepdims = ord, axis, keepdims

    def forward(self, x):
        from .reduction import normalize_axis  # noqa: PLC0415 (sibling, no cycle)
        xp = get_array_module(x)
        if x.dtype.kind != "f":
            raise TypeError(f"vector_norm: expected a floating-point tensor, got dtype "
                            f"{x.dtype}")
        self.axes = normalize_axis(self.axis, x.ndim, "vector_norm")
        p = self.ord
        if np.isinf(p) and any(x.shape[a] == 0 for a in self.axes):
            raise ValueError(f"vector_norm: ord={p} of an empty tensor of shape "
                             f"{tuple(x.shape)} over axes {self.axes} is undefined "
                             "(no maximum of nothing)")
        self.dtype = x.dtype
        if x.dtype.itemsize < 4:       # float16: sum in float32 as PyTorch does, so
            x = x.astype(np.float32)   # that 300² + 400² does not overflow to inf
        a = xp.abs(x)
        if p != 0 and all(x.shape[ax] == 1 for ax in self.axes):
            n = a.copy()               # one entry: |x| exactly (no x² to over/underflow)
        elif p == np.inf:
            n = a.max(axis=self.axes, keepdims=True)
        elif p == -np.inf:
            n = a.min(axis=self.axes, keepdims=True)
        elif p == 0:
            n = (a != 0).sum(axis=self.axes, keepdims=True).astype(x.dtype)
        elif p == 1:
            n = a.sum(axis=self.axes, keepdims=True)
        elif p == 2:
            n = xp.sqrt((x * x).sum(axis=self.axes, keepdims=True))
        else:
            n = (a ** p).sum(axis=self.axes, keepdims=True) ** (1.0 / p)
        self.x, self.n = x, n
        n = n.astype(self.dtype, copy=False)
        if self.keepdims:
            return n
        return n.reshape([s for i, s in enumerate(x.shape) if i not in self.axes])

    def backward(self, g):
        xp = get_array_module(g)
        x, n, p = self.x, self.n, self.ord
        if not self.keepdims:
            g = g.reshape(n.shape)
        g = g.astype(x.dtype, copy=False)
        if p == 0:
            return xp.zeros_like(x, dtype=self.dtype)
        zero = n == 0
        safe_n = xp.where(zero, 1, n)
        if p == 2:
            grad = x / safe_n
        elif p == 1:
            grad = xp.sign(x)
        elif np.isinf(p):
            hit = xp.abs(x) == n
            grad = xp.sign(x) * hit / hit.sum(axis=self.axes, keepdims=True)
        else:
            a = xp.abs(x)
            with np.errstate(divide="ignore", invalid="ignore"):
                power = xp.where(a == 0, 0, a ** (p - 1))
            grad = xp.sign(x) * power / safe_n ** (p - 1)
        return (xp.where(zero, 0, g * grad)).astype(self.dtype, copy=False)
