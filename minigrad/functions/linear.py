"""The fused affine map of a dense layer: y = x Wᵀ + b.

One Function instead of MatMul + Transpose + Add: a single matrix product
forward, two products and one sum backward, and no intermediate tensors.
This is the hot path of every model in minigrad.
"""
from __future__ import annotations

from ..autograd import Function


class LinearFunction(Function):
    """y = x Wᵀ + b.

    Inputs: x of shape (*, in), W of shape (out, in), optionally b of shape
    (out,).  Output (*, out).  Backward, with x and g flattened to 2-D
    (rows = every leading index): dx = g W, dW = gᵀ x, db = Σ_rows g.
    Gradients not needed (``needs_input_grad``) are not computed.
    """

    def forward(self, x, weight, bias=None):
        if x.ndim == 0 or x.shape[-1] != weight.shape[1]:
            raise _shape_error(x, weight)
        self.x, self.weight = x, weight
        y = x @ weight.T            # matmul broadcasts over the leading axes
        if bias is not None:
            y += bias               # y is a fresh array: add in place
        return y

    def backward(self, g):
        # BEGIN SOLUTION ch02.7
        x, weight = self.x, self.weight
        need = self.needs_input_grad
        # (*, out) -> (rows, out): every leading index is a row
        g2, x2 = (g, x) if g.ndim == 2 else (g.reshape(-1, g.shape[-1]),
                                             x.reshape(-1, x.shape[-1]))
        gx = (g @ weight) if need[0] else None
        gw = (g2.T @ x2) if need[1] else None
        gb = g2.sum(axis=0) if len(need) == 3 and need[2] else None
        return (gx, gw, gb) if len(need) == 3 else (gx, gw)
        # END SOLUTION


def _shape_error(x, weight) -> ValueError:
    """The error for an x whose last axis is not the weight's in_features."""
    return ValueError(f"linear: input of shape {tuple(x.shape)} does not match the "
                      f"weight of shape {tuple(weight.shape)}: the last axis must "
                      f"have in_features={weight.shape[1]}")
