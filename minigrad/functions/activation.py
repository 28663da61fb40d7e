"""GELU, with the error function it needs.

NumPy has no vectorized ``erf`` (``math.erf`` takes one number), so
:func:`erf` and :func:`erfc` below evaluate W. J. Cody's rational Chebyshev
approximations (W. J. Cody, *Rational Chebyshev approximations for the error
function*, Math. Comp. 23 (1969) 631-638; the coefficients of his SPECFUN
routine CALERF), accurate to float64 rounding, on NumPy or CuPy arrays alike.
"""
from __future__ import annotations

import math

import numpy as np

from ..autograd import Function
from ..backend import get_array_module
from ..dtypes import to_floating

# Cody's coefficients.  erf on |x| <= 0.46875:
_A = (3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
      3.20937758913846947e03, 1.85777706184603153e-1)
_B = (2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
      2.84423683343917062e03)
# erfc on 0.46875 < |x| <= 4:
_C = (5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
      2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
      2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8)
_D = (1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
      1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
      3.43936767414372164e03, 1.23033935480374942e03)
# erfc on |x| > 4:
_P = (3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
      1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2)
_Q = (2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
      6.05183413124413191e-2, 2.33520497626869185e-3)
_SQRT_1_PI = 0.56418958354775628695        # 1 / sqrt(pi)
_SMALL, _MIDDLE, _BIG = 0.46875, 4.0, 27.0


def _erf_small(x):
    """erf(x) for |x| <= 0.46875: x · R(x²) with R of degree (3, 3)."""
    z = x * x
    num, den = _A[4] * z, z
    for i in range(3):
        num = (num + _A[i]) * z
        den = (den + _B[i]) * z
    return x * (num + _A[3]) / (den + _B[3])


def _exp_minus_square(y):
    """exp(-y²), computed as exp(-t²)·exp(-(y-t)(y+t)) with t = y rounded down to
    1/16, so that y² loses no digits (Cody's device)."""
    xp = get_array_module(y)
    t = xp.trunc(y * 16.0) / 16.0
    return xp.exp(-t * t) * xp.exp(-(y - t) * (y + t))


def _erfc_positive(y):
    """erfc(y) for y > 0.46875 (``y`` must be positive); 0 beyond y = 27, where
    erfc underflows float64."""
    xp = get_array_module(y)
    beyond = y > _BIG
    y = xp.minimum(y, _BIG)             # keeps inf out of the arithmetic below
    # middle range 0.46875 < y <= 4: a rational function of y of degree (8, 8)
    ym = xp.minimum(y, _MIDDLE)
    num, den = _C[8] * ym, ym
    for i in range(7):
        num = (num + _C[i]) * ym
        den = (den + _D[i]) * ym
    middle = (num + _C[7]) / (den + _D[7])
    # large range y > 4: (1/sqrt(pi) - z·R(z)) / y with z = 1/y²
    yl = xp.maximum(y, _MIDDLE)
    z = 1.0 / (yl * yl)
    num, den = _P[5] * z, z
    for i in range(4):
        num = (num + _P[i]) * z
        den = (den + _Q[i]) * z
    large = (_SQRT_1_PI - z * (num + _P[4]) / (den + _Q[4])) / yl
    with np.errstate(under="ignore"):
        result = xp.where(y <= _MIDDLE, middle, large) * _exp_minus_square(y)
    return xp.where(beyond, 0.0, result)


def erf(x):
    """The error function erf(x) = 2/√π ∫₀ˣ exp(-t²) dt, elementwise, on a
    floating NumPy or CuPy array (Cody 1969; float64 rounding accuracy)."""
    xp = get_array_module(x)
    y = xp.abs(x)
    small = _erf_small(xp.clip(x, -_SMALL, _SMALL))
    big = xp.sign(x) * (1.0 - _erfc_positive(xp.maximum(y, _SMALL)))
    return xp.where(y <= _SMALL, small, big)


def erfc(x):
    """The complementary error function erfc(x) = 1 - erf(x), elementwise,
    without the cancellation of ``1 - erf(x)`` for large x (Cody 1969)."""
    xp = get_array_module(x)
    y = xp.abs(x)
    small = 1.0 - _erf_small(xp.clip(x, -_SMALL, _SMALL))
    tail = _erfc_positive(xp.maximum(y, _SMALL))
    big = xp.where(x > 0, tail, 2.0 - tail)
    return xp.where(y <= _SMALL, small, big)


class Erf(Function):
    """erf(x) (Cody 1969, above); d/dx = 2/√π·exp(-x²)."""

    def forward(self, x):
        self.x = to_floating(x)
        return erf(self.x)

    def backward(self, g):
        return g * (2 * _SQRT_1_PI) * get_array_module(g).exp(-self.x * self.x)


_SQRT_2 = math.sqrt(2.0)
_SQRT_2_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TANH_C = 0.044715


class GELU(Function):
    """Gaussian Error Linear Unit (Hendrycks & Gimpel, 2016, arXiv:1606.08415).

    ``approximate="none"`` (PyTorch's default): y = x·Φ(x), Φ the standard
    normal CDF, Φ(x) = ½·erfc(-x/√2); dy/dx = Φ(x) + x·φ(x), φ(x) =
    exp(-x²/2)/√(2π).

    ``approximate="tanh"``: y = ½x(1 + tanh(u)), u = √(2/π)(x + 0.044715x³);
    dy/dx = ½(1 + tanh u) + ½x(1 - tanh²u)·√(2/π)(1 + 3·0.044715x²).

    Only x is saved; backward computes Φ(x) (or tanh u) again, as PyTorch's
    does, so a block Linear → GELU keeps two arrays (the Linear's input and
    the GELU's input), not three: keeping tanh u from forward would save one
    tanh in backward (about 20 % of its time) for one more array of x's size
    per GELU kept from forward to backward, the largest activation of a
    transformer block (4C numbers per token).  The tanh form runs in place,
    block by block, instead (:func:`_gelu_tanh`, :func:`_gelu_tanh_derivative`,
    :func:`_blockwise`): forward and backward each allocate one array of x's
    size, their result, where the one-line formulas allocated eight and
    fifteen, and nothing more is kept.
    """

    def __init__(self, approximate: str = "none"):
        if approximate not in ("none", "tanh"):
            raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got "
                             f"{approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        xp = get_array_module(x)
        x = to_floating(x)          # integers: the default float dtype
        self.x = x
        if self.approximate == "tanh":
            return _blockwise(_gelu_tanh, x)        # 0.5 * x * (1 + _tanh_u(x))
        return x * _cdf(x)

    def backward(self, g):
        xp = get_array_module(g)
        x = self.x
        if self.approximate == "tanh":
            # t = tanh u, du = √(2/π)(1 + 3·0.044715x²):
            # g * (0.5 * (1 + t) + 0.5 * x * (1 - t * t) * du), in place
            return _blockwise(_gelu_tanh_derivative, x, g)
        pdf = _INV_SQRT_2PI * xp.exp(-0.5 * x * x)
        return g * (_cdf(x) + x * pdf)


def _cdf(x):
    """Φ(x), the standard normal CDF: ½·erfc(-x/√2)."""
    return 0.5 * erfc(-x / _SQRT_2)


def _tanh_u(x, out=None):
    """tanh(√(2/π)(x + 0.044715x³)), GELU's tanh approximation, computed as
    tanh(√(2/π)·x·(1 + 0.044715x²)) in place in ``out`` (default a new array):
    six passes over one array instead of seven new arrays."""
    xp = get_array_module(x)
    u = xp.multiply(x, x, out=out)
    u *= _TANH_C
    u += 1.0
    u *= x
    u *= _SQRT_2_PI
    return xp.tanh(u, out=u)


# GELU's tanh form and its derivative below are written as in-place operations
# on arrays they are given, and run block by block (_blockwise).  What that
# saves: each operator of the one-line formulas allocates a fresh array of x's
# size and makes one more pass over memory; at the GPT's sizes (an MLP
# activation of 2M numbers, 8 MiB) every pass goes to main memory and each
# fresh array is mapped and zeroed page by page.  Block by block, the 17
# passes of the derivative work on 256 KiB that stay in the core's cache, and
# backward takes about a fifth of the time of the one-line formula.

def _gelu_tanh(x, out):
    """½x(1 + tanh u), written into ``out``."""
    y = _tanh_u(x, out=out)
    y += 1.0
    y *= x
    y *= 0.5
    return y


def _gelu_tanh_derivative(x, g, out):
    """g · d/dx ½x(1 + tanh u) = g · (1 + t)(½ + ½x·du·(1 - t)), written into
    ``out``, with t = tanh u and du = √(2/π)(1 + 3·0.044715x²): the textbook
    ½(1 + t) + ½x(1 - t²)du with 1 - t² = (1 - t)(1 + t) factored out."""
    xp = get_array_module(x)
    t = _tanh_u(x)                          # one temporary
    d = xp.multiply(x, x, out=out)          # ½x·du
    d *= 3.0 * _TANH_C
    d += 1.0
    d *= x
    d *= 0.5 * _SQRT_2_PI
    xp.subtract(1.0, t, out=t)              # 1 - t
    d *= t
    d += 0.5                                # ½ + ½x·du·(1 - t)
    xp.subtract(2.0, t, out=t)              # 1 + t
    d *= t
    d *= g
    return d


_BLOCK = 1 << 16        # elements: 256 KiB of float32, well inside a core's L2 cache


def _blockwise(fn, x, *others):
    """``fn(x, *others, out=out)`` on consecutive blocks of ``_BLOCK`` elements
    of the flattened arrays (all of x's shape), into a new array ``out`` of
    x's shape and dtype, returned.  On the GPU, for small arrays and for
    arrays that are not C-contiguous: one call on the whole arrays."""
    xp = get_array_module(x)
    out = xp.empty_like(x)
    arrays = (x,) + others
    if xp is not np or x.size <= _BLOCK or not all(a.flags.c_contiguous for a in arrays):
        fn(*arrays, out=out)
        return out
    flat, flat_out = [a.reshape(-1) for a in arrays], out.reshape(-1)
    for start in range(0, x.size, _BLOCK):
        block = slice(start, start + _BLOCK)
        fn(*[a[block] for a in flat], out=flat_out[block])
    return out


# ------------------------------------------------------ more activations
# Each saves its input x (integers enter in the default float dtype) and
# multiplies the upstream gradient by dy/dx in backward.  Conventions at the
# kinks are PyTorch's (the value the derivative takes on one side).

def softplus_array(z):
    """log(1 + exp(z)) without overflow: max(z, 0) + log1p(exp(-|z|))."""
    xp = get_array_module(z)
    with np.errstate(under="ignore"):
        return xp.maximum(z, 0) + xp.log1p(xp.exp(-xp.abs(z)))


def _sigmoid(z):
    from .elementwise import stable_sigmoid  # noqa: PLC0415 (elementwise is the sibling)
    return stable_sigmoid(z)


class _Activation(Function):
    def forward(self, x):
        self.x = to_floating(x)
        return self.f(get_array_module(self.x), self.x)

    def backward(self, g):
        return g * self.derivative(get_array_module(g), self.x)


class SiLU(_Activation):
    """x·σ(x) (Elfwing et al. 2018, "swish"); dy/dx = σ(x)·(1 + x·(1 - σ(x)))."""

    def f(self, xp, x):
        return x * _sigmoid(x)

    def derivative(self, xp, x):
        s = _sigmoid(x)
        return s * (1 + x * (1 - s))


class LeakyReLU(_Activation):
    """x for x > 0, slope·x otherwise; dy/dx = 1 or slope (slope at 0)."""

    def __init__(self, negative_slope=0.01):
        self.slope = negative_slope

    def f(self, xp, x):
        return xp.where(x > 0, x, x * self.slope)

    def derivative(self, xp, x):
        return xp.where(x > 0, 1.0, self.slope).astype(x.dtype)


class ELU(_Activation):
    """x for x > 0, α(exp(x) - 1) otherwise (Clevert et al. 2016);
    dy/dx = 1 or α·exp(x)."""

    def __init__(self, alpha=1.0):
        self.alpha = alpha

    def f(self, xp, x):
        with np.errstate(over="ignore"):
            return xp.where(x > 0, x, self.alpha * xp.expm1(xp.minimum(x, 0)))

    def derivative(self, xp, x):   # 1 at nan, as PyTorch's elu_backward
        return xp.where(x <= 0, self.alpha * xp.exp(xp.minimum(x, 0)), 1.0).astype(x.dtype)


class Softplus(_Activation):
    """(1/β)·log(1 + exp(βx)), and x where βx > threshold (PyTorch's
    linear regime); dy/dx = σ(βx), or 1 there."""

    def __init__(self, beta=1.0, threshold=20.0):
        self.beta, self.threshold = beta, threshold

    def f(self, xp, x):
        z = x * self.beta
        return xp.where(z > self.threshold, x, softplus_array(z) / self.beta)

    def derivative(self, xp, x):
        z = x * self.beta
        return xp.where(z > self.threshold, 1.0, _sigmoid(z)).astype(x.dtype)


class Hardtanh(_Activation):
    """x clipped to [min_val, max_val]; dy/dx = 1 strictly inside, else 0
    (PyTorch's ``hardtanh_backward``; ReLU6 is Hardtanh(0, 6))."""

    def __init__(self, min_val=-1.0, max_val=1.0):
        self.low, self.high = min_val, max_val

    def f(self, xp, x):
        return xp.clip(x, self.low, self.high)

    def derivative(self, xp, x):   # 1 at nan, as PyTorch's hardtanh_backward
        return (~((x <= self.low) | (x >= self.high))).astype(x.dtype)


class Mish(_Activation):
    """x·tanh(softplus(x)) (Misra 2019); dy/dx = tanh(sp) + x·σ(x)·(1 - tanh²(sp))."""

    def f(self, xp, x):
        return x * xp.tanh(softplus_array(x))

    def derivative(self, xp, x):
        t = xp.tanh(softplus_array(x))
        return t + x * _sigmoid(x) * (1 - t * t)


class Hardswish(_Activation):
    """x·ReLU6(x + 3)/6 (Howard et al. 2019, MobileNetV3); dy/dx = 0 for
    x <= -3, x/3 + 1/2 for -3 < x < 3, 1 from 3 on (PyTorch's branches)."""

    def f(self, xp, x):
        return x * xp.clip(x + 3, 0, 6) / 6

    def derivative(self, xp, x):
        return xp.where(x <= -3, 0.0, xp.where(x < 3, x / 3 + 0.5, 1.0)).astype(x.dtype)


class LogSigmoid(_Activation):
    """log σ(x) = -softplus(-x), stable for large |x|; dy/dx = σ(-x)."""

    def f(self, xp, x):
        return -softplus_array(-x)

    def derivative(self, xp, x):
        return _sigmoid(-x)
