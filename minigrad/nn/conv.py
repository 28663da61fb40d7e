"""Conv2d: 2-D convolution over (N, C, H, W) inputs, and its functional form.

The arithmetic (im2col, one matrix product, col2im in backward) lives in
:mod:`minigrad.functions.conv`; this file checks shapes, holds the weights and
initializes them as PyTorch does.
"""
from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..dtypes import check_layer_dtype
from ..functions.conv import Conv2d as _Conv2dFn
from ..functions.conv import ConvTranspose2d as _ConvTranspose2dFn
from ..functions.conv import pair
from ..functions.shape import Pad
from ..tensor import Tensor, get_default_dtype
from . import init
from .module import Module, Parameter


def _shape(t):
    return tuple(t.shape)


def _check_padding_mode(name, mode):
    if mode not in ("zeros", "reflect", "replicate", "circular"):
        raise ValueError(f"{name}: padding_mode must be one of 'zeros', 'reflect', "
                         f"'replicate', 'circular', got {mode!r}")
    return mode


def _check_groups(name, groups, in_channels, out_channels):
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"{name}: groups must be a positive int, got {groups!r}")
    for label, value in (("in_channels", in_channels), ("out_channels", out_channels)):
        if value % groups:
            raise ValueError(f"{name}: {label} ({value}) must be divisible by groups "
                             f"({groups})")


def resolve_padding(name, padding, kernel, stride, dilation):
    """``padding`` as ((top, bottom), (left, right)).

    An int or a pair pads both sides; ``"valid"`` is no padding; ``"same"``
    pads dilation·(kernel - 1) in total per axis, the smaller half before and
    the larger after (so an even kernel pads one more at the bottom / right),
    PyTorch's rule, and needs stride 1.
    """
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0), (0, 0)
        if padding != "same":
            raise ValueError(f"{name}: padding must be an int, a pair, 'same' or 'valid', "
                             f"got {padding!r}")
        if stride != (1, 1):
            raise ValueError(f"{name}: padding='same' is not supported for strided "
                             f"convolutions (stride {stride}); use stride 1 or an "
                             "explicit padding")
        totals = [dilation[a] * (kernel[a] - 1) for a in (0, 1)]
        return tuple((t // 2, t - t // 2) for t in totals)
    ph, pw = pair(padding, f"{name}: padding")
    if min(ph, pw) < 0:
        raise ValueError(f"{name}: padding must be >= 0, got {(ph, pw)}")
    return (ph, ph), (pw, pw)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1,  # noqa: A002
           groups=1) -> Tensor:
    """2-D cross-correlation, as ``torch.nn.functional.conv2d``.

    Args:
        input: (N, C_in, H, W), or (C_in, H, W) unbatched (the result is then
            (C_out, OH, OW)).
        weight: (C_out, C_in / groups, KH, KW), same floating dtype as ``input``.
        bias: (C_out,) or None.
        stride, dilation: an int or a pair (height, width).
        padding: an int or a pair (zeros on both sides), ``"valid"`` (none)
            or ``"same"`` (output size = input size; stride 1 only; an even
            dilated kernel pads one more at the bottom and right, as PyTorch).
        groups: G; input and output channels split into G groups, output
            group g seeing only input group g (G = C_in: depthwise).

    Returns:
        (N, C_out, OH, OW) with OH = (H + 2·padding - dilation·(KH - 1) - 1) // stride + 1
        (likewise OW), the formula of the PyTorch documentation.

    Raises:
        ValueError: input or weight is not 4-D, the channel counts disagree
            (C_in ≠ groups · weight's C_in / groups), C_out not divisible by
            groups, the bias shape is not (C_out,), an unknown padding string,
            "same" with a stride, or the kernel does not fit in the padded
            input (the message names the shapes).
        TypeError: input and weight have different dtypes; stride, padding or
            dilation is not an int or a pair of ints.
    """
    if input.ndim == 3:         # unbatched (C, H, W), as PyTorch accepts
        return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation,
                      groups).squeeze(0)
    if input.ndim != 4:
        raise ValueError(f"conv2d: expected a 3-D (unbatched) or 4-D input (N, C, H, W), "
                         f"got shape {_shape(input)}")
    if weight.ndim != 4:
        raise ValueError(f"conv2d: expected a 4-D weight (C_out, C_in, KH, KW), got shape "
                         f"{_shape(weight)}")
    if not isinstance(groups, int) or isinstance(groups, bool) or groups < 1:
        raise ValueError(f"conv2d: groups must be a positive int, got {groups!r}")
    if input.shape[1] != weight.shape[1] * groups:
        raise ValueError(f"conv2d: input of shape {_shape(input)} has {input.shape[1]} "
                         f"channels, but weight of shape {_shape(weight)} expects "
                         f"{weight.shape[1] * groups} input channels (groups={groups})")
    if weight.shape[0] % groups:
        raise ValueError(f"conv2d: weight of shape {_shape(weight)} has {weight.shape[0]} "
                         f"output channels, not divisible by groups={groups}")
    check_layer_dtype("conv2d", input, weight=weight, bias=bias)
    if bias is not None and _shape(bias) != (weight.shape[0],):
        raise ValueError(f"conv2d: bias of shape {_shape(bias)} does not match the "
                         f"{weight.shape[0]} output channels of weight {_shape(weight)}; "
                         f"expected shape ({weight.shape[0]},)")
    stride, dilation = pair(stride, "conv2d: stride"), pair(dilation, "conv2d: dilation")
    pads = resolve_padding("conv2d", padding, tuple(weight.shape[2:]), stride, dilation)
    fn = _Conv2dFn(stride, pads, dilation, groups)
    return fn(input, weight) if bias is None else fn(input, weight, bias)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1,  # noqa: A002
           groups=1) -> Tensor:
    """1-D cross-correlation, as ``torch.nn.functional.conv1d``: input
    (N, C_in, L), weight (C_out, C_in / groups, K), bias (C_out,) or None ->
    (N, C_out, OL), OL = (L + 2·padding - dilation·(K - 1) - 1) // stride + 1.

    It is :func:`conv2d` on a height-1 image: (N, C, 1, L) with a 1×K kernel.
    stride, padding (an int, "valid" or "same") and dilation are ints.
    Raises ValueError for an input or weight that is not 3-D (and conv2d's errors).
    """
    if input.ndim == 2:         # unbatched (C, L), as PyTorch accepts
        return conv1d(input.unsqueeze(0), weight, bias, stride, padding, dilation,
                      groups).squeeze(0)
    if input.ndim != 3 or weight.ndim != 3:
        raise ValueError(f"conv1d: expected a 2-D (unbatched) or 3-D input (N, C, L) and "
                         f"a 3-D weight (C_out, C_in, "
                         f"K), got shapes {_shape(input)} and {_shape(weight)}")
    one = padding if isinstance(padding, str) else (0, _single(padding, "padding"))
    out = conv2d(input.unsqueeze(2), weight.unsqueeze(2), bias,
                 (1, _single(stride, "stride")), one, (1, _single(dilation, "dilation")),
                 groups)
    return out.squeeze(2)


def _at_least_one(layer, name, value):
    """A layer's kernel size: each entry >= 1 (0 would give an empty weight)."""
    if min(value if isinstance(value, tuple) else (value,)) < 1:
        raise ValueError(f"{layer}: {name} must be >= 1, got {value}")


def _single(value, name):
    """An int, or a 1-tuple holding one, as an int (conv1d's arguments)."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"conv1d: {name} must be an int, got {value!r}")
    return value


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0,  # noqa: A002
                     output_padding=0, groups=1, dilation=1) -> Tensor:
    """2-D transposed convolution, as ``torch.nn.functional.conv_transpose2d``
    (the arguments in its order).

    Args:
        input: (N, C_in, H, W).
        weight: (C_in, C_out / groups, KH, KW).
        bias: (C_out,) or None.
        stride, padding, output_padding, dilation: an int or a pair.

    Returns:
        (N, C_out, OH, OW), OH = (H - 1)·stride - 2·padding + dilation·(KH - 1)
        + output_padding + 1 (likewise OW).

    Raises:
        ValueError: input or weight not 4-D, C_in not weight's first size,
            C_in not divisible by groups, a bias not of shape (C_out,),
            output_padding not smaller than stride or dilation.
        TypeError: input and weight of different dtypes.
    """
    if input.ndim == 3:         # unbatched (C_in, H, W), as PyTorch accepts
        return conv_transpose2d(input.unsqueeze(0), weight, bias, stride, padding,
                                output_padding, groups, dilation).squeeze(0)
    if input.ndim != 4 or weight.ndim != 4:
        raise ValueError(f"conv_transpose2d: expected a 3-D (unbatched) or 4-D input "
                         f"(N, C_in, H, W) and "
                         f"weight (C_in, C_out/groups, KH, KW), got shapes "
                         f"{_shape(input)} and {_shape(weight)}")
    if input.shape[1] != weight.shape[0] or weight.shape[0] % groups:
        raise ValueError(f"conv_transpose2d: input of shape {_shape(input)} has "
                         f"{input.shape[1]} channels but weight of shape {_shape(weight)} "
                         f"expects {weight.shape[0]} (divisible by groups={groups})")
    check_layer_dtype("conv_transpose2d", input, weight=weight, bias=bias)
    cout = weight.shape[1] * groups
    if bias is not None and _shape(bias) != (cout,):
        raise ValueError(f"conv_transpose2d: bias of shape {_shape(bias)}; expected ({cout},)")
    stride = pair(stride, "conv_transpose2d: stride")
    dilation = pair(dilation, "conv_transpose2d: dilation")
    out_pad = pair(output_padding, "conv_transpose2d: output_padding")
    pads = pair(padding, "conv_transpose2d: padding")
    for a in (0, 1):
        if out_pad[a] >= max(stride[a], dilation[a]):
            raise ValueError(f"conv_transpose2d: output_padding {out_pad} must be smaller "
                             f"than stride {stride} or dilation {dilation}")
    fn = _ConvTranspose2dFn(stride, pads, dilation, groups, out_pad)
    return fn(input, weight) if bias is None else fn(input, weight, bias)


def _empty_parameter(shape, device, dtype) -> Parameter:
    """A zero-filled Parameter, to be filled by :mod:`minigrad.nn.init`."""
    dtype = np.dtype(dtype or get_default_dtype())
    if dtype.kind != "f":
        raise TypeError(f"Conv2d: parameters must be floating point, got dtype {dtype}")
    return Parameter(backend.array_module(device or "cpu").zeros(shape, dtype=dtype))


def _add_parameters(module, weight_shape, out_channels, bias, device, dtype) -> None:
    """``module.weight`` of ``weight_shape`` and ``module.bias`` (out_channels,) or
    None, drawn by the module's ``reset_parameters``."""
    module.weight = _empty_parameter(weight_shape, device, dtype)
    if bias:
        module.bias = _empty_parameter((out_channels,), device, dtype)
    else:
        module.register_parameter("bias", None)
    module.reset_parameters()


class Conv2d(Module):
    """2-D convolution layer over (N, C_in, H, W) inputs, as ``torch.nn.Conv2d``.

    Args:
        in_channels, out_channels: C_in and C_out.
        (The arguments come in ``torch.nn.Conv2d``'s order.)
        kernel_size, stride, dilation: an int or a pair (height, width).
        padding: an int, a pair, ``"valid"`` or ``"same"`` (see :func:`conv2d`).
        groups: split the channels into this many groups (both channel
            counts must be divisible by it).
        bias: whether to add a learned bias per output channel.
        padding_mode: what the padding holds: "zeros", or the input's
            "reflect"ion, "replicate"d edge or "circular" wrap-around
            (:func:`minigrad.nn.functional.pad`'s modes).
        device, dtype: where and how the parameters are made (default cpu
            and minigrad's default dtype).

    Attributes:
        weight: Parameter (C_out, C_in / groups, KH, KW).
        bias: Parameter (C_out,) or None.

    Initialization (PyTorch's default): ``kaiming_uniform_(a=√5)``, i.e.
    U(-b, b) with b = gain·√(3/fan_in), gain = √(2/(1 + a²)), which is
    b = 1/√fan_in; the bias is U(-1/√fan_in, 1/√fan_in).  fan_in = C_in/groups·KH·KW.
    (He et al. 2015 for the Kaiming scheme.)
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        self.padding_mode = _check_padding_mode("Conv2d", padding_mode)
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Conv2d: {name} must be a positive int, got {value!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = pair(kernel_size, "Conv2d: kernel_size")
        self.stride = pair(stride, "Conv2d: stride")
        self.dilation = pair(dilation, "Conv2d: dilation")
        for name in ("kernel_size", "stride", "dilation"):
            if min(getattr(self, name)) < 1:
                raise ValueError(f"Conv2d: {name} must be >= 1, got {getattr(self, name)}")
        _check_groups("Conv2d", groups, in_channels, out_channels)
        self.groups = groups
        # checks the padding ("same" with a stride, negative values) now, not at forward
        resolve_padding("Conv2d", padding, self.kernel_size, self.stride, self.dilation)
        self.padding = padding if isinstance(padding, str) else pair(padding, "Conv2d: padding")
        _add_parameters(self, (out_channels, in_channels // groups, *self.kernel_size),
                        out_channels, bias, device, dtype)

    def reset_parameters(self, generator=None) -> None:
        """Draw the weight and bias again (PyTorch's default initialization), from
        minigrad's seeded stream or ``generator``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5), generator=generator)
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight)
            init.bias_uniform_(self.bias, fan_in, generator=generator)

    def forward(self, x: Tensor) -> Tensor:
        if self.padding_mode == "zeros":
            return conv2d(x, self.weight, self.bias, self.stride, self.padding,
                          self.dilation, self.groups)
        (top, bottom), (left, right) = resolve_padding(
            "Conv2d", self.padding, self.kernel_size, self.stride, self.dilation)
        x = Pad((left, right, top, bottom), self.padding_mode, 0.0)(x)
        return conv2d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0, 0):
            text += f", padding={self.padding!r}"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode!r}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        return text


class Conv1d(Module):
    """1-D convolution layer over (N, C_in, L) inputs, as ``torch.nn.Conv1d``
    (arguments in its order); weight (C_out, C_in / groups, K), bias (C_out,),
    initialized as :class:`Conv2d` (fan_in = C_in/groups·K)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, groups=1, bias=True, padding_mode="zeros", device=None,
                 dtype=None):
        super().__init__()
        self.padding_mode = _check_padding_mode("Conv1d", padding_mode)
        _check_groups("Conv1d", groups, in_channels, out_channels)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = _single(kernel_size, "kernel_size")
        _at_least_one("Conv1d", "kernel_size", self.kernel_size)
        self.stride, self.dilation = _single(stride, "stride"), _single(dilation, "dilation")
        self.padding = padding if isinstance(padding, str) else _single(padding, "padding")
        _add_parameters(self, (out_channels, in_channels // groups, self.kernel_size),
                        out_channels, bias, device, dtype)

    reset_parameters = Conv2d.reset_parameters

    def forward(self, x: Tensor) -> Tensor:
        if self.padding_mode == "zeros":
            return conv1d(x, self.weight, self.bias, self.stride, self.padding,
                          self.dilation, self.groups)
        two_d = self.padding if isinstance(self.padding, str) else (0, self.padding)
        _, (left, right) = resolve_padding("Conv1d", two_d, (1, self.kernel_size),
                                           (1, self.stride), (1, self.dilation))
        x = Pad((left, right), self.padding_mode, 0.0)(x)
        return conv1d(x, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding!r}")
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode!r}"
        return text


class ConvTranspose2d(Module):
    """2-D transposed convolution layer, as ``torch.nn.ConvTranspose2d``
    (arguments in its order): weight (C_in, C_out / groups, KH, KW), bias
    (C_out,), initialized as PyTorch does (kaiming_uniform_(a=√5), fan_in
    computed from the weight's shape: C_out/groups·KH·KW)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 output_padding=0, groups=1, bias=True, dilation=1, padding_mode="zeros",
                 device=None, dtype=None):
        super().__init__()
        if padding_mode != "zeros":               # PyTorch's rule too
            raise ValueError(f"ConvTranspose2d: only padding_mode='zeros' is supported, got "
                             f"{padding_mode!r}")
        self.padding_mode = padding_mode
        _check_groups("ConvTranspose2d", groups, in_channels, out_channels)
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = pair(kernel_size, "ConvTranspose2d: kernel_size")
        _at_least_one("ConvTranspose2d", "kernel_size", self.kernel_size)
        self.stride = pair(stride, "ConvTranspose2d: stride")
        self.padding = pair(padding, "ConvTranspose2d: padding")
        self.output_padding = pair(output_padding, "ConvTranspose2d: output_padding")
        self.dilation = pair(dilation, "ConvTranspose2d: dilation")
        _add_parameters(self, (in_channels, out_channels // groups, *self.kernel_size),
                        out_channels, bias, device, dtype)

    reset_parameters = Conv2d.reset_parameters

    def forward(self, x: Tensor) -> Tensor:
        return conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding,
                                self.output_padding, self.groups, self.dilation)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}")
