"""Elementwise functions whose value or gradient needs its own formula:
expm1, log1p, sinc, logit (unary); xlogy, hypot, fmax, fmin (binary);
nan_to_num.

Each computes its value with NumPy's accurate routine (``expm1`` and
``log1p`` keep their precision near 0, where exp(x) - 1 and log(1 + x)
lose it) and its gradient by PyTorch's formula (``derivatives.yaml``),
including PyTorch's values where the formula divides by zero.  Integer
or bool inputs enter in the default floating dtype, as in PyTorch.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module
from ..dtypes import to_floating
from .elementwise import _Binary, _Unary


class Expm1(_Unary):
    """exp(a) - 1, accurate near 0; d/da = exp(a) = y + 1."""
    def f(self, xp, a):
        return xp.expm1(a)

    def derivative(self, xp, a, y):
        return y + 1


class Log1p(_Unary):
    """log(1 + a), accurate near 0; d/da = 1/(1 + a)."""
    def f(self, xp, a):
        return xp.log1p(a)

    def derivative(self, xp, a, y):
        return 1 / (1 + a)


class Sinc(_Unary):
    """sin(πa)/(πa), 1 at a = 0 (the normalized sinc, ``torch.sinc``);
    d/da = (πa·cos(πa) - sin(πa)) / (πa²), 0 at a = 0."""
    def f(self, xp, a):
        return xp.sinc(a)

    def derivative(self, xp, a, y):
        pa = np.pi * a
        d = (pa * xp.cos(pa) - xp.sin(pa)) / (pa * a)
        return xp.where(a == 0, 0, d)


class Logit(_Unary):
    """log(a/(1 - a)), the inverse of the sigmoid (``torch.logit``).  With
    ``eps``, a is first clamped to [eps, 1 - eps] and the gradient is 0
    outside it; without, d/da = 1/(a(1 - a)), nan outside [0, 1]."""

    def __init__(self, eps=None):
        super().__init__()
        self.eps = eps

    def f(self, xp, a):
        if self.eps is not None:
            a = xp.clip(a, self.eps, 1 - self.eps)
        return xp.log(a / (1 - a))

    def derivative(self, xp, a, y):
        d = 1 / (a * (1 - a))
        if self.eps is not None:
            return xp.where((a < self.eps) | (a > 1 - self.eps), 0, d)
        return xp.where((a < 0) | (a > 1), np.nan, d)


class Xlogy(_Binary):
    """a·log(b), 0 where a = 0 (unless b is nan) (``torch.xlogy``): the term
    p·log q of an entropy, which must be 0 at p = 0 even where q = 0.
    d/da = log(b) (0 where a = 0 and b <= 0), d/db = a/b."""
    name = "xlogy"
    floating = True

    def compute(self, a, b):
        xp = get_array_module(a)
        self.a, self.b = to_floating(a), to_floating(b)
        with np.errstate(divide="ignore", invalid="ignore"):
            out = self.a * xp.log(self.b)
        return xp.where((self.a == 0) & ~xp.isnan(self.b), 0, out).astype(out.dtype)

    def backward(self, g):
        xp = get_array_module(g)
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                d = xp.where(g == 0, 0, g * xp.log(self.b))
                d = xp.where((self.a == 0) & (self.b <= 0), 0, d)
                ga = unbroadcast(d.astype(g.dtype, copy=False), self.a_shape)
            if self.needs_input_grad[1]:
                gb = unbroadcast(g * self.a / self.b, self.b_shape)
        return ga, gb


class Hypot(_Binary):
    """√(a² + b²) without overflow (``torch.hypot``); d/da = a/y, d/db = b/y
    (nan at the origin, as in PyTorch)."""
    name = "hypot"
    floating = True

    def compute(self, a, b):
        self.a, self.b = to_floating(a), to_floating(b)
        self.out = get_array_module(a).hypot(self.a, self.b)
        return self.out

    def backward(self, g):
        with np.errstate(divide="ignore", invalid="ignore"):
            ga = unbroadcast(g * self.a / self.out, self.a_shape) \
                if self.needs_input_grad[0] else None
            gb = unbroadcast(g * self.b / self.out, self.b_shape) \
                if self.needs_input_grad[1] else None
        return ga, gb


class _NanIgnoringExtreme(_Binary):
    """fmax/fmin: the larger (smaller) of a and b, the other one where one is
    nan.  The gradient goes to a where a wins or ties or b is nan, else to b
    (PyTorch's rule: a tie is not shared, unlike ``maximum``)."""

    def compute(self, a, b):
        xp = get_array_module(a)
        self.a, self.b = a, b
        return self.pick(xp, a, b)

    def backward(self, g):
        xp = get_array_module(g)
        to_a = self.a_wins(self.a, self.b) | xp.isnan(self.b)
        ga = unbroadcast(xp.where(to_a, g, 0), self.a_shape) \
            if self.needs_input_grad[0] else None
        gb = unbroadcast(xp.where(to_a, 0, g), self.b_shape) \
            if self.needs_input_grad[1] else None
        return ga, gb


class Fmax(_NanIgnoringExtreme):
    name = "fmax"

    def pick(self, xp, a, b):
        return xp.fmax(a, b)

    def a_wins(self, a, b):
        return a >= b


class Fmin(_NanIgnoringExtreme):
    name = "fmin"

    def pick(self, xp, a, b):
        return xp.fmin(a, b)

    def a_wins(self, a, b):
        return a <= b


class NanToNum(Function):
    """nan → ``nan``, +inf → ``posinf``, -inf → ``neginf`` (the dtype's
    largest and smallest finite values when None) (``torch.nan_to_num``);
    the gradient passes where the input is finite and is 0 elsewhere."""

    def __init__(self, nan=0.0, posinf=None, neginf=None):
        super().__init__()
        self.nan, self.posinf, self.neginf = nan, posinf, neginf

    def forward(self, a):
        xp = get_array_module(a)
        self.finite = xp.isfinite(a)
        if a.dtype.kind not in "fc":
            return a.copy()
        return xp.nan_to_num(a, nan=self.nan, posinf=self.posinf, neginf=self.neginf)

    def backward(self, g):
        return get_array_module(g).where(self.finite, g, 0)
