"""Losses as fused Functions: cross-entropy, negative log-likelihood, binary
cross-entropy with logits.  Semantics follow ``torch.nn.functional``.

Fusing log-softmax with the negative log-likelihood gives the short backward
(softmax - one-hot) / count, with no (N, C) intermediate kept but the softmax.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend
from ..autograd import Function, unbroadcast
from ..backend import count_as, get_array_module
from .elementwise import blocked_to_zero, stable_sigmoid
from .softmax import log_softmax_array

REDUCTIONS = ("mean", "sum", "none")


def check_ignore_index(name, ignore_index):
    """ignore_index must be an int (a class index, or -100 for none)."""
    if type(ignore_index) is not int and (isinstance(ignore_index, bool) or
                                          not isinstance(ignore_index, numbers.Integral)):
        raise TypeError(f"{name}: ignore_index must be an int, got "
                        f"{type(ignore_index).__name__} (class weights go in weight=)")


def check_reduction(name, reduction):
    if reduction not in REDUCTIONS:
        raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got "
                         f"{reduction!r}")


def _classes_last(logits, target, name):
    """Check shapes and move the class axis last: (N, C, d1, ...) -> (N·d1·..., C).

    Returns the 2-D logits and the flat target.
    """
    if (logits.ndim == 2 and target.ndim == 1 and target.shape[0] == logits.shape[0]
            and logits.dtype.kind == "f" and target.dtype.kind in "iu"):
        return logits, target                  # (N, C) and (N,): the common case, valid
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
    if tuple(target.shape) == tuple(logits.shape) and target.dtype.kind == "f":
        raise ValueError(f"{name}: target of shape {tuple(target.shape)} and dtype "
                         f"{target.dtype} looks like class probabilities, which only "
                         f"cross_entropy takes (as in PyTorch); pass class indices of "
                         f"shape {expected}")
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


_UNSIGNED = {np.dtype(f"i{n}"): np.dtype(f"u{n}") for n in (1, 2, 4, 8)}


def _check_targets(target, num_classes, ignore_index, name):
    """Raise ValueError naming the first target outside [0, C) that is not ignored.

    Returns True when every target lies in [0, C) (the common case: on the CPU
    one reduction, on the GPU one reduction and one wait for the device),
    False when some equal ``ignore_index`` outside that range.
    """
    if target.size == 0:
        return True
    xp = get_array_module(target)
    if xp is np:
        # One reduction for both bounds: viewed as unsigned, a negative index is
        # larger than any class count.
        unsigned = target.view(_UNSIGNED.get(target.dtype)
                               or target.dtype.str.replace("i", "u"))   # e.g. big-endian
        if np.maximum.reduce(unsigned, axis=None) < num_classes:     # unsigned.max()
            return True
    elif not bool(((target < 0) | (target >= num_classes)).any()):
        return True
    bad = ((target < 0) | (target >= num_classes)) & (target != ignore_index)
    if bool(bad.any()):
        value = int(target[xp.argmax(bad)])
        raise ValueError(f"{name}: target {value} is out of bounds: class indices must "
                         f"lie in [0, {num_classes}) with C={num_classes} (or equal "
                         f"ignore_index={ignore_index})")
    return False


def restore_layout(grad, shape):
    """(M, C) gradient back to the logits' layout ``shape`` = (N, C, d1, ...)."""
    if len(shape) == 2:                        # (N, C) already
        return grad
    if len(shape) < 2:
        return grad.reshape(shape)
    xp = get_array_module(grad)
    moved = (shape[0],) + tuple(shape[2:]) + (shape[1],)
    return xp.moveaxis(grad.reshape(moved), -1, 1)


class CrossEntropy(Function):
    """Cross-entropy between logits and integer targets, log-softmax fused in.

    Inputs: logits (N, C) or (N, C, d1, ...) (or (C,) with a scalar target),
    target (N, d1, ...) of integers.  Per kept position i (target ≠
    ignore_index), with ε = label_smoothing and log p = log_softmax(logits):

        loss_i = (1 - ε)·w[y_i]·(-log p[y_i]) + (ε / C)·Σ_c w[c]·(-log p[c])

    with class weights w (all 1 when ``weight`` is None)
    (``torch.nn.functional.cross_entropy``; label smoothing from Szegedy et al.,
    2016, arXiv:1512.00567).  Ignored positions give 0.  "mean" divides by
    Σ w[y_i] over the kept positions (their number when unweighted; 0/0 = nan
    when all are ignored, as PyTorch), "sum" adds, "none" returns the shape of
    ``target``.  With every position ignored, "mean" gives a nan loss but a
    zero gradient, as PyTorch: one update on a fully padded batch leaves the
    weights unchanged.

    Backward: d loss_i / d logits = (1-ε)·w[y_i]·(softmax - onehot(y_i))
    + (ε/C)·(Σ_c w[c]·softmax - w); unweighted, softmax - ((1 - ε)·onehot(y_i) + ε/C).
    The class weights get no gradient.
    """

    def __init__(self, ignore_index=-100, reduction="mean", label_smoothing=0.0,
                 weight=None):
        check_reduction("cross_entropy", reduction)
        check_ignore_index("cross_entropy", ignore_index)
        self.weight = weight
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], got "
                             f"{label_smoothing}")
        self.ignore_index = ignore_index
        self.reduction = reduction
        self.label_smoothing = float(label_smoothing)

    def forward(self, logits, target):
        xp = get_array_module(logits)
        z, t, w, all_valid = self._checked(logits, target)   # (M, C), (M,): classes last
        num_classes = z.shape[1]
        # BEGIN SOLUTION ch02.5
        if (all_valid and t.size and self.reduction != "none"
                and not 0 <= self.ignore_index < num_classes):    # no position is ignored
            keep, safe_t = None, t
            count = t.size if w is None else w[t].sum()
        else:
            keep = t != self.ignore_index
            safe_t = xp.where(keep, t, 0)
            count = _kept_total(keep, safe_t, w)
        logp = log_softmax_array(z, axis=1)
        rows = xp.arange(z.shape[0])
        loss = -logp[rows, safe_t]
        eps = self.label_smoothing
        if w is not None:
            loss = loss * w[safe_t]
        if eps > 0:
            smooth = logp.sum(axis=1) if w is None else logp @ w
            loss = (1.0 - eps) * loss - (eps / num_classes) * smooth
        if keep is not None:
            loss = xp.where(keep, loss, 0.0)
        loss = loss.astype(logits.dtype, copy=False)
        # END SOLUTION
        self.logp, self.safe_t, self.keep, self.count, self.w = logp, safe_t, keep, count, w
        self.rows, self.logits_shape = rows, logits.shape
        return _reduce_kept(loss, self.reduction, self.count, target.shape, logits.dtype)

    def backward(self, g):
        xp = get_array_module(g)
        eps = self.label_smoothing
        weight = _row_weights(g, self.reduction, self.keep, self.count, self.logp.dtype)
        if self.w is not None or (xp is not np and self.logp.dtype in backend.FUSED_DTYPES):
            grad = _weighted_or_fused_grad(self, weight)     # class weights; a GPU kernel
        else:
            grad = xp.exp(self.logp)                          # softmax, (M, C)
            num_classes = grad.shape[1]
            # BEGIN SOLUTION ch02.6
            if eps > 0:
                grad -= eps / num_classes
            grad[self.rows, self.safe_t] -= 1.0 - eps
            # END SOLUTION
            grad *= weight
        if self.keep is not None:     # ignored rows are 0 even where softmax is not finite
            grad = blocked_to_zero(grad, lambda: self.keep.reshape(-1, 1))
        return restore_layout(grad, self.logits_shape), None

    def _checked(self, logits, target):
        """``(z, t, w, all_valid)``: logits and target checked, with the class axis
        last (:func:`_classes_last`), the class weights checked (or None), and
        whether every target lies in [0, C) (:func:`_check_targets`)."""
        z, t = _classes_last(logits, target, "cross_entropy")
        all_valid = _check_targets(t, z.shape[1], self.ignore_index, "cross_entropy")
        w = _check_class_weight(self.weight, z.shape[1], logits, "cross_entropy")
        return z, t, w, all_valid


_INDEX_DTYPES = tuple(np.dtype(f"{sign}int{bits}")       # a target of any integer dtype
                      for sign in ("", "u") for bits in (8, 16, 32, 64))
_CROSS_ENTROPY_BACKWARD = backend.elementwise_kernel(
    "cross_entropy_backward",
    "T logp, raw I target, T weight, int64 num_classes, T eps_over_c, T hit",
    "T grad",
    "const ptrdiff_t row = i / num_classes;"
    "const ptrdiff_t col = i - row * num_classes;"
    "grad = (exp(logp) - eps_over_c - (col == target[row] ? hit : (T)0)) * weight;",
    types={"T": backend.FUSED_DTYPES, "I": _INDEX_DTYPES},
    scalars=("num_classes", "eps_over_c", "hit"))


def _row_weights(g, reduction, keep, count, dtype):
    """What each row of CrossEntropy's (M, C) gradient is multiplied by, in ``dtype``:
    with nothing ignored (``keep`` None) one number, g / count ("mean") or g
    ("sum"); else one per row, (M, 1), 0 at ignored rows (:func:`_kept_weights`)."""
    if keep is None:
        weight = g / count_as(count, g) if reduction == "mean" else g
    else:
        weight = _kept_weights(g, reduction, keep, count).reshape(-1, 1)
    return weight.astype(dtype, copy=False)


def _weighted_or_fused_grad(ce, weight):
    """CrossEntropy's gradient with class weights w, or unweighted on the GPU in one
    kernel, times the rows' ``weight``.  Weighted, per row with target y:
    (1-ε)·w_y·(p - onehot(y)) + (ε/C)·(Σ_c w_c·p - w), p = softmax."""
    eps, w, rows, safe_t = ce.label_smoothing, ce.w, ce.rows, ce.safe_t
    if w is None:
        return _cross_entropy_grad_gpu(ce.logp, safe_t, weight, eps)
    grad = get_array_module(ce.logp).exp(ce.logp)       # softmax, (M, C)
    num_classes = grad.shape[1]
    w_y = w[safe_t]
    grad *= ((1.0 - eps) * w_y + (eps / num_classes) * w.sum())[:, None]
    if eps > 0:
        grad -= (eps / num_classes) * w
    grad[rows, safe_t] -= (1.0 - eps) * w_y
    grad *= weight
    return grad


def _cross_entropy_grad_gpu(logp, target, weight, eps):
    """(softmax - (1 - ε)·onehot(target) - ε/C) · weight for CuPy arrays, in one kernel.

    ``logp`` (M, C) C-contiguous log-probabilities, ``target`` (M,) class
    indices, ``weight`` () or (M, 1) (broadcast over the classes).  The same
    element-by-element arithmetic as the NumPy lines of
    :meth:`CrossEntropy.backward`, without the softmax temporary, the index
    array and the scatter that those take on the GPU.
    """
    num_classes = logp.shape[1]
    return _CROSS_ENTROPY_BACKWARD(logp, target, weight, num_classes, eps / num_classes, 1.0 - eps)


class NLLLoss(Function):
    """Negative log-likelihood: loss_i = -w[y_i]·input[i, y_i] for kept positions
    (w = 1 without class weights).

    Inputs: log-probabilities (N, C) or (N, C, d1, ...), integer target
    (N, d1, ...).  Reductions, weights and ignore_index as :class:`CrossEntropy`
    ("mean" divides by Σ w[y_i] over the kept positions).
    Backward: -w[y_i]·g (or -w[y_i]·g / Σ w) at the target entries, 0 elsewhere.
    """

    def __init__(self, ignore_index=-100, reduction="mean", weight=None):
        check_reduction("nll_loss", reduction)
        check_ignore_index("nll_loss", ignore_index)
        self.weight = weight
        self.ignore_index = ignore_index
        self.reduction = reduction

    def forward(self, logp, target):
        xp = get_array_module(logp)
        z, t = _classes_last(logp, target, "nll_loss")
        _check_targets(t, z.shape[1], self.ignore_index, "nll_loss")
        w = _check_class_weight(self.weight, z.shape[1], logp, "nll_loss")
        keep = t != self.ignore_index
        safe_t = xp.where(keep, t, 0)
        picked = -z[xp.arange(z.shape[0]), safe_t]
        if w is not None:
            picked = picked * w[safe_t]
        loss = xp.where(keep, picked, 0.0).astype(logp.dtype)
        self.safe_t, self.keep, self.flat_shape = safe_t, keep, z.shape    # (M, C)
        self.logits_shape, self.w = logp.shape, w
        self.count = _kept_total(keep, safe_t, w)
        self.all_kept = bool(keep.size) and bool(keep.all())   # empty: the guarded path
        return _reduce_kept(loss, self.reduction, self.count, target.shape, logp.dtype)

    def backward(self, g):
        xp = get_array_module(g)
        weight = _kept_weights(g, self.reduction, self.keep, self.count, self.all_kept)
        if self.w is not None:
            weight = weight * self.w[self.safe_t]
        grad = xp.zeros(self.flat_shape, dtype=g.dtype)
        grad[xp.arange(self.flat_shape[0]), self.safe_t] = -weight.astype(g.dtype, copy=False)
        return restore_layout(grad, self.logits_shape), None


def _check_class_weight(weight, num_classes, scores, name):
    """The class weights as an array of the scores' dtype, or None.

    Raises ValueError unless ``weight`` has shape (C,), TypeError unless it is
    floating point.
    """
    if weight is None:
        return None
    if tuple(weight.shape) != (num_classes,):
        raise ValueError(f"{name}: weight of shape {tuple(weight.shape)} does not match "
                         f"C={num_classes} classes; expected shape ({num_classes},), one "
                         f"weight per class")
    if weight.dtype.kind != "f":
        raise TypeError(f"{name}: weight must be floating point, got dtype {weight.dtype}")
    return weight.astype(scores.dtype, copy=False)


def _wide_sum(loss):
    """``loss.sum()``, in float32 for float16 losses (70,000 positions of ~1.1
    overflow float16's 65,504), as PyTorch sums them."""
    return loss.sum(dtype=backend.opmath_dtype(loss.dtype))


def _kept_total(keep, safe_t, w):
    """The "mean" divisor: the number of kept positions, or Σ w[y_i] over them."""
    if w is None:
        return keep.sum()
    return (w[safe_t] * keep).sum()


def _reduce_kept(loss, reduction, count, target_shape, dtype):
    """Reduce per-position losses (ignored positions hold 0): "none" keeps the
    target's shape, "sum" adds, "mean" divides by ``count``, the number of
    positions kept or their total class weight (0 kept gives nan, as in PyTorch)."""
    if reduction == "none":
        return loss.reshape(target_shape)
    if reduction == "sum":
        return loss.sum()
    total = _wide_sum(loss)                       # float16: summed in float32
    if get_array_module(loss) is not np or count:    # no 0/0 warning to silence
        return (total / count_as(count, total)).astype(dtype)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (total / count_as(count, total)).astype(dtype)


def _kept_weights(g, reduction, keep, count, all_kept=False):
    """d(reduced loss)/d(per-position loss), flattened: 0 at ignored positions,
    else g ("sum"), g / count ("mean"), or g's own entry ("none").

    Ignored positions are *selected* to 0, not multiplied by 0: with every
    position ignored, "mean" has count = 0 and g / count is inf or nan, yet the
    gradient is 0 (PyTorch: loss nan, gradient zeros), and an inf or nan
    upstream gradient at an ignored position ("none") gives 0 too.
    """
    if all_kept:                      # nothing to block: the plain formulas
        if reduction == "none":
            return g.reshape(-1)
        return g if reduction == "sum" else g / count_as(count, g)
    xp = get_array_module(g)
    zero = xp.zeros((), dtype=g.dtype)
    if reduction == "none":
        return xp.where(keep, g.reshape(-1), zero)
    if reduction == "sum":
        return xp.where(keep, g, zero)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = g / count_as(count, g)
    return xp.where(keep, share, zero)


def reduce_loss(loss, reduction):
    """Apply "mean" | "sum" | "none" to an elementwise loss array."""
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    with np.errstate(invalid="ignore", divide="ignore"):    # no elements: 0/0 = nan
        total = _wide_sum(loss)                             # float16: in float32
        return (total / count_as(loss.size, total)).astype(loss.dtype, copy=False)


def expand_reduced_grad(g, shape, reduction, dtype):
    """The gradient of a reduction, as an array of the elementwise loss's shape."""
    xp = get_array_module(g)
    if reduction == "none":
        return g
    size = 1
    for s in shape:
        size *= s
    with np.errstate(invalid="ignore", divide="ignore"):    # size 0: nothing receives it
        scale = g if reduction == "sum" else g / count_as(size, g)
    return xp.broadcast_to(xp.asarray(scale, dtype=dtype), shape)


class BCEWithLogits(Function):
    """Binary cross-entropy on logits x with targets y in [0, 1], optional pos_weight w:

        loss = (1 - y)·x + (1 + (w - 1)·y)·softplus(-x)

    with softplus(-x) = log(1 + exp(-|x|)) + max(-x, 0), the log-sum-exp form
    that is finite for any finite x (``torch.nn.BCEWithLogitsLoss``).  x, y
    (and w) broadcast together; an optional constant ``weight`` multiplies each
    element's loss (and its gradients).  Gradients:
    dx = (1 - y) - (1 + (w-1)y)·sigmoid(-x), dy = -x + (w - 1)·softplus(-x),
    dw = y·softplus(-x).
    """

    def __init__(self, reduction="mean", weight=None):
        check_reduction("binary_cross_entropy_with_logits", reduction)
        self.reduction = reduction
        self.weight = weight      # a constant rescaling each element (no gradient)

    def forward(self, x, y, pos_weight=None):
        shapes = [a.shape for a in (x, y, pos_weight, self.weight) if a is not None]
        try:
            np.broadcast_shapes(*shapes)
        except ValueError:
            raise ValueError(f"binary_cross_entropy_with_logits: input, target (and "
                             f"pos_weight, weight) of shapes {', '.join(map(str, shapes))} cannot "
                             "be broadcast together") from None
        xp = get_array_module(x)
        softplus = xp.log1p(xp.exp(-xp.abs(x))) + xp.maximum(-x, 0)
        log_weight = 1.0 if pos_weight is None else 1.0 + (pos_weight - 1.0) * y
        loss = (1.0 - y) * x + log_weight * softplus
        if self.weight is not None:
            loss = loss * self.weight.astype(x.dtype, copy=False)
        self.x, self.y, self.w = x, y, pos_weight
        self.softplus, self.log_weight, self.shape = softplus, log_weight, loss.shape
        return reduce_loss(loss, self.reduction).astype(x.dtype, copy=False)

    def backward(self, g):
        x, y, w = self.x, self.y, self.w
        g = expand_reduced_grad(g, self.shape, self.reduction, x.dtype)
        if self.weight is not None:
            g = g * self.weight.astype(x.dtype, copy=False)
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


#: PyTorch clamps the logs of binary_cross_entropy at -100 (so p = 0 or 1 stays finite).
LOG_CLAMP = -100.0
#: ... and divides its gradient by max(p·(1 - p), 1e-12), 1e-12 being a float32
#: constant there (9.99999996e-13), copied here so the gradients match to the bit.
BCE_GRAD_EPS = float(np.float32(1e-12))


class BCE(Function):
    """Binary cross-entropy on probabilities p with targets y (same shape),
    optional elementwise weight w (a constant that broadcasts to p):

        loss = -w·(y·max(log p, -100) + (1 - y)·max(log(1 - p), -100))

    (``torch.nn.functional.binary_cross_entropy``, whose clamp at -100 this
    copies).  Gradients, as PyTorch computes them:
    dp = w·(p - y) / max(p·(1 - p), 1e-12), dy = -w·(max(log p, -100) - max(log(1 - p), -100)).
    (dy is the derivative of the clamped loss, finite at p = 0 or 1, where
    PyTorch's unclamped formula gives ±inf.)
    """

    def __init__(self, reduction="mean", weight=None):
        check_reduction("binary_cross_entropy", reduction)
        self.reduction, self.weight = reduction, weight

    def forward(self, p, y):
        xp = get_array_module(p)
        if p.dtype.kind != "f":
            raise TypeError(f"binary_cross_entropy: input must be floating point, got "
                            f"dtype {p.dtype}")
        if p.size and bool(((p < 0) | (p > 1) | xp.isnan(p)).any()):
            raise ValueError("binary_cross_entropy: every input value must lie in [0, 1] "
                             "(probabilities); for logits use "
                             "binary_cross_entropy_with_logits")
        w = self.weight
        if w is not None:
            try:
                np.broadcast_shapes(w.shape, p.shape)
            except ValueError:
                raise ValueError(f"binary_cross_entropy: weight of shape {tuple(w.shape)} "
                                 f"does not broadcast to the input's shape "
                                 f"{tuple(p.shape)}") from None
            w = w.astype(p.dtype, copy=False)
        with np.errstate(divide="ignore"):
            log_p = xp.maximum(xp.log(p), LOG_CLAMP)
            log_q = xp.maximum(xp.log1p(-p), LOG_CLAMP)
        loss = -(y * log_p + (1.0 - y) * log_q)
        if w is not None:
            loss = loss * w
        self.p, self.y, self.w = p, y, w
        self.log_p, self.log_q, self.shape = log_p, log_q, loss.shape
        return reduce_loss(loss, self.reduction).astype(p.dtype, copy=False)

    def backward(self, g):
        xp = get_array_module(g)
        p, y, w = self.p, self.y, self.w
        g = expand_reduced_grad(g, self.shape, self.reduction, p.dtype)
        if w is not None:
            g = g * w
        need = self.needs_input_grad
        gp = gy = None
        if need[0]:
            gp = g * (p - y) / xp.maximum(p * (1.0 - p), BCE_GRAD_EPS)
        if need[1]:
            gy = -g * (self.log_p - self.log_q)
        return gp, gy
