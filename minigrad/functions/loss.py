"""Losses as fused Functions: cross-entropy, negative log-likelihood, binary
cross-entropy with logits.  Semantics follow ``torch.nn.functional``.

Fusing log-softmax with the negative log-likelihood gives the short backward
(softmax - one-hot) / count, with no (N, C) intermediate kept but the softmax.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module
from .elementwise import stable_sigmoid
from .softmax import log_softmax_array

REDUCTIONS = ("mean", "sum", "none")


def check_reduction(name, reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")


def _classes_last(logits, target, name):
    """Check shapes and move the class axis last: (N, C, d1, ...) -> (N·d1·..., C).

    Returns the 2-D logits and the flat target.
    """
    if logits.ndim < 1:
        raise ValueError(f"{name}: input must have shape (N, C) or (N, C, d1, ...), got "
                         f"a scalar")
    if logits.dtype.kind != "f":
        raise TypeError(f"{name}: input must hold floating-point scores, got dtype "
                        f"{logits.dtype}")
    if logits.ndim == 1:                       # (C,) with a scalar target, as PyTorch
        expected = ()
    else:
        expected = (logits.shape[0],) + tuple(logits.shape[2:])
    if tuple(target.shape) != expected:
        raise ValueError(f"{name}: target of shape {tuple(target.shape)} does not match "
                         f"input of shape {tuple(logits.shape)}: expected target shape "
                         f"{expected}")
    if target.dtype.kind not in "iu":
        raise TypeError(f"{name}: target must hold integer class indices, got dtype "
                        f"{target.dtype}")
    xp = get_array_module(logits)
    num_classes = logits.shape[0] if logits.ndim == 1 else logits.shape[1]
    if logits.ndim == 2:                       # already (N, C): the common case
        return logits, target
    moved = logits.reshape(1, -1) if logits.ndim == 1 else xp.moveaxis(logits, 1, -1)
    return moved.reshape(-1, num_classes), target.reshape(-1)


def _check_targets(target, num_classes, ignore_index, name):
    """Raise ValueError naming the first target outside [0, C) that is not ignored."""
    xp = get_array_module(target)
    bad = ((target < 0) | (target >= num_classes)) & (target != ignore_index)
    if bool(bad.any()):
        value = int(target[xp.argmax(bad)])
        raise ValueError(f"{name}: target {value} is out of bounds: class indices must "
                         f"lie in [0, {num_classes}) with C={num_classes} (or equal "
                         f"ignore_index={ignore_index})")


def restore_layout(grad, shape):
    """(M, C) gradient back to the logits' layout ``shape`` = (N, C, d1, ...)."""
    if len(shape) <= 2:
        return grad.reshape(shape)
    xp = get_array_module(grad)
    moved = (shape[0],) + tuple(shape[2:]) + (shape[1],)
    return xp.moveaxis(grad.reshape(moved), -1, 1)


class CrossEntropy(Function):
    """Cross-entropy between logits and integer targets, log-softmax fused in.

    Inputs: logits (N, C) or (N, C, d1, ...) (or (C,) with a scalar target),
    target (N, d1, ...) of integers.  Per kept position i (target ≠
    ignore_index), with ε = label_smoothing and log p = log_softmax(logits):

        loss_i = (1 - ε)·(-log p[y_i]) + (ε / C)·Σ_c (-log p[c])

    (``torch.nn.functional.cross_entropy``; label smoothing from Szegedy et al.,
    2016, arXiv:1512.00567).  Ignored positions give 0.  "mean" divides by the
    number of kept positions (0/0 = nan when all are ignored, as PyTorch),
    "sum" adds, "none" returns the shape of ``target``.

    Backward: d loss_i / d logits = softmax - ((1 - ε)·onehot(y_i) + ε/C).
    """

    def __init__(self, ignore_index=-100, reduction="mean", label_smoothing=0.0):
        check_reduction("cross_entropy", reduction)
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], got "
                             f"{label_smoothing}")
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = float(label_smoothing)

    def forward(self, logits, target):
        xp = get_array_module(logits)
        z, t = _classes_last(logits, target, "cross_entropy")
        num_classes = z.shape[1]
        _check_targets(t, num_classes, self.ignore_index, "cross_entropy")
        # BEGIN SOLUTION ch02.5
        keep = t != self.ignore_index
        safe_t = xp.where(keep, t, 0)
        logp = log_softmax_array(z, axis=1)
        rows = xp.arange(z.shape[0])
        loss = -logp[rows, safe_t]
        eps = self.label_smoothing
        if eps > 0:
            loss = (1.0 - eps) * loss - (eps / num_classes) * logp.sum(axis=1)
        loss = xp.where(keep, loss, 0.0).astype(logits.dtype, copy=False)
        # END SOLUTION
        self.logp, self.safe_t, self.keep = logp, safe_t, keep
        self.logits_shape = logits.shape
        self.count = keep.sum()
        return _reduce_kept(loss, self.reduction, self.count, target.shape, logits.dtype)

    def backward(self, g):
        xp = get_array_module(g)
        eps = self.label_smoothing
        # BEGIN SOLUTION ch02.6
        grad = xp.exp(self.logp)                          # softmax, (M, C)
        num_classes = grad.shape[1]
        if eps > 0:
            grad -= eps / num_classes
        grad[xp.arange(grad.shape[0]), self.safe_t] -= 1.0 - eps
        weight = _kept_weights(g, self.reduction, self.keep, self.count)
        grad *= weight.reshape(-1, 1).astype(grad.dtype, copy=False)
        # END SOLUTION
        return restore_layout(grad, self.logits_shape), None


class NLLLoss(Function):
    """Negative log-likelihood: loss_i = -input[i, y_i] for kept positions.

    Inputs: log-probabilities (N, C) or (N, C, d1, ...), integer target
    (N, d1, ...).  Reductions and ignore_index as :class:`CrossEntropy`.
    Backward: -g (or -g / count) at the target entries, 0 elsewhere.
    """

    def __init__(self, ignore_index=-100, reduction="mean"):
        check_reduction("nll_loss", reduction)
        self.ignore_index = ignore_index
        self.reduction = reduction

    def forward(self, logp, target):
        xp = get_array_module(logp)
        z, t = _classes_last(logp, target, "nll_loss")
        _check_targets(t, z.shape[1], self.ignore_index, "nll_loss")
        keep = t != self.ignore_index
        safe_t = xp.where(keep, t, 0)
        loss = xp.where(keep, -z[xp.arange(z.shape[0]), safe_t], 0.0).astype(logp.dtype)
        self.safe_t, self.keep, self.flat_shape = safe_t, keep, z.shape    # (M, C)
        self.logits_shape = logp.shape
        self.count = keep.sum()
        return _reduce_kept(loss, self.reduction, self.count, target.shape, logp.dtype)

    def backward(self, g):
        xp = get_array_module(g)
        weight = _kept_weights(g, self.reduction, self.keep, self.count)
        grad = xp.zeros(self.flat_shape, dtype=g.dtype)
        grad[xp.arange(self.flat_shape[0]), self.safe_t] = -weight.astype(g.dtype, copy=False)
        return restore_layout(grad, self.logits_shape), None


def _reduce_kept(loss, reduction, count, target_shape, dtype):
    """Reduce per-position losses (ignored positions hold 0): "none" keeps the
    target's shape, "sum" adds, "mean" divides by ``count``, the number of
    positions kept (0 kept gives nan, as in PyTorch)."""
    if reduction == "none":
        return loss.reshape(target_shape)
    if reduction == "sum":
        return loss.sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return (loss.sum() / count).astype(dtype)


def _kept_weights(g, reduction, keep, count):
    """d(reduced loss)/d(per-position loss), flattened: 0 at ignored positions,
    else g ("sum"), g / count ("mean"), or g's own entry ("none")."""
    if reduction == "none":
        return g.reshape(-1) * keep
    if reduction == "sum":
        return g * keep
    with np.errstate(invalid="ignore", divide="ignore"):
        return (g / count) * keep


def reduce_loss(loss, reduction):
    """Apply "mean" | "sum" | "none" to an elementwise loss array."""
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def expand_reduced_grad(g, shape, reduction, dtype):
    """The gradient of a reduction, as an array of the elementwise loss's shape."""
    xp = get_array_module(g)
    if reduction == "none":
        return g
    size = 1
    for s in shape:
        size *= s
    scale = g if reduction == "sum" else g / size
    return xp.broadcast_to(xp.asarray(scale, dtype=dtype), shape)


class BCEWithLogits(Function):
    """Binary cross-entropy on logits x with targets y in [0, 1], optional pos_weight w:

        loss = (1 - y)·x + (1 + (w - 1)·y)·softplus(-x)

    with softplus(-x) = log(1 + exp(-|x|)) + max(-x, 0), the log-sum-exp form
    that is finite for any finite x (``torch.nn.BCEWithLogitsLoss``).  x, y
    (and w) broadcast together.  Gradients:
    dx = (1 - y) - (1 + (w-1)y)·sigmoid(-x), dy = -x + (w - 1)·softplus(-x),
    dw = y·softplus(-x).
    """

    def __init__(self, reduction="mean"):
        check_reduction("binary_cross_entropy_with_logits", reduction)
        self.reduction = reduction

    def forward(self, x, y, pos_weight=None):
        shapes = [a.shape for a in (x, y, pos_weight) if a is not None]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"binary_cross_entropy_with_logits: input, target (and "
                             f"pos_weight) of shapes {', '.join(map(str, shapes))} cannot "
                             "be broadcast together") from None
        xp = get_array_module(x)
        softplus = xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, 0)
        log_weight = 1.0 if pos_weight is None else 1.0 + (pos_weight - 1.0) * y
        loss = (1.0 - y) * x + log_weight * softplus
        self.x, self.y, self.w = x, y, pos_weight
        self.softplus, self.log_weight, self.shape = softplus, log_weight, loss.shape
        return reduce_loss(loss, self.reduction).astype(x.dtype, copy=False)

    def backward(self, g):
        x, y, w = self.x, self.y, self.w
        g = expand_reduced_grad(g, self.shape, self.reduction, x.dtype)
        need = self.needs_input_grad
        gx = unbroadcast(g * ((1.0 - y) - self.log_weight * stable_sigmoid(-x)),
                         x.shape) if need[0] else None
        gy = None
        if need[1]:
            dy = -x if w is None else -x + (w - 1.0) * self.softplus
            gy = unbroadcast(g * dy, y.shape)
        if w is None:
            return gx, gy
        gw = unbroadcast(g * y * self.softplus, w.shape) if need[2] else None
        return gx, gy, gw
