"""Still more of ``torch.nn.functional``, each written in a few lines of
minigrad's differentiable operations, so each gradient comes from autograd:

* activations: softsign, tanhshrink, threshold, hardshrink, softshrink, glu, prelu;
* rms_norm, pixel_shuffle, pixel_unshuffle, pairwise_distance;
* losses: soft_margin_loss, margin_ranking_loss, hinge_embedding_loss,
  multilabel_soft_margin_loss, cosine_embedding_loss, triplet_margin_loss,
  poisson_nll_loss.

Each formula is PyTorch's (its ``aten/src/ATen/native/Loss.cpp`` and
``Activation.cpp``), written the same way so that values and gradients
agree to rounding.  All are re-exported by :mod:`minigrad.nn.functional`.
Losses take ``reduction="mean" | "sum" | "none"``.
"""
from __future__ import annotations

import math

import numpy as np

from ..functions.elementwise import Where
from ..functions.loss import check_reduction
from ..tensor import Tensor
from .functional_more import _no_legacy, _reduce, _tensor


def _where(condition, a, b):
    """where(condition, a, b) for Tensors (or numbers); ``condition`` a bool array."""
    return Where(condition)(a, b)


# ---------------------------------------------------------------- activations
def softsign(input: Tensor) -> Tensor:  # noqa: A002
    """x / (1 + |x|), any shape."""
    return input / (1 + _tensor(input, "softsign").abs())


def tanhshrink(input: Tensor) -> Tensor:  # noqa: A002
    """x - tanh(x), any shape."""
    return input - _tensor(input, "tanhshrink").tanh()


def threshold(input: Tensor, threshold: float, value: float,  # noqa: A002
              inplace: bool = False) -> Tensor:
    """x where x > threshold, else ``value``; the gradient is 0 where replaced."""
    out = _where(_tensor(input, "threshold")._data > threshold, input, value)
    return input.copy_(out) if inplace else out


def hardshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x where |x| > lambd, else 0."""
    a = _tensor(input, "hardshrink")._data
    return _where((a > lambd) | (a < -lambd), input, 0)


def softshrink(input: Tensor, lambd: float = 0.5) -> Tensor:  # noqa: A002
    """x - lambd above lambd, x + lambd below -lambd, 0 between; lambd >= 0."""
    if lambd < 0:
        raise ValueError(f"softshrink: lambd must be >= 0, got {lambd}")
    a = _tensor(input, "softshrink")._data
    return _where(a > lambd, input - lambd, _where(a < -lambd, input + lambd, 0))


def glu(input: Tensor, dim: int = -1) -> Tensor:  # noqa: A002
    """The gated linear unit a·σ(b), a and b the two halves of ``input``
    along ``dim`` (Dauphin et al. 2017); that size must be even."""
    x = _tensor(input, "glu")
    if x.ndim == 0 or x.shape[dim] % 2:
        raise ValueError(f"glu: halving dimension {dim} of shape {x.shape} needs an even size")
    a, b = x.chunk(2, dim)
    return a * b.sigmoid()


def prelu(input: Tensor, weight: Tensor) -> Tensor:  # noqa: A002
    """x where x > 0, else weight·x (He et al. 2015); ``weight`` has 1 entry
    or one per channel (dimension 1 of the input)."""
    x = _tensor(input, "prelu")
    channels = x.shape[1] if x.ndim >= 2 else 1
    if weight.ndim > 1:
        raise ValueError(f"prelu: weight must be 0-d or 1-D, got shape {weight.shape}")
    if weight.numel() not in (1, channels):
        raise ValueError(f"prelu: weight has {weight.numel()} entries; expected 1 or the "
                         f"{channels} channels of input {x.shape}")
    w = weight.reshape(()) if weight.numel() == 1 else \
        weight.reshape(channels, *(1,) * (x.ndim - 2))
    return _where(x._data > 0, x, w * x)


# ---------------------------------------------------------- norms, shapes
def rms_norm(input: Tensor, normalized_shape, weight=None, eps=None) -> Tensor:  # noqa: A002
    """x / √(mean(x²) + eps) over the last ``len(normalized_shape)``
    dimensions, times ``weight`` (Zhang & Sennrich 2019); eps defaults to the
    dtype's machine epsilon, as in PyTorch."""
    x = _tensor(input, "rms_norm")
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or len(shape) > x.ndim or x.shape[x.ndim - len(shape):] != shape:
        raise ValueError(f"rms_norm: normalized_shape {shape} must be the last (at least one) "
                         f"dimensions of the input shape {x.shape}")
    if weight is not None and tuple(weight.shape) != shape:
        raise ValueError(f"rms_norm: weight of shape {weight.shape} must have the shape "
                         f"normalized_shape {shape}")
    dims = tuple(range(x.ndim - len(shape), x.ndim))
    eps = float(np.finfo(x.dtype).eps) if eps is None else eps
    out = x * ((x * x).mean(dims, keepdim=True) + eps).rsqrt()
    return out if weight is None else out * weight


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C·r², H, W) → (*, C, H·r, W·r): each group of r² channels fills an
    r × r block (Shi et al. 2016)."""
    x, r = _tensor(input, "pixel_shuffle"), int(upscale_factor)
    if x.ndim < 3 or r <= 0 or x.shape[-3] % (r * r):
        raise ValueError(f"pixel_shuffle: expected (*, C·r², H, W) with r = {r}, got {x.shape}")
    *lead, c, h, w = x.shape
    n = len(lead)
    x = x.reshape(*lead, c // (r * r), r, r, h, w)
    x = x.permute(*range(n), n, n + 3, n + 1, n + 4, n + 2)
    return x.reshape(*lead, c // (r * r), h * r, w * r)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:  # noqa: A002
    """(*, C, H·r, W·r) → (*, C·r², H, W), the inverse of ``pixel_shuffle``."""
    x, r = _tensor(input, "pixel_unshuffle"), int(downscale_factor)
    if x.ndim < 3 or r <= 0 or x.shape[-2] % r or x.shape[-1] % r:
        raise ValueError(f"pixel_unshuffle: expected (*, C, H·r, W·r) with r = {r}, got "
                         f"{x.shape}")
    *lead, c, h, w = x.shape
    n = len(lead)
    x = x.reshape(*lead, c, h // r, r, w // r, r)
    x = x.permute(*range(n), n, n + 2, n + 4, n + 1, n + 3)
    return x.reshape(*lead, c * r * r, h // r, w // r)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6,
                      keepdim: bool = False) -> Tensor:
    """‖x1 - x2 + eps‖_p over the last dimension (PyTorch adds eps to the
    difference so the gradient at x1 = x2 is finite)."""
    diff = _tensor(x1, "pairwise_distance") - x2 + eps
    return diff.norm(p, dim=-1 if diff.ndim else None, keepdim=keepdim)


# --------------------------------------------------------------------- losses
def _loss(name, loss, reduction, size_average=None, reduce=None):
    _no_legacy(name, size_average, reduce)
    check_reduction(name, reduction)
    return _reduce(loss, reduction)


def soft_margin_loss(input: Tensor, target, size_average=None, reduce=None,  # noqa: A002
                     reduction: str = "mean") -> Tensor:
    """log(1 + exp(-y·x)) for targets y = ±1: logistic loss on a margin."""
    loss = (-_tensor(input, "soft_margin_loss") * target).exp().log1p()
    return _loss("soft_margin_loss", loss, reduction, size_average, reduce)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target, margin: float = 0,
                        size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """max(0, -y·(x1 - x2) + margin): x1 should rank above x2 where y = 1,
    below where y = -1."""
    loss = (-target * (_tensor(input1, "margin_ranking_loss") - input2) + margin).clamp(min=0)
    return _loss("margin_ranking_loss", loss, reduction, size_average, reduce)


def hinge_embedding_loss(input: Tensor, target, margin: float = 1.0,  # noqa: A002
                         size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """x where y = 1, max(0, margin - x) where y = -1 (x a distance)."""
    x = _tensor(input, "hinge_embedding_loss")
    y = target._data if isinstance(target, Tensor) else np.asarray(target)
    loss = _where(y != 1, (margin - x).clamp(min=0), 0) + _where(y != -1, x, 0)
    return _loss("hinge_embedding_loss", loss, reduction, size_average, reduce)


def multilabel_soft_margin_loss(input: Tensor, target, weight=None,  # noqa: A002
                                size_average=None, reduce=None,
                                reduction: str = "mean") -> Tensor:
    """-mean over classes of y·log σ(x) + (1 - y)·log σ(-x): one binary
    cross-entropy per label of a multi-label problem, (N, C) or (C,)."""
    from .functional import logsigmoid  # noqa: PLC0415 (functional imports this module)
    x = _tensor(input, "multilabel_soft_margin_loss")
    loss = -(target * logsigmoid(x) + (1 - target) * logsigmoid(-x))
    if weight is not None:
        loss = loss * weight
    loss = loss.sum(x.ndim - 1) / x.shape[-1] if x.ndim else loss
    return _loss("multilabel_soft_margin_loss", loss, reduction, size_average, reduce)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target, margin: float = 0,
                          size_average=None, reduce=None, reduction: str = "mean") -> Tensor:
    """1 - cos(x1, x2) where y = 1, max(0, cos(x1, x2) - margin) where y = -1,
    cos over the last dimension (with 1e-12 added to each squared norm)."""
    x1 = _tensor(input1, "cosine_embedding_loss")
    d = x1.ndim - 1
    prod = (x1 * input2).sum(d)
    mag = ((x1 * x1).sum(d) + 1e-12) * ((input2 * input2).sum(d) + 1e-12)
    cos = prod / mag.sqrt()
    y = target._data if isinstance(target, Tensor) else np.asarray(target)
    loss = _where(y == 1, 1 - cos, 0) + _where(y == -1, (cos - margin).clamp(min=0), 0)
    return _loss("cosine_embedding_loss", loss, reduction, size_average, reduce)


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor,
                        margin: float = 1.0, p: float = 2, eps: float = 1e-6,
                        swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean") -> Tensor:
    """max(0, d(a, p) - d(a, n) + margin), d the ``pairwise_distance``; with
    ``swap``, d(a, n) is the smaller of d(a, n) and d(p, n) (Balntas et al. 2016)."""
    if margin <= 0:
        raise ValueError(f"triplet_margin_loss: margin must be greater than 0, got {margin}")
    d_pos = pairwise_distance(anchor, positive, p, eps)
    d_neg = pairwise_distance(anchor, negative, p, eps)
    if swap:
        d_neg = d_neg.minimum(pairwise_distance(positive, negative, p, eps))
    loss = (margin + d_pos - d_neg).clamp(min=0)
    return _loss("triplet_margin_loss", loss, reduction, size_average, reduce)


def poisson_nll_loss(input: Tensor, target, log_input: bool = True,  # noqa: A002
                     full: bool = False, size_average=None, eps: float = 1e-8,
                     reduce=None, reduction: str = "mean") -> Tensor:
    """The negative log-likelihood of a Poisson count y with rate λ:
    exp(x) - y·x when ``log_input`` (x = log λ), else x - y·log(x + eps);
    ``full`` adds Stirling's y·log y - y + ½·log(2πy) where y > 1."""
    x = _tensor(input, "poisson_nll_loss")
    loss = x.exp() - target * x if log_input else x - target * (x + eps).log()
    if full:
        y = target if isinstance(target, Tensor) else Tensor(np.asarray(target, x.dtype))
        with np.errstate(divide="ignore", invalid="ignore"):
            stirling = y * y.log() - y + 0.5 * (2 * math.pi * y).log()
        loss = loss + _where(y._data <= 1, 0, stirling)
    return _loss("poisson_nll_loss", loss, reduction, size_average, reduce)
