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


def output_size(size, kernel, stride, padding, dilation, ceil_mode=False):
    """Output length along one axis (PyTorch's formula):

        out = (size + 2·padding - dilation·(kernel - 1) - 1) // stride + 1

    ``padding`` is one int (both sides) or a pair (before, after), whose sum
    replaces 2·padding.  ``ceil_mode`` (pooling) rounds the division up, but
    drops a last window that would start beyond the input and its leading
    padding, as PyTorch does.
    """
    before, after = side_pads(padding)
    span = size + before + after - dilation * (kernel - 1) - 1
    if not ceil_mode:
        return span // stride + 1
    out = -(-span // stride) + 1
    if (out - 1) * stride >= size + before:
        out -= 1
    return out


def side_pads(padding):
    """One axis's padding as (before, after): ``2 -> (2, 2)``, ``(1, 2) -> (1, 2)``."""
    if isinstance(padding, (tuple, list)):
        return int(padding[0]), int(padding[1])
    return int(padding), int(padding)


def pads4(padding):
    """Padding of the last two axes as ((top, bottom), (left, right)).

    Accepts ``(ph, pw)`` (symmetric) or ``((top, bottom), (left, right))``.
    """
    return side_pads(padding[0]), side_pads(padding[1])


def pad2d(x, padding, value=0.0):
    """Pad the last two axes of an (N, C, H, W) array by ``padding``: ``(ph, pw)``
    on both sides, or ``((top, bottom), (left, right))``."""
    (pt, pb), (pl, pr) = pads4(padding)
    if pt == pb == pl == pr == 0:
        return x
    xp = get_array_module(x)
    return xp.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), mode="constant",
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
    """Remove ``padding`` (as in :func:`pad2d`) from the last two axes (its inverse)."""
    (pt, pb), (pl, pr) = pads4(padding)
    h, w = x.shape[-2:]
    return x[:, :, pt:h - pb, pl:w - pr]


def check_windows(name, in_hw, kernel, stride, padding, dilation, ceil_mode=False):
    """Validate window options and return the output size (OH, OW).

    ``padding`` is ``(ph, pw)`` or ``((top, bottom), (left, right))``.

    Raises ValueError when a kernel, stride or dilation is < 1, a padding is
    negative, or the (dilated) kernel does not fit in the padded input.
    """
    pads = pads4(padding)
    for label, value, low in (("kernel_size", kernel, 1), ("stride", stride, 1),
                              ("dilation", dilation, 1), ("padding", pads[0] + pads[1], 0)):
        if min(value) < low:
            raise ValueError(f"{name}: {label} must be >= {low}, got {value}")
    out = tuple(output_size(in_hw[a], kernel[a], stride[a], pads[a], dilation[a], ceil_mode)
                for a in (0, 1))
    if min(out) < 1:
        span = tuple(dilation[a] * (kernel[a] - 1) + 1 for a in (0, 1))
        padded = tuple(in_hw[a] + sum(pads[a]) for a in (0, 1))
        raise ValueError(f"{name}: the kernel (dilated size {span[0]}x{span[1]}) is larger "
                         f"than the padded input ({padded[0]}x{padded[1]}); the output "
                         f"would have size {out[0]}x{out[1]}")
    return out


class Conv2d(Function):
    """Cross-correlation of x (N, C, H, W) with weight (O, C/G, KH, KW), plus bias (O,).

    Output (N, O, OH, OW) with OH = (H + pt + pb - dh·(KH - 1) - 1) // sh + 1
    (same for OW), as ``torch.nn.functional.conv2d``.  ``padding`` is
    ``(ph, pw)`` or ``((top, bottom), (left, right))``.  With ``groups`` G the
    channels split into G groups: output channels [g·O/G, (g+1)·O/G) see only
    input channels [g·C/G, (g+1)·C/G); im2col then gives G products at once,
    ``(G, O/G, C/G·KH·KW) @ (G, C/G·KH·KW, N·OH·OW)``.  Inputs are
    ``(x, weight)`` or ``(x, weight, bias)``.  Shapes are checked by
    :func:`minigrad.nn.functional.conv2d` before this runs.
    """

    def __init__(self, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.groups = groups

    def forward(self, x, weight, bias=None):
        xp = get_array_module(x)
        n, c, h, w = x.shape
        o, cg, kh, kw = weight.shape
        g = self.groups
        oh, ow = check_windows("conv2d", (h, w), (kh, kw), self.stride, self.padding,
                               self.dilation)
        xpad = pad2d(x, self.padding)
        win = sliding_windows(xpad, (kh, kw), self.stride, self.dilation, (oh, ow))
        # im2col: (C, KH, KW, N, OH, OW) -> (G, C/G·KH·KW, N·OH·OW); OW is
        # innermost in the view, so this copy reads the input mostly contiguously.
        cols = win.transpose(1, 2, 3, 0, 4, 5).reshape(g, cg * kh * kw, n * oh * ow)
        w3 = weight.reshape(g, o // g, cg * kh * kw)
        out = (w3 @ cols).reshape(o, n, oh, ow)
        if bias is not None:
            out += bias.reshape(o, 1, 1, 1)
        self.cols, self.weight = cols, weight
        self.x_shape, self.padded_shape = x.shape, xpad.shape
        return xp.ascontiguousarray(out.transpose(1, 0, 2, 3))

    def backward(self, grad):
        xp = get_array_module(grad)
        n, c, _, _ = self.x_shape
        o, cg, kh, kw = self.weight.shape
        g = self.groups
        oh, ow = grad.shape[2:]
        g3 = grad.transpose(1, 0, 2, 3).reshape(g, o // g, n * oh * ow)   # (G, O/G, M)
        needs = self.needs_input_grad
        dx = dw = db = None
        if needs[0]:
            w3 = self.weight.reshape(g, o // g, cg * kh * kw)
            dcols = xp.swapaxes(w3, 1, 2) @ g3                    # (G, C/G·KH·KW, M)
            dwin = dcols.reshape(c, kh, kw, n, oh, ow).transpose(3, 0, 1, 2, 4, 5)
            dxpad = fold_windows(dwin, self.padded_shape, self.stride, self.dilation)
            dx = crop2d(dxpad, self.padding)
        if needs[1]:
            dw = (g3 @ xp.swapaxes(self.cols, 1, 2)).reshape(self.weight.shape)
        if len(needs) > 2 and needs[2]:
            db = grad.sum(axis=(0, 2, 3))
        return (dx, dw) if len(needs) == 2 else (dx, dw, db)


class ConvTranspose2d(Function):
    """Transposed convolution (the adjoint of :class:`Conv2d`): x (N, C_in,
    H, W) with weight (C_in, C_out/G, KH, KW), plus bias (C_out,).

    Forward is Conv2d's input gradient: every input pixel scatters a
    weight-scaled KH×KW patch into the output (one matrix product, then
    col2im), so OH = (H - 1)·sh - pt - pb + dh·(KH - 1) + output_padding + 1
    (``torch.nn.functional.conv_transpose2d``).  Backward is therefore a
    plain convolution: dx = conv2d(g, weight), and dweight is the product of
    x with the windows of g that conv2d reads.
    """

    def __init__(self, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1,
                 output_padding=(0, 0)):
        self.stride, self.padding, self.dilation = stride, padding, dilation
        self.groups, self.output_padding = groups, output_padding

    def forward(self, x, weight, bias=None):
        xp = get_array_module(x)
        n, cin, h, w = x.shape
        _, cog, kh, kw = weight.shape
        g, cout = self.groups, cog * self.groups
        (pt, pb), (pl, pr) = pads4(self.padding)
        (sh, sw), (dh, dw), (oph, opw) = self.stride, self.dilation, self.output_padding
        padded = (n, cout, (h - 1) * sh + dh * (kh - 1) + 1 + oph,
                  (w - 1) * sw + dw * (kw - 1) + 1 + opw)
        if padded[2] - pt - pb < 1 or padded[3] - pl - pr < 1:
            raise ValueError(f"conv_transpose2d: padding {self.padding} leaves no output "
                             f"for an input of shape {tuple(x.shape)}")
        x3 = x.transpose(1, 0, 2, 3).reshape(g, cin // g, n * h * w)        # (G, C_in/G, M)
        w3 = weight.reshape(g, cin // g, cog * kh * kw)
        cols = xp.swapaxes(w3, 1, 2) @ x3                                    # (G, ·, M)
        win = cols.reshape(cout, kh, kw, n, h, w).transpose(3, 0, 1, 2, 4, 5)
        out = crop2d(fold_windows(win, padded, self.stride, self.dilation), self.padding)
        if bias is not None:
            out = out + bias.reshape(1, cout, 1, 1)
        self.x3, self.weight, self.x_hw = x3, weight, (h, w)
        return xp.ascontiguousarray(out)

    def backward(self, grad):
        xp = get_array_module(grad)
        conv = Conv2d(self.stride, self.padding, self.dilation, self.groups)
        h, w = self.x_hw
        full = conv.forward(grad, self.weight)           # the adjoint of the adjoint
        dx = full[:, :, :h, :w]
        cols = conv.cols
        if full.shape[2:] != (h, w):    # output_padding: windows past the input's size
            n, oh, ow = full.shape[0], full.shape[2], full.shape[3]
            cols = cols.reshape(cols.shape[0], cols.shape[1], n, oh, ow)[..., :h, :w]
            cols = cols.reshape(cols.shape[0], cols.shape[1], n * h * w)
        needs = self.needs_input_grad
        dw = (self.x3 @ xp.swapaxes(cols, 1, 2)).reshape(self.weight.shape) \
            if needs[1] else None
        if len(needs) == 2:
            return dx, dw
        return dx, dw, grad.sum(axis=(0, 2, 3)) if needs[2] else None
