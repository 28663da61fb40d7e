"""2-D max and average pooling over (N, C, H, W) inputs.

Both read the windows through the strided view of :mod:`.conv`
(:func:`~minigrad.functions.conv.sliding_windows`) and send gradients back with
col2im (:func:`~minigrad.functions.conv.fold_windows`), where overlapping
windows (stride < kernel) add up.
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import get_array_module
from .conv import check_windows, crop2d, fold_windows, pad2d, sliding_windows
from .elementwise import blocked_to_zero

_NO_DILATION = (1, 1)


def pool_pads(in_hw, out_hw, kernel, stride, padding, dilation):
    """((top, bottom), (left, right)): ``padding`` on both sides, plus what
    ``ceil_mode``'s last, partial window needs beyond the bottom / right edge."""
    pads = []
    for a in (0, 1):
        reach = (out_hw[a] - 1) * stride[a] + dilation[a] * (kernel[a] - 1) + 1
        extra = max(0, reach - (in_hw[a] + 2 * padding[a]))
        pads.append((padding[a], padding[a] + extra))
    return tuple(pads)


def _check_pool_padding(name, kernel, padding):
    """PyTorch's rule: padding at most half the kernel, so no window is all padding."""
    if padding[0] > kernel[0] // 2 or padding[1] > kernel[1] // 2:
        raise ValueError(f"{name}: padding {padding} should be at most half of the "
                         f"kernel size {kernel}")


def lowest(dtype):
    """The value padding takes in a max pool: -inf, or an integer dtype's
    smallest value (never larger than an entry; -inf has no integer form)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        return np.iinfo(dtype).min
    if dtype.kind == "b":
        return False
    return -np.inf


class MaxPool2d(Function):
    """Maximum over each KH×KW window (taps ``dilation`` apart); padding counts
    as -inf (never the maximum).  ``ceil_mode`` keeps a last, partial window
    at the bottom / right edge (PyTorch's rule: it must start inside the input
    or its leading padding).

    Ties: the whole gradient goes to the *first* maximum of the window in
    row-major order (``argmax``), which is what PyTorch's CPU kernel does.
    """

    def __init__(self, kernel, stride, padding, dilation=_NO_DILATION, ceil_mode=False):
        self.kernel, self.stride, self.padding = kernel, stride, padding
        self.dilation, self.ceil_mode = dilation, ceil_mode

    def forward(self, x):
        xp = get_array_module(x)
        n, c, h, w = x.shape
        _check_pool_padding("max_pool2d", self.kernel, self.padding)
        oh, ow = check_windows("max_pool2d", (h, w), self.kernel, self.stride,
                               self.padding, self.dilation, self.ceil_mode)
        self.pads = pool_pads((h, w), (oh, ow), self.kernel, self.stride, self.padding,
                              self.dilation)
        xpad = pad2d(x, self.pads, value=lowest(x.dtype))
        kh, kw = self.kernel
        win = sliding_windows(xpad, self.kernel, self.stride, self.dilation, (oh, ow))
        flat = win.reshape(n, c, kh * kw, oh, ow)                 # a copy
        self.argmax = flat.argmax(axis=2)[:, :, None]             # (N, C, 1, OH, OW)
        self.padded_shape, self.in_hw = xpad.shape, (h, w)
        return xp.take_along_axis(flat, self.argmax, axis=2)[:, :, 0]

    def flat_indices(self):
        """Where each window's maximum sits in the flattened H·W input plane,
        (N, C, OH, OW) int64 (PyTorch's ``return_indices``): row · W + column.

        A window whose real entries all equal the padding value (-inf, or an
        integer dtype's smallest) may have found its maximum in the padding;
        it points at its first real entry instead, as PyTorch's kernel does."""
        xp = get_array_module(self.argmax)
        (h, w), (kh, kw) = self.in_hw, self.kernel
        oh, ow = self.argmax.shape[-2:]
        k = self.argmax[:, :, 0]
        top = xp.arange(oh)[:, None] * self.stride[0] - self.pads[0][0]
        left = xp.arange(ow)[None, :] * self.stride[1] - self.pads[1][0]
        rows, cols = top + (k // kw) * self.dilation[0], left + (k % kw) * self.dilation[1]
        outside = (rows < 0) | (rows >= h) | (cols < 0) | (cols >= w)
        rows = xp.where(outside, _first_inside(top, self.dilation[0]), rows)
        cols = xp.where(outside, _first_inside(left, self.dilation[1]), cols)
        return (rows * w + cols).astype(xp.int64)

    def backward(self, g):
        xp = get_array_module(g)
        n, c, oh, ow = g.shape
        kh, kw = self.kernel
        # one-hot over the window positions: 1 where the window's argmax is
        offsets = xp.arange(kh * kw).reshape(1, 1, kh * kw, 1, 1)
        # positions that are not the maximum get exactly 0, also for an inf or
        # nan upstream gradient
        hit = offsets == self.argmax
        with np.errstate(invalid="ignore"):
            dwin = blocked_to_zero(hit * g[:, :, None], hit)     # (N, C, KH·KW, OH, OW)
        dwin = dwin.reshape(n, c, kh, kw, oh, ow)
        dxpad = fold_windows(dwin, self.padded_shape, self.stride, self.dilation)
        return crop2d(dxpad, self.pads)


def _first_inside(start, step):
    """The first tap ``start + i·step`` (i >= 0) that is not before 0."""
    return start + step * (((-start).clip(0) + step - 1) // step)


class AvgPool2d(Function):
    """Mean over each KH×KW window.

    ``count_include_pad=True`` (PyTorch's default) divides by KH·KW everywhere
    (by the part of the window inside the padded input, for ``ceil_mode``'s
    last, partial window); False divides by the number of real (unpadded)
    inputs in the window.  ``divisor_override`` divides every window's sum
    by that number instead.
    """

    def __init__(self, kernel, stride, padding, count_include_pad=True, ceil_mode=False,
                 divisor_override=None):
        self.kernel, self.stride, self.padding = kernel, stride, padding
        self.count_include_pad, self.ceil_mode = count_include_pad, ceil_mode
        self.divisor_override = divisor_override

    def _divisor(self, xp, h, w, out_hw, dtype):
        """The window sizes: KH·KW, or the count of real (or real and padded)
        inputs per output position."""
        kh, kw = self.kernel
        (pt, pb), (pl, pr) = self.pads
        ph, pw = self.padding
        if self.divisor_override is not None:
            return xp.asarray(self.divisor_override, dtype=dtype)
        if pb == ph and pr == pw and (self.count_include_pad or self.padding == (0, 0)):
            return xp.asarray(kh * kw, dtype=dtype)
        if self.count_include_pad:      # the padded input counts, ceil_mode's overhang not
            inside = xp.ones((1, 1, h + 2 * ph, w + 2 * pw), dtype=dtype)
            ones = pad2d(inside, ((0, pb - ph), (0, pr - pw)))
        else:
            ones = pad2d(xp.ones((1, 1, h, w), dtype=dtype), self.pads)
        win = sliding_windows(ones, self.kernel, self.stride, _NO_DILATION, out_hw)
        return win.sum(axis=(2, 3))                                # (1, 1, OH, OW)

    def forward(self, x):
        xp = get_array_module(x)
        n, c, h, w = x.shape
        _check_pool_padding("avg_pool2d", self.kernel, self.padding)
        out_hw = check_windows("avg_pool2d", (h, w), self.kernel, self.stride,
                               self.padding, _NO_DILATION, self.ceil_mode)
        self.pads = pool_pads((h, w), out_hw, self.kernel, self.stride, self.padding,
                              _NO_DILATION)
        xpad = pad2d(x, self.pads)
        win = sliding_windows(xpad, self.kernel, self.stride, _NO_DILATION, out_hw)
        self.divisor = self._divisor(xp, h, w, out_hw, x.dtype)
        self.padded_shape = xpad.shape
        return win.sum(axis=(2, 3)) / self.divisor

    def backward(self, g):
        xp = get_array_module(g)
        n, c, oh, ow = g.shape
        kh, kw = self.kernel
        share = (g / self.divisor)[:, :, None, None]               # (N, C, 1, 1, OH, OW)
        dwin = xp.broadcast_to(share, (n, c, kh, kw, oh, ow))
        dxpad = fold_windows(dwin, self.padded_shape, self.stride, _NO_DILATION)
        return crop2d(dxpad, self.pads)
