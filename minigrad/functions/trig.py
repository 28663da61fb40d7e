"""More elementwise math: tan, the inverse and hyperbolic trigonometric
functions, and the binary atan2, copysign, fmod and logaddexp.

Each unary function is a :class:`~minigrad.functions.elementwise._Unary`:
``f`` computes y = f(a), ``derivative`` gives dy/da (it sees a and y), and
integer or bool inputs enter in the default floating dtype, as in PyTorch.
Outside a function's real domain the value is nan (asin(2), acosh(0.5),
log of a negative number), as in NumPy and PyTorch; so is the derivative.
"""
from __future__ import annotations

import numpy as np

from ..autograd import unbroadcast
from ..backend import get_array_module
from ..dtypes import to_floating
from .elementwise import _Binary, _Unary


class Tan(_Unary):
    """tan(a); d/da = 1 + tan²(a) = 1 + y²."""
    def f(self, xp, a):
        return xp.tan(a)

    def derivative(self, xp, a, y):
        return 1 + y * y


class Asin(_Unary):
    """arcsin(a) for a in [-1, 1]; d/da = 1/√(1 - a²) (inf at ±1)."""
    def f(self, xp, a):
        return xp.arcsin(a)

    def derivative(self, xp, a, y):
        return 1 / xp.sqrt(1 - a * a)


class Acos(_Unary):
    """arccos(a) for a in [-1, 1]; d/da = -1/√(1 - a²)."""
    def f(self, xp, a):
        return xp.arccos(a)

    def derivative(self, xp, a, y):
        return -1 / xp.sqrt(1 - a * a)


class Atan(_Unary):
    """arctan(a); d/da = 1/(1 + a²)."""
    def f(self, xp, a):
        return xp.arctan(a)

    def derivative(self, xp, a, y):
        return 1 / (1 + a * a)


class Sinh(_Unary):
    """sinh(a); d/da = cosh(a)."""
    def f(self, xp, a):
        return xp.sinh(a)

    def derivative(self, xp, a, y):
        return xp.cosh(a)


class Cosh(_Unary):
    """cosh(a); d/da = sinh(a)."""
    def f(self, xp, a):
        return xp.cosh(a)

    def derivative(self, xp, a, y):
        return xp.sinh(a)


class Asinh(_Unary):
    """arsinh(a); d/da = 1/√(a² + 1)."""
    def f(self, xp, a):
        return xp.arcsinh(a)

    def derivative(self, xp, a, y):
        return 1 / xp.sqrt(a * a + 1)


class Acosh(_Unary):
    """arcosh(a) for a >= 1; d/da = 1/√((a - 1)(a + 1)) (inf at 1)."""
    def f(self, xp, a):
        return xp.arccosh(a)

    def derivative(self, xp, a, y):
        return 1 / xp.sqrt((a - 1) * (a + 1))


class Atanh(_Unary):
    """artanh(a) for a in [-1, 1]; d/da = 1/(1 - a²) (±inf at ±1)."""
    def f(self, xp, a):
        return xp.arctanh(a)

    def derivative(self, xp, a, y):
        return 1 / (1 - a * a)


# ------------------------------------------------------------------ binary
class Atan2(_Binary):
    """atan2(a, b): the angle of the point (b, a), in (-π, π] (``torch.atan2``,
    a the y coordinate).  d/da = b/(a² + b²), d/db = -a/(a² + b²); at the
    origin, where the angle jumps, both are taken as 0, as in PyTorch."""
    name = "atan2"
    floating = True

    def compute(self, a, b):
        self.a, self.b = to_floating(a), to_floating(b)
        return get_array_module(a).arctan2(self.a, self.b)

    def backward(self, g):
        xp = get_array_module(g)
        r2 = self.a * self.a + self.b * self.b
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = xp.where(r2 == 0, 0, 1 / xp.where(r2 == 0, 1, r2))    # 0 at the origin
        ga = unbroadcast(g * self.b * inv, self.a_shape) if self.needs_input_grad[0] else None
        gb = unbroadcast(-g * self.a * inv, self.b_shape) if self.needs_input_grad[1] else None
        return ga, gb


class Copysign(_Binary):
    """|a| with the sign of b (``torch.copysign``; -0.0 counts as negative).
    Always floating.  d/da = y/a (±1), 0 at a = 0 (PyTorch's choice);
    d/db = 0 (the sign is piecewise constant)."""
    name = "copysign"
    floating = True

    def compute(self, a, b):
        a, b = to_floating(a), to_floating(b)
        self.a, self.out = a, get_array_module(a).copysign(a, b)
        return self.out

    def backward(self, g):
        xp = get_array_module(g)
        ga = gb = None
        if self.needs_input_grad[0]:
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = xp.where(self.a == 0, 0, self.out / xp.where(self.a == 0, 1, self.a))
            ga = unbroadcast(g * ratio.astype(g.dtype, copy=False), self.a_shape)
        if self.needs_input_grad[1]:
            gb = unbroadcast(xp.zeros_like(g), self.b_shape)
        return ga, gb


class Fmod(_Binary):
    """a - trunc(a/b)·b: the remainder with the sign of a (C's ``fmod``,
    ``torch.fmod``; :class:`~minigrad.functions.elementwise.Remainder` has the
    sign of b).  d/da = 1, d/db = -trunc(a/b).  Integers stay integers;
    integer division by 0 raises ZeroDivisionError, as in PyTorch."""
    name = "fmod"

    def compute(self, a, b):
        xp = get_array_module(a)
        if a.dtype.kind in "iub" and bool((b == 0).any()):
            raise ZeroDivisionError("fmod: integer division by zero")
        self.a, self.b = a, b
        with np.errstate(divide="ignore", invalid="ignore"):
            return xp.fmod(a, b)

    def backward(self, g):
        xp = get_array_module(g)
        ga = unbroadcast(g, self.a_shape) if self.needs_input_grad[0] else None
        gb = None
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = unbroadcast(-g * xp.trunc(self.a / self.b), self.b_shape)
        return ga, gb


class LogAddExp(_Binary):
    """log(exp(a) + exp(b)), without overflow: max(a, b) + log1p(exp(-|a - b|))
    (``torch.logaddexp``).  d/da = 1/(1 + exp(b - a)) = σ(a - b), d/db = σ(b - a).
    Integer tensors raise TypeError, as in PyTorch."""
    name = "logaddexp"

    def compute(self, a, b):
        if a.dtype.kind not in "fc":
            raise TypeError(f"logaddexp: expected floating tensors, got {a.dtype}")
        self.a, self.b = a, b
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            return get_array_module(a).logaddexp(a, b)

    def backward(self, g):
        from .elementwise import stable_sigmoid  # noqa: PLC0415
        with np.errstate(invalid="ignore", over="ignore", under="ignore"):
            d = self.a - self.b
            ga = unbroadcast(g * stable_sigmoid(d), self.a_shape) \
                if self.needs_input_grad[0] else None
            gb = unbroadcast(g * stable_sigmoid(-d), self.b_shape) \
                if self.needs_input_grad[1] else None
        return ga, gb
