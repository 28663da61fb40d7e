"""MaxPool2d, MaxUnpool2d and AvgPool2d over (N, C, H, W) inputs, and their
functional forms.

The window arithmetic is in :mod:`minigrad.functions.pool`.
"""
from __future__ import annotations

from ..arguments import check_bool
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
        raise ValueError(f"{name}: expected a 3-D (unbatched) or 4-D input (N, C, H, W), "
                         f"got shape {tuple(x.shape)}")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """Maximum over KH×KW windows, as ``torch.nn.functional.max_pool2d``.

    Args:
        input: (N, C, H, W), floating point; or (C, H, W) unbatched (the
            result is then unbatched too).
        kernel_size, stride, padding, dilation: an int or a pair;
            ``stride=None`` means ``stride = kernel_size``.  Padding counts as
            -inf and may be at most half the kernel size; ``dilation`` spaces
            the window's taps.
        ceil_mode: round the output size up, keeping a last, partial window
            at the bottom / right edge (dropped when it would start beyond
            the input and its leading padding, PyTorch's rule).
        return_indices: also return where each maximum was.

    Returns:
        (N, C, OH, OW), OH = (H + 2·padding - dilation·(KH - 1) - 1) / stride + 1,
        rounded down (or up with ``ceil_mode``); likewise OW.  With
        ``return_indices=True`` the pair ``(output, indices)``: ``indices``
        (N, C, OH, OW) int64, the position of each maximum in the flattened
        H·W plane of its (n, c) input (row · W + column), PyTorch's
        convention, which :func:`max_unpool2d` reads.

    Gradient: each output's gradient goes to the *first* maximum of its window
    (row-major order) when several inputs tie, as in PyTorch; overlapping
    windows add up.

    Raises:
        ValueError: input not 4-D, kernel or stride < 1, padding larger than
            half the kernel, or a window larger than the padded input.
    """
    if isinstance(input, Tensor) and input.ndim == 3:     # unbatched (C, H, W)
        out = max_pool2d(input.unsqueeze(0), kernel_size, stride, padding, dilation,
                         ceil_mode, return_indices)
        return tuple(t.squeeze(0) for t in out) if return_indices else out.squeeze(0)
    _check_input("max_pool2d", input)
    check_bool("max_pool2d", "ceil_mode", ceil_mode)
    check_bool("max_pool2d", "return_indices", return_indices)
    kernel, stride, padding = _pool_options("max_pool2d", kernel_size, stride, padding)
    dilation = pair(dilation, "max_pool2d: dilation")
    pool = _pool.MaxPool2d(kernel, stride, padding, dilation, bool(ceil_mode))
    out = pool(input)
    return (out, Tensor(pool.flat_indices())) if return_indices else out


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0,  # noqa: A002
                 output_size=None) -> Tensor:
    """The partial inverse of :func:`max_pool2d`: every value of ``input`` goes
    back to the place its maximum came from, the rest is zero
    (``torch.nn.functional.max_unpool2d``).

    Args:
        input: (N, C, H, W), the pooled values.
        indices: (N, C, H, W) integers, from ``max_pool2d(..., return_indices=True)``:
            positions in the flattened OH·OW output plane.
        kernel_size, stride, padding: the pooling's (``stride=None``: the kernel size).
        output_size: (OH, OW) (or (N, C, OH, OW)); by default
            OH = (H - 1)·stride - 2·padding + KH, likewise OW.  Another size
            must lie within a stride of it (pooling rounds sizes down).

    Returns:
        (N, C, OH, OW); ``out.flatten(2)[n, c, indices[n, c, i, j]] = input[n, c, i, j]``.
        The gradient of ``input`` reads the upstream gradient at ``indices``.

    Raises:
        ValueError: input not 4-D, indices of another shape, an output_size
            out of range; IndexError: an index outside the OH·OW plane.
    """
    _check_input("max_unpool2d", input)
    kernel, stride, padding = _pool_options("max_unpool2d", kernel_size, stride, padding)
    n, c, h, w = input.shape
    oh, ow = _unpool_size(input, indices, kernel, stride, padding, output_size)
    plane = Tensor(input._xp.zeros((n, c, oh * ow), dtype=input.dtype))
    idx = indices.reshape(n, c, h * w)
    return plane.scatter(2, idx, input.reshape(n, c, h * w)).reshape(n, c, oh, ow)


def _unpool_size(x, indices, kernel, stride, padding, output_size):
    """max_unpool2d's (OH, OW), with PyTorch's checks of indices and output_size."""
    if not isinstance(indices, Tensor) or indices.dtype.kind not in "iu":
        raise TypeError("max_unpool2d: indices must be an integer Tensor (from "
                        "max_pool2d(..., return_indices=True))")
    if indices.shape != x.shape:
        raise ValueError(f"max_unpool2d: indices of shape {indices.shape} do not match the "
                         f"input's shape {x.shape}")
    default = tuple((x.shape[2 + a] - 1) * stride[a] - 2 * padding[a] + kernel[a]
                    for a in (0, 1))
    if output_size is None:
        size = default
    else:
        size = tuple(output_size)[-2:]
        if len(tuple(output_size)) not in (2, 4) or any(
                not default[a] - stride[a] < size[a] < default[a] + stride[a] for a in (0, 1)):
            raise ValueError(f"max_unpool2d: output_size {tuple(output_size)} must be (OH, "
                             f"OW) or (N, C, OH, OW) with OH, OW within a stride {stride} "
                             f"of the default {default}")
    if indices.numel():
        low, high = int(indices.data.min()), int(indices.data.max())
        if low < 0 or high >= size[0] * size[1]:
            raise IndexError(f"max_unpool2d: indices must lie in [0, {size[0] * size[1]}) for "
                             f"an output of size {size[0]}x{size[1]}, found "
                             f"{low if low < 0 else high}")
    return size


def avg_pool2d(input, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode=False, count_include_pad=True, divisor_override=None) -> Tensor:
    """Mean over KH×KW windows, as ``torch.nn.functional.avg_pool2d``.

    Args:
        input: (N, C, H, W), floating point.
        kernel_size, stride, padding: as in :func:`max_pool2d` (padding is zeros).
        count_include_pad: divide by KH·KW even where the window overlaps the
            padding (True, PyTorch's default), or by the count of real inputs.
        ceil_mode: as in :func:`max_pool2d`; the last, partial window divides
            by its part inside the padded input (or its real inputs).
        divisor_override: divide every window's sum by this nonzero int instead.

    Returns:
        (N, C, OH, OW).

    Raises:
        ValueError: as :func:`max_pool2d`; a divisor_override of 0.
    """
    if isinstance(input, Tensor) and input.ndim == 3:     # unbatched (C, H, W)
        return avg_pool2d(input.unsqueeze(0), kernel_size, stride, padding, ceil_mode,
                          count_include_pad, divisor_override).squeeze(0)
    _check_input("avg_pool2d", input)
    check_bool("avg_pool2d", "ceil_mode", ceil_mode)
    check_bool("avg_pool2d", "count_include_pad", count_include_pad)
    kernel, stride, padding = _pool_options("avg_pool2d", kernel_size, stride, padding)
    if divisor_override is not None and divisor_override == 0:
        raise ValueError("avg_pool2d: divisor_override must not be zero")
    return _pool.AvgPool2d(kernel, stride, padding, count_include_pad,
                           bool(ceil_mode), divisor_override)(input)


class MaxPool2d(Module):
    """Max pooling layer; see :func:`max_pool2d` for shapes, ties and errors."""

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = _pool_options(
            "MaxPool2d", kernel_size, stride, padding)
        self.dilation = pair(dilation, "MaxPool2d: dilation")
        self.return_indices, self.ceil_mode = bool(return_indices), bool(ceil_mode)

    def forward(self, x: Tensor):
        """(N, C, OH, OW), or ``(output, indices)`` with ``return_indices=True``."""
        return max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation,
                          self.ceil_mode, self.return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}, dilation={self.dilation}, "
                f"ceil_mode={self.ceil_mode}")


class MaxUnpool2d(Module):
    """Max unpooling layer; see :func:`max_unpool2d` for shapes and errors."""

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        self.kernel_size, self.stride, self.padding = _pool_options(
            "MaxUnpool2d", kernel_size, stride, padding)

    def forward(self, input: Tensor, indices: Tensor, output_size=None) -> Tensor:  # noqa: A002
        return max_unpool2d(input, indices, self.kernel_size, self.stride, self.padding,
                            output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """Average pooling layer; see :func:`avg_pool2d` for shapes and errors."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False,
                 count_include_pad=True, divisor_override=None):
        super().__init__()
        self.kernel_size, self.stride, self.padding = _pool_options(
            "AvgPool2d", kernel_size, stride, padding)
        self.count_include_pad = count_include_pad
        self.ceil_mode = bool(ceil_mode)
        self.divisor_override = divisor_override

    def forward(self, x: Tensor) -> Tensor:
        return avg_pool2d(x, self.kernel_size, self.stride, self.padding,
                          self.ceil_mode, self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, "
                f"padding={self.padding}")
