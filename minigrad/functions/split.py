"""Split: one tensor cut into consecutive pieces along a dimension
(``torch.split`` / ``torch.chunk``), as one Function with several outputs."""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import get_array_module


class Split(Function):
    """Pieces of sizes ``sizes`` (which sum to the dimension's size) along
    ``axis`` (already checked and non-negative).  Each output is a copy.

    Backward puts every piece's gradient back in its place: the gradients
    concatenated, a piece that received none (not used in the loss) giving
    zeros.
    """

    def __init__(self, sizes, axis):
        self.sizes, self.axis = tuple(sizes), axis

    def forward(self, a):
        self.in_shape, self.dtype = a.shape, a.dtype
        bounds = np.cumsum((0,) + self.sizes)
        pieces = []
        for start, stop in zip(bounds[:-1], bounds[1:]):
            where = (slice(None),) * self.axis + (slice(int(start), int(stop)),)
            pieces.append(a[where].copy())
        return tuple(pieces)

    def backward(self, *grads):
        xp = get_array_module(next(g for g in grads if g is not None))
        parts = []
        for g, n in zip(grads, self.sizes):
            if g is None:
                shape = list(self.in_shape)
                shape[self.axis] = n
                g = xp.zeros(shape, dtype=self.dtype)
            parts.append(g)
        return xp.concatenate(parts, axis=self.axis)
