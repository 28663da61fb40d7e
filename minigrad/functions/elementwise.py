"""Elementwise functions: arithmetic, exp/log, activations, maximum/minimum, where, clip.

Binary functions broadcast like NumPy; backward sums each gradient back to its
input's exact shape with :func:`unbroadcast`.
"""
from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..autograd import Function, unbroadcast
from ..backend import get_array_module
from ..dtypes import promote, to_floating


def _broadcast_error(name, a, b):
    return ValueError(f"{name}: shapes {tuple(a.shape)} and {tuple(b.shape)} cannot be "
                      f"broadcast together")


def _promote(a, b):
    """Both arrays in PyTorch's result type (:func:`minigrad.dtypes.promote`):
    int + float32 is float32, float32 + a 0-d float64 is float32."""
    if a.dtype == b.dtype:
        return a, b
    return promote(a, b)


class _Binary(Function):
    """Shared forward shape check for broadcasting binary ops."""

    name = "binary op"

    floating = False     # True division: each integer operand becomes float first

    def forward(self, a, b):
        if self.floating and a.dtype.kind in "biu" and b.dtype.kind in "biu":
            a, b = to_floating(a), to_floating(b)   # uint8 / int8(-4) is -0.75, not 3/252
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

    def arrays_read(self):
        """What backward reads, for the in-place check: b for a's gradient, a for b's."""
        needs = self.needs_input_grad
        return [v for v, need in ((self.b, needs[0]), (self.a, needs[1])) if need]

    def backward(self, g):
        # BEGIN SOLUTION ch01.2
        ga = unbroadcast(g * self.b, self.a_shape) if self.needs_input_grad[0] else None
        gb = unbroadcast(g * self.a, self.b_shape) if self.needs_input_grad[1] else None
        return ga, gb
        # END SOLUTION


class Div(_Binary):
    name = "div"
    floating = True

    def compute(self, a, b):
        a, b = to_floating(a), to_floating(b)    # int / int is the default float dtype
        self.a, self.b = a, b
        return a / b

    def arrays_read(self):
        """What backward reads: b always, a only for b's gradient (-g·a/b²)."""
        return [self.b, self.a] if self.needs_input_grad[1] else [self.b]

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
    d/db = a^b·log(a), taken as 0 where a == 0 and b >= 0 (PyTorch's
    convention: 0 at 0**0, where the limit does not exist, and 0 for b > 0,
    where a^b is 0 on both sides).  Negative bases give nan for d/db, as the
    real logarithm does; 0**negative is inf with d/da = d/db = -inf.
    """
    name = "pow"

    def compute(self, a, b):
        self.a, self.b = a, b
        if a.dtype.kind == "b":            # bool ** bool is bool (PyTorch: t ** True)
            self.out = a | ~b              # NumPy would give int8
            return self.out
        with np.errstate(divide="ignore", invalid="ignore"):    # 0**-1 = inf, (-2)**0.5 = nan
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
                d = xp.where((a == 0) & (b >= 0), 0, self.out * xp.log(a))
                gb = unbroadcast(g * d.astype(g.dtype, copy=False), self.b_shape)
        return ga, gb


class PowScalar(Function):
    """``a ** c`` for a Python number ``c``: d/da = c·a^(c-1) (0 everywhere when c == 0)."""

    def __init__(self, exponent):
        self.c = exponent

    def forward(self, a):
        if isinstance(self.c, float) and a.dtype.kind not in "fc":
            a = to_floating(a)             # int ** 0.5 is the default float dtype
        elif a.dtype.kind == "b":          # PyTorch: bool ** 2 is int64 (NumPy: int8)
            a = a.astype(np.int64)
        self.a = a
        with np.errstate(divide="ignore", invalid="ignore"):    # 0**-1 = inf, (-2)**0.5 = nan
            return a ** self.c

    def backward(self, g):
        c = self.c
        if c == 0:
            return get_array_module(g).zeros_like(g)   # 0, even for an inf gradient
        if c == 1:
            return g
        with np.errstate(divide="ignore", invalid="ignore"):
            if c == 2:
                return g * (2 * self.a)
            return g * (c * self.a ** (c - 1))


class Neg(Function):
    def forward(self, a):
        return -a

    def backward(self, g):
        return -g


class Exp(Function):
    def forward(self, a):
        self.out = get_array_module(a).exp(to_floating(a))
        return self.out

    def backward(self, g):
        # BEGIN SOLUTION ch01.4
        return g * self.out
        # END SOLUTION


class Log(Function):
    """Natural logarithm; log(0) = -inf and its gradient +inf, as in the math."""

    def forward(self, a):
        a = to_floating(a)
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
        self.out = get_array_module(a).sqrt(to_floating(a))
        return self.out

    def backward(self, g):
        with np.errstate(divide="ignore", invalid="ignore"):
            return g / (2 * self.out)


def blocked_to_zero(product, passes):
    """``product`` with exact zeros where ``passes`` is False.

    ``product`` is an upstream gradient times a factor that is 0 where the
    gradient is blocked (a 0/1 mask, dropout's scaled mask, a max's share),
    so it is already right unless the gradient held inf or nan there
    (inf · 0 = nan): only then is it redone with ``where``.  ``passes`` is a
    boolean array broadcastable to ``product``, or a callable returning one
    (built only when needed).

    Why not always ``where``: for a random mask (ReLU's, dropout's) NumPy's
    ``where`` is branchy and up to 50 times slower than a multiply (NumPy
    2.4, 256×1024 float32: 2 ms against 40 µs); a finiteness check costs
    a third of a multiply.  CuPy's ``where`` is one elementwise kernel, and a
    check would synchronize, so on the GPU it is always ``where``.
    """
    xp = get_array_module(product)
    if xp is np and np.isfinite(product).all():
        return product
    if callable(passes):
        passes = passes()
    with np.errstate(invalid="ignore"):
        return xp.where(passes, product, product.dtype.type(0))


_DOT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def all_finite(a) -> bool:
    """Whether no entry of the NumPy array ``a`` is inf or nan (True when empty),
    or False; False is always safe for the callers, who then take their exact path.

    For float32 and float64 it reads ``a`` once, with no temporary: a·a (one
    BLAS dot) is a sum of non-negative squares, so it is inf or nan whenever an
    entry is, and finite otherwise unless the squares overflow (|a| beyond about
    1e19 in float32), where it answers False.  What it saves against
    ``np.isfinite(a).all()``: the boolean temporary and the Python wrapper of
    ``.all()``, about 0.6 µs on a (32, 128) gradient and a quarter at (256, 1024).
    """
    if a.dtype in _DOT_DTYPES:
        flat = a.reshape(-1)
        return math.isfinite(np.dot(flat, flat))
    return bool(np.isfinite(a).all())


def select(mask, g):
    """``g`` where ``mask`` is True, else exactly 0, in ``g``'s dtype.

    The backward of every op whose derivative is 0 on part of its domain uses
    this (or :func:`blocked_to_zero`) instead of ``g * mask`` alone: a
    gradient the mask blocks is exactly 0 even when the upstream gradient is
    inf or nan (``inf * 0`` would be nan).  PyTorch's ``relu``, ``clamp``,
    ``maximum`` and ``max`` select the same way.

    A finite ``g`` times the mask is already exact, and on the CPU a multiply
    is much cheaper than ``where`` (see :func:`blocked_to_zero`); otherwise,
    and always on the GPU (one kernel, no synchronizing check), it is ``where``.
    """
    xp = get_array_module(g)
    if xp is np and all_finite(g):          # the common case: a multiply is exact
        return g * mask
    return xp.where(mask, g, g.dtype.type(0))


_SELECT_WHERE_NONZERO = backend.elementwise_kernel(
    "select_where_nonzero", "T a, T g", "T grad", "grad = a != (T)0 ? g : (T)0;")


def select_where_nonzero(a, g):
    """``select(a != 0, g)``: ``g`` where ``a`` is not 0 (nan counts as not 0),
    else exactly 0, without a boolean mask array.

    On the CPU, for a finite ``g``, the 0/1 mask is written straight into the
    result's memory and multiplied by ``g`` there, so the only new array is
    the result: a ReLU's backward then peaks at the same memory as PyTorch's
    one-kernel ``threshold_backward`` (a mask would add a quarter of an
    activation in float32).  On the GPU, for float32 and float64 of one
    dtype, it is one fused kernel; otherwise :func:`select`'s ``where``.
    """
    xp = get_array_module(g)
    if xp is not np and g.dtype in backend.FUSED_DTYPES and a.dtype == g.dtype:
        return _SELECT_WHERE_NONZERO(a, g)
    if xp is np and all_finite(g):
        grad = np.not_equal(a, 0, out=np.empty(g.shape, g.dtype))   # 1.0 where a != 0, else 0
        grad *= g
        return grad
    return xp.where(a != 0, g, g.dtype.type(0))


class Abs(Function):
    """|a|; the gradient is g · sign(a), 0 at a = 0 (the subgradient PyTorch
    picks).  It multiplies, as PyTorch's ``abs`` does: an inf or nan upstream
    gradient at a = 0 gives nan there (0 · inf)."""

    def forward(self, a):
        self.a = a
        return get_array_module(a).abs(a)

    def backward(self, g):
        xp = get_array_module(g)
        sign = xp.sign(self.a)
        if sign.dtype.kind == "f":   # the gradient at nan is 0, as PyTorch's sgn(nan) = 0
            sign = xp.where(xp.isnan(sign), 0, sign).astype(sign.dtype, copy=False)
        with np.errstate(invalid="ignore"):
            return g * sign


class Tanh(Function):
    def forward(self, a):
        self.out = get_array_module(a).tanh(to_floating(a))
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
    """sigmoid(a) = 1 / (1 + exp(-a)), without overflow (:func:`stable_sigmoid`).
    Backward: dA = g · s · (1 - s).

    Tiny results: below float32's smallest normal number (``finfo(float32).tiny``
    ≈ 1.18e-38, reached near a = -87), the CPU returns the subnormal value (for
    a = -100, 3.78e-44) and the GPU may return 0 (CUDA flushes float32
    subnormals to zero).  minigrad promises an absolute error of at most
    ``tiny`` there on every device (see :mod:`minigrad.backend`).
    """

    def forward(self, a):
        self.out = stable_sigmoid(to_floating(a))
        return self.out

    def backward(self, g):
        with np.errstate(under="ignore"):  # tiny sigmoid times g may underflow to 0
            return g * self.out * (1 - self.out)


class ReLU(Function):
    """max(a, 0); the gradient is 0 where the output is 0 (a <= 0, and also
    for an inf or nan upstream gradient there), and passes elsewhere, nan
    inputs included, as PyTorch's ``threshold_backward``.

    It saves its output, not a mask: the next layer (a Linear) saves the same
    array as its input, so ReLU costs no memory of its own, as in PyTorch.
    The output is 0 exactly where the gradient is blocked (it is positive or
    nan elsewhere), so ``out != 0`` is the mask.  On the GPU, for float32 and
    float64, backward is one fused kernel (:func:`select_where_nonzero`).
    """

    def forward(self, a):
        self.out = get_array_module(a).maximum(a, 0)     # nan stays nan; -inf gives 0
        return self.out

    def backward(self, g):
        # BEGIN SOLUTION ch02.1
        return select_where_nonzero(self.out, g)
        # END SOLUTION



class Maximum(_Binary):
    """Elementwise maximum; where a == b the gradient is split evenly (½ each).

    The loser gets exactly 0 (also for an inf or nan upstream gradient); where
    either value is nan both get the gradient, as in PyTorch.
    """
    name = "maximum"

    def compute(self, a, b):
        self.a, self.b = a, b
        return get_array_module(a).maximum(a, b)

    def backward(self, g):
        return _split_by_winner(g, self.a < self.b, self.a > self.b, self.a == self.b,
                                self.a_shape, self.b_shape, self.needs_input_grad)


class Minimum(_Binary):
    """Elementwise minimum; where a == b the gradient is split evenly (½ each);
    the loser gets exactly 0 (see :class:`Maximum`)."""
    name = "minimum"

    def compute(self, a, b):
        self.a, self.b = a, b
        return get_array_module(a).minimum(a, b)

    def backward(self, g):
        return _split_by_winner(g, self.a > self.b, self.a < self.b, self.a == self.b,
                                self.a_shape, self.b_shape, self.needs_input_grad)


def _split_by_winner(g, a_loses, b_loses, tie, a_shape, b_shape, needs):
    """PyTorch's rule: the loser gets 0, a tie ½ each, anything else (nan) all of g."""
    dt = g.dtype
    half_tie = tie.astype(dt) * dt.type(0.5)
    ga = gb = None
    with np.errstate(invalid="ignore"):
        if needs[0]:
            wa = (~a_loses).astype(dt)
            wa -= half_tie
            ga = unbroadcast(blocked_to_zero(g * wa, lambda: ~a_loses), a_shape)
        if needs[1]:
            wb = (~b_loses).astype(dt)
            wb -= half_tie
            gb = unbroadcast(blocked_to_zero(g * wb, lambda: ~b_loses), b_shape)
    return ga, gb


class Where(Function):
    """``where(cond, a, b)``; ``cond`` is a boolean array (no gradient)."""

    def __init__(self, condition):
        self.cond = condition

    def forward(self, a, b):
        xp = get_array_module(a)
        a, b = _promote(a, b)
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
        if low is None and high is None:
            raise ValueError("clamp: at least one of min and max must be given, got "
                             "min=None and max=None")
        self.low, self.high = low, high

    def forward(self, a):
        if a.dtype.kind not in "fc" and any(isinstance(v, float) for v in (self.low, self.high)):
            a = to_floating(a)             # int.clip(0.5) is the default float dtype
        self.a = a
        return get_array_module(a).clip(a, self.low, self.high)

    def backward(self, g):
        if self.low is None and self.high is None:
            return g
        mask = True
        if self.low is not None:
            mask = self.a >= self.low
        if self.high is not None:
            mask = mask & (self.a <= self.high)
        return select(mask, g)     # 0 outside, even for an inf or nan gradient


# ------------------------------------------------------- more elementwise math
class Clone(Function):
    """A copy of ``a``; the gradient passes unchanged."""

    def forward(self, a):
        return a.copy()

    def backward(self, g):
        return g


class _Unary(Function):
    """y = f(a) on floating values (integers enter in the default float dtype);
    backward multiplies g by ``derivative`` (which sees a and y)."""

    def forward(self, a):
        self.a = to_floating(a)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            self.out = self.f(get_array_module(a), self.a)
        return self.out

    def backward(self, g):
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return g * self.derivative(get_array_module(g), self.a, self.out)


class Sin(_Unary):
    """sin(a); d/da = cos(a)."""
    def f(self, xp, a):
        return xp.sin(a)

    def derivative(self, xp, a, y):
        return xp.cos(a)


class Cos(_Unary):
    """cos(a); d/da = -sin(a)."""
    def f(self, xp, a):
        return xp.cos(a)

    def derivative(self, xp, a, y):
        return -xp.sin(a)


class Rsqrt(_Unary):
    """1/√a; d/da = -½·a^(-3/2) = -½·y³."""
    def f(self, xp, a):
        return 1 / xp.sqrt(a)

    def derivative(self, xp, a, y):
        return -0.5 * y * y * y


class Log2(_Unary):
    """log₂(a); d/da = 1 / (a·ln 2)."""
    def f(self, xp, a):
        return xp.log2(a)

    def derivative(self, xp, a, y):
        return 1 / (a * np.log(2.0))


class Log10(_Unary):
    """log₁₀(a); d/da = 1 / (a·ln 10)."""
    def f(self, xp, a):
        return xp.log10(a)

    def derivative(self, xp, a, y):
        return 1 / (a * np.log(10.0))


class Exp2(_Unary):
    """2^a; d/da = 2^a·ln 2."""
    def f(self, xp, a):
        return xp.exp2(a)

    def derivative(self, xp, a, y):
        return y * np.log(2.0)


class Rounding(Function):
    """floor, ceil, round (half to even, as PyTorch and NumPy), trunc, sign:
    piecewise constant, so the gradient is 0 everywhere (PyTorch's choice;
    at the jumps there is none).  Integers pass through unchanged."""

    def __init__(self, how, decimals=0):
        self.how, self.decimals = how, decimals

    def forward(self, a):
        xp = get_array_module(a)
        if self.how == "sign":   # sign(nan) is 0, as in PyTorch (NumPy: nan)
            out = xp.sign(a)
            return xp.where(xp.isnan(out), 0, out).astype(out.dtype) if a.dtype.kind == "f" \
                else out
        if a.dtype.kind in "iub":
            return a.copy()
        if self.how == "round":
            return xp.round(a, self.decimals)
        return getattr(xp, self.how)(a)

    def backward(self, g):
        return get_array_module(g).zeros_like(g)


class Remainder(_Binary):
    """a % b with the sign of b (Python's and PyTorch's ``remainder``):
    a - floor(a/b)·b.  d/da = 1, d/db = -floor(a/b), the floor division as
    computed (``floor_divide``: -0.25 // -0.001 is 249, though
    floor(-0.25 / -0.001) rounds to 250), as PyTorch."""
    name = "remainder"

    def compute(self, a, b):
        self.a, self.b = a, b
        with np.errstate(divide="ignore", invalid="ignore"):
            return get_array_module(a).mod(a, b)

    def backward(self, g):
        xp = get_array_module(g)
        ga = unbroadcast(g, self.a_shape) if self.needs_input_grad[0] else None
        gb = None
        if self.needs_input_grad[1]:
            with np.errstate(divide="ignore", invalid="ignore"):
                gb = unbroadcast(-g * xp.floor_divide(self.a, self.b), self.b_shape)
        return ga, gb


def floor_divide(a, b):
    """a // b rounded toward -inf (Python's and PyTorch's ``floor_divide``), on
    arrays already in one dtype; integer division by 0 raises ZeroDivisionError."""
    xp = get_array_module(a)
    if a.dtype.kind in "iu" and bool((b == 0).any()):
        raise ZeroDivisionError("floor_divide: integer division by zero")
    with np.errstate(divide="ignore", invalid="ignore"):
        return xp.floor_divide(a, b)


class Lerp(Function):
    """start + weight·(end - start) (``torch.lerp``), broadcasting all three.
    d/dstart = 1 - weight, d/dend = weight, d/dweight = end - start."""

    def forward(self, start, end, weight):
        start, end = _promote(start, end)
        weight = weight.astype(start.dtype, copy=False)
        self.shapes = start.shape, end.shape, weight.shape
        self.start, self.end, self.weight = start, end, weight
        try:
            return start + weight * (end - start)
        except ValueError:
            raise ValueError(f"lerp: shapes {start.shape}, {end.shape} and {weight.shape} "
                             f"cannot be broadcast together") from None

    def backward(self, g):
        need = self.needs_input_grad
        gs = unbroadcast(g * (1 - self.weight), self.shapes[0]) if need[0] else None
        ge = unbroadcast(g * self.weight, self.shapes[1]) if need[1] else None
        gw = unbroadcast(g * (self.end - self.start), self.shapes[2]) if need[2] else None
        return gs, ge, gw
