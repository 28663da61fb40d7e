"""Matrix multiplication with NumPy's ``matmul`` rules (2-d, batched, 1-d operands)."""
from __future__ import annotations

from ..autograd import Function, unbroadcast
from .elementwise import _promote


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
        a, b = _promote(a, b)       # int @ float32 is float32, as for elementwise ops
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
