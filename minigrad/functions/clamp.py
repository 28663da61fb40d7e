"""clamp with tensor bounds: min(max(a, low), high), elementwise and
broadcast, with gradients for the bounds too (``torch.clamp(x, min_t, max_t)``).

(Number bounds are :class:`minigrad.functions.elementwise.Clip`.)
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module
from ..dtypes import result_type


class ClampTensor(Function):
    """``clamp(a, low, high)`` with ``low`` and/or ``high`` arrays (``has_low``,
    ``has_high`` say which inputs follow ``a``).

    Where low > high the result is high (min is applied last), as in PyTorch.
    Gradients (PyTorch's ``clamp_backward`` and ``clamp_backward_min_max``):

    - a: g where low <= a <= high, else 0;
    - low: g where a < low (and low < high when both are given), else 0;
    - high: g where a > high (or high < low), else 0;

    each summed back to its input's shape.  A nan in ``a`` gives nan and
    sends the gradient nowhere.
    """

    def __init__(self, has_low, has_high):
        if not (has_low or has_high):
            raise ValueError("clamp: at least one of min and max must be given, got "
                             "min=None and max=None")
        self.has_low, self.has_high = has_low, has_high

    def forward(self, a, *bounds):
        xp = get_array_module(a)
        self.dtypes = [a.dtype] + [b.dtype for b in bounds]    # each gradient's dtype
        dtype = result_type(a, *bounds)
        a = a.astype(dtype, copy=False)
        bounds = [b.astype(dtype, copy=False) for b in bounds]
        self.shapes = [a.shape] + [b.shape for b in bounds]
        self.low = bounds[0] if self.has_low else None
        self.high = bounds[-1] if self.has_high else None
        self.a = a
        out = a
        try:
            if self.low is not None:
                out = xp.maximum(out, self.low)
            if self.high is not None:
                out = xp.minimum(out, self.high)
        except ValueError:
            raise ValueError(f"clamp: shapes {', '.join(str(s) for s in self.shapes)} of "
                             "input, min and max cannot be broadcast together") from None
        # nan in a stays nan (maximum/minimum propagate it, as PyTorch's clamp)
        return xp.broadcast_to(out, np.broadcast_shapes(*self.shapes)).copy()

    def backward(self, g):
        xp = get_array_module(g)
        a, low, high = self.a, self.low, self.high
        zero = g.dtype.type(0)
        passes = True
        if low is not None:
            passes = passes & (a >= low)
        if high is not None:
            passes = passes & (a <= high)
        grads = [unbroadcast(xp.where(passes, g, zero), self.shapes[0])
                 if self.needs_input_grad[0] else None]
        if low is not None:
            to_low = a < low
            if high is not None:
                to_low = to_low & (low < high)
            grads.append(unbroadcast(xp.where(to_low, g, zero), self.shapes[1])
                         if self.needs_input_grad[1] else None)
        if high is not None:
            to_high = a > high
            if low is not None:
                to_high = to_high | (high < low)
            grads.append(unbroadcast(xp.where(to_high, g, zero), self.shapes[-1])
                         if self.needs_input_grad[-1] else None)
        return tuple(grads)
