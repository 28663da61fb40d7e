"""Loss layers: Modules over the losses of :mod:`minigrad.nn.functional`."""
from __future__ import annotations

from ..functions.loss import check_ignore_index, check_reduction
from . import functional as F
from ..tensor import Tensor
from .module import Module


class CrossEntropyLoss(Module):
    """``F.cross_entropy(logits, target, weight, ignore_index=, reduction=,
    label_smoothing=)`` as a layer, arguments in PyTorch's order; see
    :func:`minigrad.nn.functional.cross_entropy`.  The class weights (a (C,)
    Tensor or None) are kept as the buffer ``weight``."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100,
                 reduce=None, reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__()
        F._no_legacy_reduction("CrossEntropyLoss", size_average, reduce)
        check_reduction("CrossEntropyLoss", reduction)
        check_ignore_index("CrossEntropyLoss", ignore_index)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.label_smoothing = label_smoothing
        self.register_buffer("weight", _as_buffer(weight))

    def forward(self, logits, target):
        return F.cross_entropy(logits, target, self.weight, ignore_index=self.ignore_index,
                               reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class NLLLoss(Module):
    """``F.nll_loss`` as a layer, arguments in PyTorch's order; class weights
    as in :class:`CrossEntropyLoss`."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100,
                 reduce=None, reduction: str = "mean"):
        super().__init__()
        F._no_legacy_reduction("NLLLoss", size_average, reduce)
        check_reduction("NLLLoss", reduction)
        check_ignore_index("NLLLoss", ignore_index)
        self.ignore_index, self.reduction = ignore_index, reduction
        self.register_buffer("weight", _as_buffer(weight))

    def forward(self, log_probs, target):
        return F.nll_loss(log_probs, target, self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class BCELoss(Module):
    """``F.binary_cross_entropy(input, target, weight, reduction=)`` on
    probabilities as a layer (logs clamped at -100, as PyTorch), arguments
    in PyTorch's order; ``weight`` is kept as a buffer.  See
    :func:`minigrad.nn.functional.binary_cross_entropy`."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        F._no_legacy_reduction("BCELoss", size_average, reduce)
        check_reduction("BCELoss", reduction)
        self.reduction = reduction
        self.register_buffer("weight", _as_buffer(weight))

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy(input, target, self.weight, reduction=self.reduction)


def _as_buffer(weight):
    """A weight given as a list or array becomes a Tensor (buffers are Tensors)."""
    if weight is None or isinstance(weight, Tensor):
        return weight
    return Tensor(weight)


class MSELoss(Module):
    """``F.mse_loss(input, target, reduction=)`` as a layer (PyTorch's argument order)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        F._no_legacy_reduction("MSELoss", size_average, reduce)
        check_reduction("MSELoss", reduction)
        self.reduction = reduction

    def forward(self, input, target):  # noqa: A002
        return F.mse_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(Module):
    """``F.binary_cross_entropy_with_logits(input, target, weight,
    reduction=, pos_weight=)`` as a layer, arguments in PyTorch's order;
    ``pos_weight`` and ``weight`` (Tensors broadcastable to the input) are
    kept as buffers."""

    def __init__(self, weight=None, size_average=None, reduce=None,
                 reduction: str = "mean", pos_weight=None):
        super().__init__()
        F._no_legacy_reduction("BCEWithLogitsLoss", size_average, reduce)
        check_reduction("BCEWithLogitsLoss", reduction)
        self.reduction = reduction
        self.register_buffer("pos_weight", pos_weight)
        self.register_buffer("weight", _as_buffer(weight))

    def forward(self, input, target):  # noqa: A002
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  reduction=self.reduction,
                                                  pos_weight=self.pos_weight)
