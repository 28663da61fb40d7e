"""Unfold (im2col) and Fold (col2im) as differentiable functions
(``torch.nn.functional.unfold`` / ``fold``).

Unfold cuts an (N, C, H, W) input into its sliding KH×KW blocks and lays each
block out as a column: (N, C·KH·KW, L), L = OH·OW blocks, the channel
varying slowest, then the kernel row, then the kernel column (PyTorch's
order).  Fold is its adjoint: it adds every column back onto its block,
overlaps summing up.  So each is the other's backward.  The window
arithmetic is shared with convolution (:mod:`minigrad.functions.conv`).
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module
from .conv import crop2d, fold_windows, pad2d, sliding_windows


class Unfold(Function):
    """(N, C, H, W) -> (N, C·KH·KW, OH·OW); ``out_hw`` is checked by the caller."""

    def __init__(self, kernel, dilation, padding, stride, out_hw):
        self.kernel, self.dilation, self.padding = kernel, dilation, padding
        self.stride, self.out_hw = stride, out_hw

    def forward(self, x):
        n, c = x.shape[:2]
        xpad = pad2d(x, self.padding)
        self.padded_shape = xpad.shape
        win = sliding_windows(xpad, self.kernel, self.stride, self.dilation, self.out_hw)
        kh, kw = self.kernel
        return get_array_module(x).ascontiguousarray(
            win.reshape(n, c * kh * kw, self.out_hw[0] * self.out_hw[1]))

    def backward(self, g):
        n, ckk, _ = g.shape
        kh, kw = self.kernel
        dwin = g.reshape(n, ckk // (kh * kw), kh, kw, *self.out_hw)
        return crop2d(fold_windows(dwin, self.padded_shape, self.stride, self.dilation),
                      self.padding)


class Fold(Function):
    """(N, C·KH·KW, OH·OW) -> (N, C, H, W), overlapping blocks summed."""

    def __init__(self, output_size, kernel, dilation, padding, stride, out_hw):
        self.output_size, self.kernel, self.dilation = output_size, kernel, dilation
        self.padding, self.stride, self.out_hw = padding, stride, out_hw

    def forward(self, cols):
        n, ckk, _ = cols.shape
        kh, kw = self.kernel
        c = ckk // (kh * kw)
        (ph, pw), (h, w) = self.padding, self.output_size
        dwin = cols.reshape(n, c, kh, kw, *self.out_hw)
        self.padded_shape = (n, c, h + 2 * ph, w + 2 * pw)
        out = fold_windows(dwin, self.padded_shape, self.stride, self.dilation)
        return get_array_module(cols).ascontiguousarray(crop2d(out, self.padding))

    def backward(self, g):
        n, c = g.shape[:2]
        kh, kw = self.kernel
        win = sliding_windows(pad2d(g, self.padding), self.kernel, self.stride,
                              self.dilation, self.out_hw)
        return win.reshape(n, c * kh * kw, self.out_hw[0] * self.out_hw[1])
