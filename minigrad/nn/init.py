"""Weight initializations, PyTorch's defaults (``torch.nn.init``).

Every function fills a Tensor in place (the trailing underscore says so) and
returns it.  The numbers are drawn on the CPU from minigrad's seeded stream
(:func:`minigrad.random.get_generator`), or from ``generator`` when given, in
float64, then cast and copied to the tensor's dtype and device: the same seed
gives the same model on every device.
"""
from __future__ import annotations

import math

from .. import backend
from .. import random as _random


def _fill(tensor, values):
    tensor.data[...] = backend.to_device(values.astype(tensor.dtype), tensor.device)
    return tensor


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill with U(a, b)."""
    rng = _random.get_generator("cpu", generator)
    return _fill(tensor, rng.uniform(a, b, size=tensor.shape))


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill with N(mean, std²)."""
    rng = _random.get_generator("cpu", generator)
    return _fill(tensor, rng.normal(mean, std, size=tensor.shape))


def zeros_(tensor):
    tensor.data[...] = 0
    return tensor


def ones_(tensor):
    tensor.data[...] = 1
    return tensor


def calculate_fan_in_and_fan_out(tensor):
    """fan_in = shape[1]·receptive field, fan_out = shape[0]·receptive field,
    receptive field = prod(shape[2:]) (1 for a Linear weight (out, in)).

    Raises ValueError for fewer than 2 dimensions.
    """
    if tensor.ndim < 2:
        raise ValueError(f"fan in and fan out need a tensor of at least 2 dimensions, "
                         f"got shape {tensor.shape}")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (PyTorch's table): linear/sigmoid 1,
    tanh 5/3, relu √2, leaky_relu √(2 / (1 + slope²)) (slope default 0.01)."""
    if nonlinearity in ("linear", "sigmoid", "conv1d", "conv2d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3.0
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1.0 + slope ** 2))
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None):
    """He et al. (2015, arXiv:1502.01852) uniform initialization:
    U(-bound, bound), bound = gain·√(3 / fan), gain = calculate_gain(nonlinearity, a).

    PyTorch's Linear and Conv2d use a = √5, which gives bound = 1/√fan_in.
    """
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming_uniform_: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan)
    return uniform_(tensor, -bound, bound, generator)


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot & Bengio (2010): U(-a, a), a = gain·√(6 / (fan_in + fan_out))."""
    fan_in, fan_out = calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def bias_uniform_(bias, fan_in: int, generator=None):
    """PyTorch's default bias of Linear and Conv2d: U(±1/√fan_in) (0 when fan_in = 0)."""
    bound = 1.0 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return uniform_(bias, -bound, bound, generator)
