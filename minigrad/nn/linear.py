"""The dense (fully connected) layer."""
from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..tensor import get_default_dtype
from . import functional as F
from . import init
from .module import Module, Parameter


def empty_parameter(shape, device=None, dtype=None) -> Parameter:
    """A zero-filled Parameter of ``shape`` on ``device`` (default cpu) with
    ``dtype`` (default: minigrad's default dtype), to be filled by ``init``."""
    xp = backend.array_module(device or "cpu")
    dtype = np.dtype(dtype or get_default_dtype())
    if dtype.kind != "f":
        raise TypeError(f"parameters must be floating point, got dtype {dtype}")
    return Parameter(xp.zeros(shape, dtype=dtype))


class Linear(Module):
    """y = x Wᵀ + b (``torch.nn.Linear``).

    Args:
        in_features, out_features: sizes of the last axis of input and output.
        bias: learn an additive bias (default True).
        device, dtype: where and how the parameters are made (default cpu and
            minigrad's default dtype).

    Shapes: input (*, in_features) -> output (*, out_features).
    Parameters: ``weight`` (out_features, in_features) and ``bias``
    (out_features,), both initialized as PyTorch does: U(-1/√in, 1/√in)
    (kaiming_uniform with a = √5 for the weight), drawn from the seeded stream.

    Raises ValueError for a non-positive size.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        for name, n in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
                raise ValueError(f"Linear: {name} must be a positive int, got {n!r}")
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.weight = empty_parameter((out_features, in_features), device, dtype)
        if bias:
            self.bias = empty_parameter((out_features,), device, dtype)
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw the weight and bias again (PyTorch's default initialization)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            init.bias_uniform_(self.bias, self.in_features)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")
