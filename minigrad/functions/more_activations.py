"""SELU, CELU and Hardsigmoid: elementwise activations with their derivatives
(same pattern as :mod:`minigrad.functions.activation`: ``f`` and
``derivative`` on floating arrays, integers entering in the default dtype)."""
from __future__ import annotations

import numpy as np

from .activation import _Activation

# Klambauer et al. 2017, "Self-Normalizing Neural Networks", eq. 2 (the
# constants to the digits PyTorch uses)
SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946


class CELU(_Activation):
    """max(0, x) + min(0, α(exp(x/α) - 1)) (Barron 2017, "Continuously
    Differentiable Exponential Linear Units"); dy/dx = 1 for x > 0, exp(x/α)
    for x <= 0 (PyTorch's branches)."""

    def __init__(self, alpha=1.0):
        if alpha == 0:
            raise ValueError("celu: alpha must not be 0 (it divides x)")
        self.alpha = alpha

    def f(self, xp, x):
        with np.errstate(over="ignore"):
            return xp.where(x > 0, x, self.alpha * xp.expm1(xp.minimum(x, 0) / self.alpha))

    def derivative(self, xp, x):
        with np.errstate(over="ignore"):
            return xp.where(x > 0, 1.0, xp.exp(xp.minimum(x, 0) / self.alpha)).astype(x.dtype)


class SELU(_Activation):
    """scale·(x for x > 0, α(exp(x) - 1) otherwise), α ≈ 1.6733, scale ≈ 1.0507
    (Klambauer et al. 2017); dy/dx = scale, or scale·α·exp(x) for x <= 0."""

    def f(self, xp, x):
        return SELU_SCALE * xp.where(x > 0, x, SELU_ALPHA * xp.expm1(xp.minimum(x, 0)))

    def derivative(self, xp, x):
        return (SELU_SCALE * xp.where(x > 0, 1.0, SELU_ALPHA * xp.exp(xp.minimum(x, 0)))
                ).astype(x.dtype)


class Hardsigmoid(_Activation):
    """relu6(x + 3)/6: 0 up to -3, 1 from 3 on, linear between (Howard et al.
    2019, MobileNetV3); dy/dx = 1/6 strictly between -3 and 3, else 0
    (PyTorch's ``hardsigmoid_backward``)."""

    def f(self, xp, x):
        return xp.clip(x + 3, 0, 6) / 6

    def derivative(self, xp, x):
        return xp.where((x > -3) & (x < 3), 1 / 6, 0.0).astype(x.dtype)
