"""MaxPool2d and AvgPool2d over (N, C, H, W) inputs, and their functional forms.

The window arithmetic is in :mod:`minigrad.functions.pool`.
"""
from __future__ import annotations

from ..functions import pool as _pool
from ..functions.conv import pair
from ..tensor import Tensor
from .module import Module


def _pool_options(name, kernel_size, stride, padding):
    """(kernel, stride, padding) as pairs; stride defaults to the kernel size."""
    kernel = pair(kernel_size, f"{name}: kernel_size")
    stride = kernel if stride is None else pair(stride, f"{name}: stride")
    return kernel, stride, pair(padding, f"{name}: padding")


def _check_input(name, x):
    if x.ndim != 4:
        raise ValueError(f"{name}: expected a 4-D input (N, C, H, W), got shape "
                         f"{tuple(x.shape)}")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False) -> Tensor:
    """Maximum over KH×KW windows, as ``torch.nn.functional.max_pool2d``.

    Args:
        input: (N, C, H, W), floating point.
        kernel_size, stride, padding, dilation: an int or a pair;
            ``stride=None`` means ``stride = kernel_size``.  Padding counts as
            -inf and may be at most half the kernel size; ``dilation`` spaces
            the window's taps.
        ceil_mode: round the output size up, keeping a last, partial window
            at the bottom / right edge (dropped when it would start beyond
            the input and its leading padding, PyTorch's rule).

    Returns:
        (N, C, OH, OW), OH = (H + 2·padding - dilation·(KH - 1) - 1) / stride + 1,
        rounded down (or up with ``ceil_mode``); likewise OW.

    Gradient: each output's gradient goes to the *first* maximum of its window
    (row-major order) when several inputs tie, as in PyTorch; overlapping
    windows add up.

    Raises:
        ValueError: input not 4-D, kernel or stride < 1, padding larger than
            half the kernel, or a window larger than the padded input.
    """
    _check_input("max_pool2d", input)
    kernel, stride, padding = _pool_options("max_pool2d", kernel_size, stride, padding)
    dilation = pair(dilation, "max_pool2d: dilation")
    return _pool.MaxPool2d(kernel, stride, padding, dilation, bool(ceil_mode))(input)


def avg_pool2d(input, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode=False, count_include_pad=True) -> Tensor:
    """Mean over KH×KW windows, as ``torch.nn.functional.avg_pool2d``.

    Args:
        input: (N, C, H, W), floating point.
        kernel_size, stride, padding: as in :func:`max_pool2d` (padding is zeros).
        count_include_pad: divide by KH·KW even where the window overlaps the
            padding (True, PyTorch's default), or by the count of real inputs.
        ceil_mode: as in :func:`max_pool2d`; the last, partial window divides
            by its part inside the padded input (or its real inputs).

    Returns:
        (N, C, OH, OW).

    Raises:
        ValueError: as :func:`max_pool2d`.
    """
    _check_input("avg_pool2d", input)
    kernel, stride, padding = _pool_options("avg_pool2d", kernel_size, stride, padding)
    return _pool.AvgPool2d(kernel, stride, padding, count_include_pad,
                           bool(ceil_mode))(input)


class MaxPool2d(Module):
    """Max pooling layer; see :func:`max_pool2d` for shapes, ties and errors."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        if return_indices:
            raise ValueError("MaxPool2d: return_indices=True is not supported")
        self.kernel_size, self.stride, self.padding = _pool_options(
            "MaxPool2d", kernel_size, stride, padding)
        self.dilation = pair(dilation, "MaxPool2d: dilation")
        self.ceil_mode = bool(ceil_mode)

    def forward(self, x: Tensor) -> Tensor:
        return max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class AvgPool2d(Module):
    """Average pooling layer; see :func:`avg_pool2d` for shapes and errors."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True):
        super().__init__()
        self.kernel_size, self.stride, self.padding = _pool_options(
            "AvgPool2d", kernel_size, stride, padding)
        self.count_include_pad = count_include_pad
        self.ceil_mode = bool(ceil_mode)

    def forward(self, x: Tensor) -> Tensor:
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding,
                          self.ceil_mode, self.count_include_pad)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")
