"""Activation layers: thin Modules over :mod:`minigrad.nn.functional`."""
from __future__ import annotations

from . import functional as F
from .module import Module


class ReLU(Module):
    """max(x, 0) elementwise; any shape."""

    def forward(self, x):
        return F.relu(x)


class Tanh(Module):
    def forward(self, x):
        return F.tanh(x)


class Sigmoid(Module):
    def forward(self, x):
        return F.sigmoid(x)


class GELU(Module):
    """x·Φ(x) (``approximate="none"``, exact, PyTorch's default) or the tanh
    approximation (``approximate="tanh"``); any shape."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"GELU: approximate must be 'none' or 'tanh', got "
                             f"{approximate!r}")
        self.approximate = approximate

    def forward(self, x):
        return F.gelu(x, self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class Softmax(Module):
    """softmax along ``dim`` (NumPy's ``axis=`` is accepted too)."""

    def __init__(self, dim: int = -1, *, axis=None):
        super().__init__()
        self.dim = dim if axis is None else axis

    def forward(self, x):
        return F.softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"
