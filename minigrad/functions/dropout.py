"""Dropout as a Function: multiply by a precomputed scaled mask.

The mask is drawn outside (see :mod:`minigrad.nn.dropout` for where the
random numbers come from); here it is only applied.  Inverted dropout
(Srivastava et al., JMLR 15, 2014, with the 1/(1-p) scaling at training time
so that evaluation is the identity): y = x · m / (1 - p), m ∈ {0, 1}.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from .elementwise import blocked_to_zero


class DropoutFunction(Function):
    """y = x · scaled_mask, where ``scaled_mask`` (the shape of x, the dtype of x)
    holds 0 for dropped entries and 1/(1-p) for kept ones.  Backward: g · scaled_mask
    at kept entries, exactly 0 at dropped ones."""

    def __init__(self, scaled_mask):
        self.scaled_mask = scaled_mask

    def forward(self, x):
        if self.scaled_mask.shape != x.shape:
            raise ValueError(f"dropout: mask of shape {tuple(self.scaled_mask.shape)} "
                             f"does not match input of shape {tuple(x.shape)}")
        return x * self.scaled_mask

    def backward(self, g):
        # A dropped entry's gradient is exactly 0, also for an inf or nan upstream
        # gradient (PyTorch multiplies by the mask and gives nan there).
        with np.errstate(invalid="ignore"):
            product = g * self.scaled_mask
        return blocked_to_zero(product, lambda: self.scaled_mask != 0)


def scaled_mask(uniforms, p, dtype):
    """From uniforms u in [0, 1): keep where u >= p (probability 1 - p), scaled
    by 1/(1-p); returns an array of ``dtype``."""
    # BEGIN SOLUTION ch02.8
    keep = uniforms >= p
    return keep.astype(dtype) * (1.0 / (1.0 - p))
    # END SOLUTION
