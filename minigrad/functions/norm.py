"""Normalization layers as fused Functions: batch, layer and group normalization.

All three compute, over some set of axes A holding m values each,

    μ = mean_A(x),  σ² = mean_A((x - μ)²)  (biased),  x̂ = (x - μ) / sqrt(σ² + eps),
    y = γ · x̂ + β

and differ only in A (Ioffe & Szegedy 2015, batch: the batch and spatial axes;
Ba et al. 2016, layer: the trailing ``normalized_shape`` axes; Wu & He 2018,
group: each group of channels with the spatial axes).  Because μ and σ depend
on every x in A, the backward has two correction terms.  With dx̂ = γ · dy,

    dx = (1/σ) · (dx̂ - mean_A(dx̂) - x̂ · mean_A(dx̂ · x̂))

which is the simplified form of Ioffe & Szegedy's chain of partial
derivatives, dx = (1/m)·γ/σ·(m·dy - Σdy - x̂·Σ(dy·x̂)) when γ is constant over
A (:func:`normalized_grad`).  The affine part has dγ = Σ dy·x̂ and dβ = Σ dy
over every axis that γ is broadcast along.

Inputs are ``(x,)`` (no affine parameters) or ``(x, weight, bias)``.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import get_array_module


def _prod(sizes):
    out = 1
    for s in sizes:
        out *= s
    return out


def normalized_grad(dxhat, xhat, inv_std, axes):
    """Gradient of x̂ = (x - μ)/σ through μ and σ: (1/σ)(dx̂ - mean(dx̂) - x̂·mean(dx̂·x̂)).

    ``axes`` are the axes that μ and σ reduce over; ``inv_std`` = 1/σ is
    broadcastable against ``xhat`` (keepdims shape).
    """
    if dxhat.size == 0:                     # an empty batch: nothing to send back
        return get_array_module(dxhat).zeros_like(dxhat)
    # BEGIN SOLUTION ch02.10
    mean_d = dxhat.mean(axis=axes, keepdims=True)
    mean_dx = (dxhat * xhat).mean(axis=axes, keepdims=True)
    return inv_std * (dxhat - mean_d - xhat * mean_dx)
    # END SOLUTION


def moments(x, axes):
    """Mean and biased variance over ``axes`` (keepdims), by two passes.

    Over axes holding no values (a batch of 0 for BatchNorm) both are 0:
    they normalize nothing, and the empty output needs no nan.
    """
    if any(x.shape[a] == 0 for a in axes):
        xp = get_array_module(x)
        shape = tuple(1 if a in axes else s for a, s in enumerate(x.shape))
        return xp.zeros(shape, dtype=x.dtype), xp.zeros(shape, dtype=x.dtype)
    if x.dtype.kind == "f" and x.dtype.itemsize < 4:
        # float16 in float32, as PyTorch does: (x - μ)² and σ² overflow float16
        # (max 65504) for a standard deviation above 256; both come back in float32.
        x = x.astype(np.float32)
    mean = x.mean(axis=axes, keepdims=True)
    centered = x - mean
    return mean, (centered * centered).mean(axis=axes, keepdims=True)


def centered_moments(x, axes):
    """(x - μ, σ²) over ``axes``: :func:`moments` keeping its ``x - μ`` (a fresh
    array, float32 for a float16 x), which layer normalization scales into x̂
    instead of subtracting μ a second time."""
    if any(x.shape[a] == 0 for a in axes):
        mean, var = moments(x, axes)
        return x - mean, var
    if x.dtype.kind == "f" and x.dtype.itemsize < 4:
        x = x.astype(np.float32)                   # as moments: float16 in float32
    centered = x - _mean_over(x, axes)
    return centered, _mean_of_product(centered, centered, axes)


def normalized_grad_into(dxhat, xhat, inv_std, axes):
    """:func:`normalized_grad`, computed in ``dxhat``'s own memory (which it
    overwrites: pass a fresh array).  What it saves: the one-line formula
    allocates four arrays of x's size and two for its means; this allocates
    one (:func:`_mean_of_product` needs no product array)."""
    if dxhat.size == 0:
        return dxhat
    # BEGIN SOLUTION ch02.10
    mean_d = _mean_over(dxhat, axes)
    mean_dx = _mean_of_product(dxhat, xhat, axes)
    dxhat -= mean_d
    dxhat -= xhat * mean_dx
    dxhat *= inv_std
    return dxhat
    # END SOLUTION


# Means over the trailing axes of a C-contiguous array, the axes of layer
# normalization, as one einsum over (rows, m): what that saves, against
# ``a.mean(axis)`` and ``(a * b).mean(axis)``, is NumPy's slow reduction
# along a short contiguous axis (about 3 times the time at m = 256) and the
# product array; the sums run in another order, so they may differ from
# ``mean``'s in the last bit.  Other axes or layouts: the plain reductions.

def _trailing_rows(a, axes):
    """``a`` as (rows, m) with the ``axes`` (trailing, all of them) as m, or
    None when they are not the trailing axes, ``a`` is not C-contiguous, or
    not float32/float64 (einsum sums float16 in float16, ``mean`` does not)."""
    if axes != tuple(range(a.ndim - len(axes), a.ndim)) or not a.flags.c_contiguous \
            or a.dtype.kind != "f" or a.dtype.itemsize < 4:
        return None
    return a.reshape(-1, _prod(a.shape[a.ndim - len(axes):]))


def _keepdims_shape(a, axes):
    return tuple(1 if i in axes else n for i, n in enumerate(a.shape))


def _mean_over(a, axes):
    """a.mean(axis=axes, keepdims=True)."""
    rows = _trailing_rows(a, axes)
    if rows is None:
        return a.mean(axis=axes, keepdims=True)
    xp = get_array_module(a)
    total = xp.einsum("ij->i", rows)
    total /= rows.shape[1]
    return total.reshape(_keepdims_shape(a, axes))


def _mean_of_product(a, b, axes):
    """(a * b).mean(axis=axes, keepdims=True), without the product array."""
    rows_a, rows_b = _trailing_rows(a, axes), _trailing_rows(b, axes)
    if rows_a is None or rows_b is None or a.shape != b.shape or a.dtype != b.dtype:
        return (a * b).mean(axis=axes, keepdims=True)
    xp = get_array_module(a)
    total = xp.einsum("ij,ij->i", rows_a, rows_b)
    total /= rows_a.shape[1]
    return total.reshape(_keepdims_shape(a, axes))


def _affine_grads(g, xhat, param_axes, param_shape, needs):
    """dγ = Σ g·x̂ and dβ = Σ g over ``param_axes``, reshaped to the parameter's shape."""
    dweight = (g * xhat).sum(axis=param_axes).reshape(param_shape) if needs[1] else None
    dbias = g.sum(axis=param_axes).reshape(param_shape) if needs[2] else None
    return dweight, dbias


def _layer_affine_grads(g, xhat, param_shape, needs):
    """:func:`_affine_grads` over every leading axis, for layer normalization:
    dγ = Σ_rows g·x̂ as one einsum over (rows, m), which saves the product
    array and half the time of ``(g * xhat).sum(axis)``."""
    leading = tuple(range(g.ndim - len(param_shape)))
    rows_g = _trailing_rows(g, tuple(range(len(leading), g.ndim)))
    rows_x = _trailing_rows(xhat, tuple(range(len(leading), g.ndim)))
    if rows_g is None or rows_x is None or g.dtype != xhat.dtype:
        return _affine_grads(g, xhat, leading, param_shape, needs)
    xp = get_array_module(g)
    dweight = xp.einsum("ij,ij->j", rows_g, rows_x).reshape(param_shape) if needs[1] else None
    dbias = rows_g.sum(axis=0).reshape(param_shape) if needs[2] else None
    return dweight, dbias


def channel_shape(x):
    """(1, C, 1, ..., 1): a per-channel vector broadcast against x (N, C, *)."""
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)



def _channel_affine(fn, x, weight, bias):
    """γ·x̂ + β with per-channel γ, β of shape (C,) (x̂ alone without them);
    keeps γ, reshaped to broadcast over (N, C, *), on ``fn`` for backward."""
    if weight is None:
        return fn.xhat
    fn.weight = weight.reshape(channel_shape(x))
    return fn.xhat * fn.weight + bias.reshape(channel_shape(x))

class BatchNormTrain(Function):
    """Batch normalization with the batch's own statistics, x of shape (N, C, *).

    μ and the *biased* σ² per channel over the axes (0, 2, 3, ...).  After
    forward, ``self.batch_mean`` and ``self.batch_var`` (biased, shape (C,))
    hold the statistics, for the caller's running-average update.
    """

    def __init__(self, eps=1e-5):
        self.eps = eps

    def forward(self, x, weight=None, bias=None):
        xp = get_array_module(x)
        self.axes = (0,) + tuple(range(2, x.ndim))
        mean, var = moments(x, self.axes)
        inv_std = 1.0 / xp.sqrt(var + self.eps)
        self.xhat = ((x - mean) * inv_std).astype(x.dtype, copy=False)
        self.inv_std = inv_std.astype(x.dtype, copy=False)
        self.batch_mean, self.batch_var = mean.reshape(-1), var.reshape(-1)
        return _channel_affine(self, x, weight, bias)

    def backward(self, g):
        needs = self.needs_input_grad
        dxhat = g if len(needs) == 1 else g * self.weight
        dx = normalized_grad(dxhat, self.xhat, self.inv_std, self.axes) if needs[0] else None
        if len(needs) == 1:
            return dx
        return (dx,) + _affine_grads(g, self.xhat, self.axes, (-1,), needs)


class BatchNormEval(Function):
    """Batch normalization with fixed statistics: y = γ·(x - mean)/sqrt(var + eps) + β.

    An affine map of x, so dx = γ·g/sqrt(var + eps).  ``mean`` and ``var`` are
    arrays of shape (C,) (the running statistics); they get no gradient.
    """

    def __init__(self, mean, var, eps=1e-5):
        self.mean, self.var, self.eps = mean, var, eps

    def forward(self, x, weight=None, bias=None):
        xp = get_array_module(x)
        shape = channel_shape(x)
        self.axes = (0,) + tuple(range(2, x.ndim))
        self.inv_std = (1.0 / xp.sqrt(self.var + self.eps)).reshape(shape).astype(x.dtype)
        self.xhat = (x - self.mean.reshape(shape).astype(x.dtype)) * self.inv_std
        return _channel_affine(self, x, weight, bias)

    def backward(self, g):
        needs = self.needs_input_grad
        if len(needs) == 1:
            return g * self.inv_std
        dx = g * self.weight * self.inv_std if needs[0] else None
        return (dx,) + _affine_grads(g, self.xhat, self.axes, (-1,), needs)


class LayerNorm(Function):
    """Layer normalization over the last ``normalized_ndim`` axes of x.

    weight and bias (if given) have the shape of those trailing axes.
    """

    def __init__(self, normalized_ndim, eps=1e-5):
        self.normalized_ndim, self.eps = normalized_ndim, eps

    def forward(self, x, weight=None, bias=None):
        xp = get_array_module(x)
        self.axes = tuple(range(x.ndim - self.normalized_ndim, x.ndim))
        centered, var = centered_moments(x, self.axes)
        inv_std = 1.0 / xp.sqrt(var + self.eps)
        centered *= inv_std                         # x̂ = (x - μ)/σ, in place
        self.xhat = centered.astype(x.dtype, copy=False)
        self.inv_std = inv_std.astype(x.dtype, copy=False)
        if weight is None:
            return self.xhat
        self.weight = weight
        y = self.xhat * weight
        y += bias                                   # y is fresh: in place
        return y

    def backward(self, g):
        needs = self.needs_input_grad
        if len(needs) == 1:
            return normalized_grad(g, self.xhat, self.inv_std, self.axes)
        dweight, dbias = _layer_affine_grads(g, self.xhat, self.weight.shape, needs)
        dx = None
        if needs[0]:
            dxhat = g * self.weight                 # a fresh array: overwritten below
            dx = normalized_grad_into(dxhat, self.xhat, self.inv_std, self.axes)
        return dx, dweight, dbias


class GroupNorm(Function):
    """Group normalization of x (N, C, *): channels split into ``num_groups``
    groups of C/G; each (example, group) is normalized over its channels and
    spatial positions.  weight and bias (if given) are per channel, shape (C,).
    """

    def __init__(self, num_groups, eps=1e-5):
        self.num_groups, self.eps = num_groups, eps

    def forward(self, x, weight=None, bias=None):
        xp = get_array_module(x)
        n = x.shape[0]
        # explicit sizes, not -1: a batch of 0 must reshape too
        self.grouped_shape = (n, self.num_groups, _prod(x.shape[1:]) // self.num_groups)
        grouped = x.reshape(self.grouped_shape)               # (N, G, C/G · spatial)
        mean, var = moments(grouped, (2,))
        inv_std = 1.0 / xp.sqrt(var + self.eps)                  # (N, G, 1)
        self.xhat = ((grouped - mean) * inv_std).astype(x.dtype, copy=False).reshape(x.shape)
        self.inv_std = inv_std.astype(x.dtype, copy=False)
        return _channel_affine(self, x, weight, bias)

    def backward(self, g):
        needs = self.needs_input_grad
        n = g.shape[0]
        dxhat = g if len(needs) == 1 else g * self.weight
        dx = None
        if needs[0]:
            dx = normalized_grad(dxhat.reshape(self.grouped_shape),
                                 self.xhat.reshape(self.grouped_shape),
                                 self.inv_std, (2,)).reshape(g.shape)
        if len(needs) == 1:
            return dx
        param_axes = (0,) + tuple(range(2, g.ndim))
        return (dx,) + _affine_grads(g, self.xhat, param_axes, (-1,), needs)
