"""softmax and log_softmax along one axis, stable for any finite logits and for -inf.

Both subtract the maximum first (Goodfellow et al., *Deep Learning*, §4.1), so
logits of ±1e8 give exact results, and a -inf logit gets probability 0 (and a
finite gradient) as long as its row has a finite entry.
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module
from ..dtypes import to_floating
from .reduction import normalize_axis


def _shifted(a, axis):
    """a - max(a): every exponent is <= 0, and the largest is exactly 0.

    So the sum of exponentials lies in [1, n] whenever the row has a finite
    maximum: no overflow, and no log(0).  A row whose entries are all -inf has
    no softmax; it gives nan, as in PyTorch.  An empty array (a length-0
    axis, or none of its rows) has no maximum to subtract and is returned as
    it is: its softmax is empty too, as in PyTorch.
    """
    if a.size == 0:
        return a
    return a - a.max(axis=axis, keepdims=True)


def log_softmax_array(a, axis=-1):
    """log_softmax on a raw array: (a - max) - log(sum(exp(a - max)))."""
    # BEGIN SOLUTION ch02.3
    xp = get_array_module(a)
    if a.size == 0:                 # nothing to normalize (and no log(0) warning)
        return a.copy()
    z = _shifted(a, axis)
    return z - xp.log(xp.exp(z).sum(axis=axis, keepdims=True))
    # END SOLUTION


class Softmax(Function):
    """softmax(a)_i = exp(a_i) / Σ_j exp(a_j) along ``axis``.
    Backward: dA = s ⊙ (g - Σ g ⊙ s)."""

    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, a):
        normalize_axis(self.axis, a.ndim, "softmax")
        a = to_floating(a)          # integers: the default float dtype
        xp = get_array_module(a)
        e = xp.exp(_shifted(a, self.axis))
        self.out = e / e.sum(axis=self.axis, keepdims=True)
        return self.out

    def backward(self, g):
        # BEGIN SOLUTION ch02.4
        s = self.out
        return s * (g - (g * s).sum(axis=self.axis, keepdims=True))
        # END SOLUTION


class LogSoftmax(Function):
    """log_softmax(a) = a - logsumexp(a) along ``axis``.
    Backward: dA = g - softmax(a) · Σ g."""

    def __init__(self, axis=-1):
        self.axis = axis

    def forward(self, a):
        normalize_axis(self.axis, a.ndim, "log_softmax")
        self.out = log_softmax_array(to_floating(a), self.axis)
        return self.out

    def backward(self, g):
        xp = get_array_module(g)
        return g - xp.exp(self.out) * g.sum(axis=self.axis, keepdims=True)
