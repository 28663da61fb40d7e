"""Layers over :mod:`minigrad.nn.functional_more` (names and arguments as in
``torch.nn``): SELU, CELU, Hardsigmoid; L1Loss, SmoothL1Loss, HuberLoss,
KLDivLoss; AvgPool1d, MaxPool1d, AdaptiveAvgPool1d, AdaptiveAvgPool2d;
Unfold, Fold.  Each holds its options and calls the functional form, which
documents shapes and errors."""
from __future__ import annotations

from ..functions.loss import check_reduction
from . import functional_more as FM
from .module import Module


class _Inplace(Module):
    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SELU(_Inplace):
    """scale·elu(x, α) elementwise (self-normalizing); any shape."""

    def forward(self, input):  # noqa: A002
        return FM.selu(input, self.inplace)


class CELU(_Inplace):
    """max(0, x) + min(0, α(exp(x/α) - 1)) elementwise; any shape."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(inplace)
        self.alpha = alpha

    def forward(self, input):  # noqa: A002
        return FM.celu(input, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Hardsigmoid(_Inplace):
    """relu6(x + 3)/6 elementwise; any shape."""

    def forward(self, input):  # noqa: A002
        return FM.hardsigmoid(input, self.inplace)


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        FM._no_legacy(type(self).__name__, size_average, reduce)
        self.reduction = reduction


class L1Loss(_Loss):
    """Mean absolute error; see :func:`minigrad.nn.functional.l1_loss`."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        check_reduction("L1Loss", reduction)

    def forward(self, input, target):  # noqa: A002
        return FM.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """Quadratic below ``beta``, linear above; see ``F.smooth_l1_loss``."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        check_reduction("SmoothL1Loss", reduction)
        self.beta = beta

    def forward(self, input, target):  # noqa: A002
        return FM.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(Module):
    """Quadratic below ``delta``, linear (slope delta) above; see ``F.huber_loss``."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__()
        check_reduction("HuberLoss", reduction)
        self.reduction, self.delta = reduction, delta

    def forward(self, input, target):  # noqa: A002
        return FM.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """KL divergence from log-probabilities ``input`` to ``target``; see ``F.kl_div``."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):  # noqa: A002
        return FM.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class AvgPool1d(Module):
    """Average over windows along L; see :func:`minigrad.nn.functional.avg_pool1d`."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):  # noqa: A002
        return FM.avg_pool1d(input, self.kernel_size, self.stride, self.padding,
                             self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxPool1d(Module):
    """Maximum over windows along L; see :func:`minigrad.nn.functional.max_pool1d`."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.dilation, self.return_indices, self.ceil_mode = dilation, return_indices, ceil_mode

    def forward(self, input):  # noqa: A002
        return FM.max_pool1d(input, self.kernel_size, self.stride, self.padding,
                             self.dilation, self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class AdaptiveAvgPool1d(Module):
    """Average pooling to ``output_size`` positions; see ``F.adaptive_avg_pool1d``."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):  # noqa: A002
        return FM.adaptive_avg_pool1d(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """Average pooling to an ``output_size`` (OH, OW); see ``F.adaptive_avg_pool2d``."""

    def forward(self, input):  # noqa: A002
        return FM.adaptive_avg_pool2d(input, self.output_size)


class Unfold(Module):
    """Sliding blocks as columns (im2col); see :func:`minigrad.nn.functional.unfold`."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):  # noqa: A002
        return FM.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")


class Fold(Module):
    """Columns summed back onto an image (col2im); see ``F.fold``."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size, self.dilation = output_size, kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):  # noqa: A002
        return FM.fold(input, self.output_size, self.kernel_size, self.dilation,
                       self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")
