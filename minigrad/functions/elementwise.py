"""Elementwise functions: arithmetic, exp/log, activations, maximum/minimum, where, clip.

Binary functions broadcast like NumPy; backward sums each gradient back to its
input's exact shape with :func:`unbroadcast`.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module


def _broadcast_error(name, a, b):
    return ValueError(f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                      f"broadcast together")


def _promote(a, b):
    """PyTorch's rule for an integer (or bool) array with a floating one: the
    result takes the floating dtype (NumPy would widen int64 + float32 to float64)."""
    a_float, b_float = a.dtype.kind == "f", b.dtype.kind == "f"
    if a_float and not b_float:
        b = b.astype(a.dtype)
    elif b_float and not a_float:
        a = a.astype(b.dtype)
    return a, b


class _Binary(Function):
    """Shared forward shape check for broadcasting binary ops."""

    name = "binary op"

    def forward(self, a, b):
        a, b = _promote(a, b)
        self.a_shape, self.b_shape = a.shape, b.shape
        try:
            return self.compute(a, b)
        except ValueError:
            if a.shape != b.shape:
                try:
                    np.broadcast_shapes(a.shape, b.shape)
                except ValueError:
                    raise _broadcast_error(self.name, a, b) from None
            raise


class Add(_Binary):
    name = "add"

    def compute(self, a, b):
        return a + b

    def backward(self, g):
        # BEGIN SOLUTION ch01.1
        ga = unbroadcast(g, self.a_shape) if self.needs_input_grad[0] else None
        gb = unbroadcast(g, self.b_shape) if self.needs_input_grad[1] else None
        return ga, gb
        # END SOLUTION


class Sub(_Binary):
    name = "sub"

    def compute(self, a, b):
        return a - b

    def backward(self, g):
        ga = unbroadcast(g, self.a_shape) if self.needs_input_grad[0] else None
        gb = unbroadcast(-g, self.b_shape) if self.needs_input_grad[1] else None
        return ga, gb


class Mul(_Binary):
    name = "mul"

    def compute(self, a, b):
        self.a, self.b = a, b
        return a * b

    def backward(self, g):
        # BEGIN SOLUTION ch01.2
        ga = unbroadcast(g * self.b, self.a_shape) if self.needs_input_grad[0] else None
        gb = unbroadcast(g * self.a, self.b_shape) if self.needs_input_grad[1] else None
        return ga, gb
        # END SOLUTION


class Div(_Binary):
    name = "div"

    def compute(self, a, b):
        self.a, self.b = a, b
        return a / b

    def backward(self, g):
        # BEGIN SOLUTION ch01.3
        ga = unbroadcast(g / self.b, self.a_shape) if self.needs_input_grad[0] else None
        gb = None
        if self.needs_input_grad[1]:
            gb = unbroadcast(-g * self.a / (self.b * self.b), self.b_shape)
        return ga, gb
        # END SOLUTION


class Pow(_Binary):
    """``a ** b`` with a tensor exponent.

    d/da = b·a^(b-1), taken as 0 where b == 0 (the derivative of a constant);
    d/db = a^b·log(a), taken as 0 where a == 0 and b > 0 (a^b is 0 on both
    sides there).  Negative bases give nan for d/db, as the real logarithm does.
    """
    name = "pow"

    def compute(self, a, b):
        self.a, self.b = a, b
        self.out = a ** b
        return self.out

    def backward(self, g):
        xp = get_array_module(g)
        a, b = self.a, self.b
        ga = gb = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.needs_input_grad[0]:
                d = xp.where(b == 0, 0, b * a ** (b - 1))
                ga = unbroadcast(g * d.astype(g.dtype, copy=False), self.a_shape)
            if self.needs_input_grad[1]:
                d = xp.where((a == 0) & (b > 0), 0, self.out * xp.log(a))
                gb = unbroadcast(g * d.astype(g.dtype, copy=False), self.b_shape)
        return ga, gb


class PowScalar(Function):
    """``a ** c`` for a Python number ``c``: d/da = c·a^(c-1) (0 everywhere when c == 0)."""

    def __init__(self, exponent):
        self.c = exponent

    def forward(self, a):
        self.a = a
        return a ** self.c

    def backward(self, g):
        c = self.c
        if c == 0:
            return g * 0
        if c == 1:
            return g
        if c == 2:
            return g * (2 * self.a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return g * (c * self.a ** (c - 1))


class Neg(Function):
    def forward(self, a):
        return -a

    def backward(self, g):
        return -g


class Exp(Function):
    def forward(self, a):
        self.out = get_array_module(a).exp(a)
        return self.out

    def backward(self, g):
        # BEGIN SOLUTION ch01.4
        return g * self.out
        # END SOLUTION


class Log(Function):
    """Natural logarithm; log(0) = -inf and its gradient +inf, as in the math."""

    def forward(self, a):
        self.a = a
        with np.errstate(divide="ignore", invalid="ignore"):
            return get_array_module(a).log(a)

    def backward(self, g):
        # BEGIN SOLUTION ch01.5
        with np.errstate(divide="ignore", invalid="ignore"):
            return g / self.a
        # END SOLUTION


class Sqrt(Function):
    """Square root; the gradient at 0 is +inf (1 / (2·sqrt(0)))."""

    def forward(self, a):
        self.out = get_array_module(a).sqrt(a)
        return self.out

    def backward(self, g):
        with np.errstate(divide="ignore", invalid="ignore"):
            return g / (2 * self.out)


class Abs(Function):
    """|a|; the gradient at 0 is 0 (sign(0), as in PyTorch)."""

    def forward(self, a):
        self.a = a
        return get_array_module(a).abs(a)

    def backward(self, g):
        return g * get_array_module(g).sign(self.a)


class Tanh(Function):
    def forward(self, a):
        self.out = get_array_module(a).tanh(a)
        return self.out

    def backward(self, g):
        # BEGIN SOLUTION ch01.6
        return g * (1 - self.out * self.out)
        # END SOLUTION


def stable_sigmoid(a):
    """1 / (1 + exp(-a)) without overflow: exp is only taken of -|a|."""
    # BEGIN SOLUTION ch02.2
    xp = get_array_module(a)
    with np.errstate(under="ignore"):      # exp(-1000) = 0 is the right limit
        e = xp.exp(-xp.abs(a))
        return xp.where(a >= 0, 1 / (1 + e), e / (1 + e))
    # END SOLUTION


class Sigmoid(Function):
    def forward(self, a):
        self.out = stable_sigmoid(a)
        return self.out

    def backward(self, g):
        with np.errstate(under="ignore"):  # tiny sigmoid times g may underflow to 0
            return g * self.out * (1 - self.out)


class ReLU(Function):
    """max(a, 0); the gradient at 0 is 0, as in PyTorch."""

    def forward(self, a):
        self.mask = a > 0
        return get_array_module(a).maximum(a, 0)     # nan stays nan; -inf gives 0

    def backward(self, g):
        # BEGIN SOLUTION ch02.1
        return g * self.mask
        # END SOLUTION


class Maximum(_Binary):
    """Elementwise maximum; where a == b the gradient is split evenly (½ each)."""
    name = "maximum"

    def compute(self, a, b):
        self.a, self.b = a, b
        return get_array_module(a).maximum(a, b)

    def backward(self, g):
        return _split_by_winner(g, self.a > self.b, self.a == self.b,
                                self.a_shape, self.b_shape, self.needs_input_grad)


class Minimum(_Binary):
    """Elementwise minimum; where a == b the gradient is split evenly (½ each)."""
    name = "minimum"

    def compute(self, a, b):
        self.a, self.b = a, b
        return get_array_module(a).minimum(a, b)

    def backward(self, g):
        return _split_by_winner(g, self.a < self.b, self.a == self.b,
                                self.a_shape, self.b_shape, self.needs_input_grad)


def _split_by_winner(g, a_wins, tie, a_shape, b_shape, needs):
    wa = a_wins + 0.5 * tie
    ga = unbroadcast(g * wa.astype(g.dtype, copy=False), a_shape) if needs[0] else None
    gb = unbroadcast(g * (1 - wa).astype(g.dtype, copy=False), b_shape) if needs[1] else None
    return ga, gb


class Where(Function):
    """``where(cond, a, b)``; ``cond`` is a boolean array (no gradient)."""

    def __init__(self, condition):
        self.cond = condition

    def forward(self, a, b):
        xp = get_array_module(a)
        try:
            out = xp.where(self.cond, a, b)
        except ValueError:
            raise ValueError(f"where: condition {tuple(self.cond.shape)}, x "
                             f"{tuple(a.shape)} and y {tuple(b.shape)} cannot be "
                             "broadcast together") from None
        self.a_shape, self.b_shape, self.out_shape = a.shape, b.shape, out.shape
        return out

    def backward(self, g):
        xp = get_array_module(g)
        zero = xp.zeros((), dtype=g.dtype)
        ga = unbroadcast(xp.where(self.cond, g, zero), self.a_shape) \
            if self.needs_input_grad[0] else None
        gb = unbroadcast(xp.where(self.cond, zero, g), self.b_shape) \
            if self.needs_input_grad[1] else None
        return ga, gb


class Clip(Function):
    """Clamp into [low, high] (either may be None); the gradient passes where
    low <= a <= high, as in PyTorch's ``clamp``."""

    def __init__(self, low, high):
        self.low, self.high = low, high

    def forward(self, a):
        self.a = a
        return get_array_module(a).clip(a, self.low, self.high)

    def backward(self, g):
        mask = True
        if self.low is not None:
            mask = self.a >= self.low
        if self.high is not None:
            mask = mask & (self.a <= self.high)
        return g * mask
