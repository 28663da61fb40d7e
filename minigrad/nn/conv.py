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
from ..functions.conv import pair
from ..tensor import Tensor, get_default_dtype
from . import init
from .module import Module, Parameter


def _shape(t):
    return tuple(t.shape)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1) -> Tensor:  # noqa: A002
    """2-D cross-correlation, as ``torch.nn.functional.conv2d`` with ``groups=1``.

    Args:
        input: (N, C_in, H, W).
        weight: (C_out, C_in, KH, KW), same floating dtype as ``input``.
        bias: (C_out,) or None.
        stride, padding, dilation: an int or a pair (height, width); padding
            adds zeros on both sides.

    Returns:
        (N, C_out, OH, OW) with OH = (H + 2·padding - dilation·(KH - 1) - 1) // stride + 1
        (likewise OW), the formula of the PyTorch documentation.

    Raises:
        ValueError: input or weight is not 4-D, the channel counts disagree,
            the bias shape is not (C_out,), or the kernel does not fit in the
            padded input (the message names the shapes).
        TypeError: input and weight have different dtypes; stride, padding or
            dilation is not an int or a pair of ints.
    """
    if input.ndim != 4:
        raise ValueError(f"conv2d: expected a 4-D input (N, C, H, W), got shape "
                         f"{_shape(input)}")
    if weight.ndim != 4:
        raise ValueError(f"conv2d: expected a 4-D weight (C_out, C_in, KH, KW), got shape "
                         f"{_shape(weight)}")
    if input.shape[1] != weight.shape[1]:
        raise ValueError(f"conv2d: input of shape {_shape(input)} has {input.shape[1]} "
                         f"channels, but weight of shape {_shape(weight)} expects "
                         f"{weight.shape[1]} input channels")
    check_layer_dtype("conv2d", input, weight=weight, bias=bias)
    if bias is not None and _shape(bias) != (weight.shape[0],):
        raise ValueError(f"conv2d: bias of shape {_shape(bias)} does not match the "
                         f"{weight.shape[0]} output channels of weight {_shape(weight)}; "
                         f"expected shape ({weight.shape[0]},)")
    fn = _Conv2dFn(pair(stride, "conv2d: stride"), pair(padding, "conv2d: padding"),
                   pair(dilation, "conv2d: dilation"))
    return fn(input, weight) if bias is None else fn(input, weight, bias)


def _empty_parameter(shape, device, dtype) -> Parameter:
    """A zero-filled Parameter, to be filled by :mod:`minigrad.nn.init`."""
    dtype = np.dtype(dtype or get_default_dtype())
    if dtype.kind != "f":
        raise TypeError(f"Conv2d: parameters must be floating point, got dtype {dtype}")
    return Parameter(backend.array_module(device or "cpu").zeros(shape, dtype=dtype))


class Conv2d(Module):
    """2-D convolution layer over (N, C_in, H, W) inputs, as ``torch.nn.Conv2d``.

    Args:
        in_channels, out_channels: C_in and C_out.
        kernel_size, stride, padding, dilation: an int or a pair (height, width).
        bias: whether to add a learned bias per output channel.
        device, dtype: where and how the parameters are made (default cpu
            and minigrad's default dtype).

    Attributes:
        weight: Parameter (C_out, C_in, KH, KW).
        bias: Parameter (C_out,) or None.

    Initialization (PyTorch's default): ``kaiming_uniform_(a=√5)``, i.e.
    U(-b, b) with b = gain·√(3/fan_in), gain = √(2/(1 + a²)), which is
    b = 1/√fan_in; the bias is U(-1/√fan_in, 1/√fan_in).  fan_in = C_in·KH·KW.
    (He et al. 2015 for the Kaiming scheme.)
    """

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0,
                 dilation=1, bias=True, device=None, dtype=None):
        super().__init__()
        for name, value in (("in_channels", in_channels), ("out_channels", out_channels)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Conv2d: {name} must be a positive int, got {value!r}")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = pair(kernel_size, "Conv2d: kernel_size")
        self.stride = pair(stride, "Conv2d: stride")
        self.padding = pair(padding, "Conv2d: padding")
        self.dilation = pair(dilation, "Conv2d: dilation")
        for name in ("kernel_size", "stride", "dilation"):
            if min(getattr(self, name)) < 1:
                raise ValueError(f"Conv2d: {name} must be >= 1, got {getattr(self, name)}")
        if min(self.padding) < 0:
            raise ValueError(f"Conv2d: padding must be >= 0, got {self.padding}")
        kh, kw = self.kernel_size
        self.weight = _empty_parameter((out_channels, in_channels, kh, kw), device, dtype)
        if bias:
            self.bias = _empty_parameter((out_channels,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self, generator=None) -> None:
        """Draw the weight and bias again (PyTorch's default initialization), from
        minigrad's seeded stream or ``generator``."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5), generator=generator)
        if self.bias is not None:
            fan_in, _ = init.calculate_fan_in_and_fan_out(self.weight)
            init.bias_uniform_(self.bias, fan_in, generator=generator)

    def forward(self, x: Tensor) -> Tensor:
        return conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation)

    def extra_repr(self) -> str:
        text = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}")
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.bias is None:
            text += ", bias=False"
        return text
