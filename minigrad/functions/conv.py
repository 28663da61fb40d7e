"""2-D convolution (NCHW) by im2col, and the window helpers that pooling shares.

im2col ("image to columns", Chellapilla et al., *High Performance Convolutional
Neural Networks for Document Processing*, 2006) turns a convolution into one
matrix product.  Every output position (n, oh, ow) sees a window of the padded
input of C·KH·KW values; laid out as columns, the convolution becomes

    out[o, (n, oh, ow)] = Σ_k  W[o, k] · cols[k, (n, oh, ow)],   k = (c, i, j)

i.e. ``W.reshape(O, C·KH·KW) @ cols``.  The windows are read without a Python
loop through a strided *view* of the padded input (:func:`sliding_windows`,
built on ``as_strided``, which NumPy and CuPy both have).

Backward (the same product, transposed):

    dW   = dOut @ colsᵀ                       (O, C·KH·KW)
    dcols = Wᵀ @ dOut                         (C·KH·KW, N·OH·OW)
    dx   = col2im(dcols)                      windows added back onto the input

col2im (:func:`fold_windows`) loops over the KH·KW kernel offsets only; each
step adds one strided slice and is vectorized over everything else.  Within
one offset the slice positions are distinct, so plain ``+=`` adds correctly.
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module


def pair(value, name):
    """``value`` as a pair of ints: ``3 -> (3, 3)``, ``(2, 3) -> (2, 3)``.

    Raises TypeError for anything else, naming ``name``.
    """
    if isinstance(value, int) and not isinstance(value, bool):
        return (value, value)
    if isinstance(value, (tuple, list)) and len(value) == 2 and \
            all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        return (int(value[0]), int(value[1]))
    raise TypeError(f"{name} must be an int or a pair of ints, got {value!r}")


def output_size(size, kernel, stride, padding, dilation):
    """Output length along one axis (PyTorch's formula, floor division):

        out = (size + 2·padding - dilation·(kernel - 1) - 1) // stride + 1
    """
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


def pad2d(x, padding, value=0.0):
    """Pad the last two axes of an (N, C, H, W) array by ``padding = (ph, pw)``."""
    ph, pw = padding
    if ph == 0 and pw == 0:
        return x
    xp = get_array_module(x)
    return xp.pad(x, ((0, 0), (0, 0), (ph, ph), (pw, pw)), mode="constant",
                  constant_values=value)


def sliding_windows(xpad, kernel, stride, dilation, out_hw):
    """A read-only strided view (N, C, KH, KW, OH, OW) of the windows of ``xpad``.

    ``view[n, c, i, j, oh, ow] = xpad[n, c, oh·sh + i·dh, ow·sw + j·dw]``.
    No data is copied; reshaping the view copies it (that copy is im2col).
    """
    xp = get_array_module(xpad)
    (kh, kw), (sh, sw), (dh, dw), (oh, ow) = kernel, stride, dilation, out_hw
    n, c = xpad.shape[:2]
    s_n, s_c, s_h, s_w = xpad.strides
    return xp.lib.stride_tricks.as_strided(
        xpad, shape=(n, c, kh, kw, oh, ow),
        strides=(s_n, s_c, s_h * dh, s_w * dw, s_h * sh, s_w * sw))


def fold_windows(dwin, padded_shape, stride, dilation):
    """col2im: add window gradients (N, C, KH, KW, OH, OW) back onto a zero
    array of ``padded_shape`` (N, C, Hp, Wp), where overlapping windows add up.

    A loop over the KH·KW kernel offsets; each step is one vectorized strided
    slice assignment (positions within one offset never collide).
    """
    xp = get_array_module(dwin)
    _, _, kh, kw, oh, ow = dwin.shape
    (sh, sw), (dh, dw) = stride, dilation
    out = xp.zeros(padded_shape, dtype=dwin.dtype)
    for i in range(kh):
        for j in range(kw):
            h0, w0 = i * dh, j * dw
            out[:, :, h0:h0 + sh * (oh - 1) + 1:sh, w0:w0 + sw * (ow - 1) + 1:sw] += \
                dwin[:, :, i, j]
    return out


def crop2d(x, padding):
    """Remove ``padding = (ph, pw)`` from the last two axes (inverse of :func:`pad2d`)."""
    ph, pw = padding
    h, w = x.shape[-2:]
    return x[:, :, ph:h - ph, pw:w - pw]


def check_windows(name, in_hw, kernel, stride, padding, dilation):
    """Validate window options and return the output size (OH, OW).

    Raises ValueError when a kernel, stride or dilation is < 1, a padding is
    negative, or the (dilated) kernel does not fit in the padded input.
    """
    for label, value, low in (("kernel_size", kernel, 1), ("stride", stride, 1),
                              ("dilation", dilation, 1), ("padding", padding, 0)):
        if min(value) < low:
            raise ValueError(f"{name}: {label} must be >= {low}, got {value}")
    out = tuple(output_size(in_hw[a], kernel[a], stride[a], padding[a], dilation[a])
                for a in (0, 1))
    if min(out) < 1:
        span = tuple(dilation[a] * (kernel[a] - 1) + 1 for a in (0, 1))
        padded = tuple(in_hw[a] + 2 * padding[a] for a in (0, 1))
        raise ValueError(f"{name}: the kernel (dilated size {span[0]}x{span[1]}) is larger "
                         f"than the padded input ({padded[0]}x{padded[1]}); the output "
                         f"would have size {out[0]}x{out[1]}")
    return out


class Conv2d(Function):
    """Cross-correlation of x (N, C, H, W) with weight (O, C, KH, KW), plus bias (O,).

    Output (N, O, OH, OW) with OH = (H + 2·ph - dh·(KH - 1) - 1) // sh + 1 (same
    for OW), as ``torch.nn.functional.conv2d`` with ``groups=1``.  Inputs are
    ``(x, weight)`` or ``(x, weight, bias)``.  Shapes are checked by
    :func:`minigrad.nn.functional.conv2d` before this runs.
    """

    def __init__(self, stride=(1, 1), padding=(0, 0), dilation=(1, 1)):
        self.stride, self.padding, self.dilation = stride, padding, dilation

    def forward(self, x, weight, bias=None):
        xp = get_array_module(x)
        n, c, h, w = x.shape
        o, _, kh, kw = weight.shape
        oh, ow = check_windows("conv2d", (h, w), (kh, kw), self.stride, self.padding,
                               self.dilation)
        xpad = pad2d(x, self.padding)
        win = sliding_windows(xpad, (kh, kw), self.stride, self.dilation, (oh, ow))
        # im2col: (C, KH, KW, N, OH, OW) -> (C·KH·KW, N·OH·OW); OW is innermost
        # in the view, so this copy reads the input mostly contiguously.
        cols = win.transpose(1, 2, 3, 0, 4, 5).reshape(c * kh * kw, n * oh * ow)
        w2 = weight.reshape(o, c * kh * kw)
        out = (w2 @ cols).reshape(o, n, oh, ow)
        if bias is not None:
            out += bias.reshape(o, 1, 1, 1)
        self.cols, self.weight = cols, weight
        self.x_shape, self.padded_shape = x.shape, xpad.shape
        return xp.ascontiguousarray(out.transpose(1, 0, 2, 3))

    def backward(self, g):
        n, c, _, _ = self.x_shape
        o, _, kh, kw = self.weight.shape
        oh, ow = g.shape[2:]
        g2 = g.transpose(1, 0, 2, 3).reshape(o, n * oh * ow)     # (O, N·OH·OW)
        needs = self.needs_input_grad
        dx = dw = db = None
        if needs[0]:
            dcols = self.weight.reshape(o, c * kh * kw).T @ g2     # (C·KH·KW, N·OH·OW)
            dwin = dcols.reshape(c, kh, kw, n, oh, ow).transpose(3, 0, 1, 2, 4, 5)
            dxpad = fold_windows(dwin, self.padded_shape, self.stride, self.dilation)
            dx = crop2d(dxpad, self.padding)
        if needs[1]:
            dw = (g2 @ self.cols.T).reshape(self.weight.shape)
        if len(needs) > 2 and needs[2]:
            db = g.sum(axis=(0, 2, 3))
        return (dx, dw) if len(needs) == 2 else (dx, dw, db)
