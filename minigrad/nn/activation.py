"""Activation layers: thin Modules over :mod:`minigrad.nn.functional`."""
from __future__ import annotations

from . import functional as F
from .module import Module


class _InplaceActivation(Module):
    """An elementwise activation with PyTorch's ``inplace`` option (overwrite
    the input): ``function(x, inplace=...)``, the subclass's function of
    :mod:`minigrad.nn.functional`."""

    function = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, x):
        return type(self).function(x, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class ReLU(_InplaceActivation):
    """max(x, 0) elementwise; any shape.  ``inplace=True`` overwrites the input."""

    function = staticmethod(F.relu)


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


class LogSoftmax(Module):
    """log_softmax along ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return F.log_softmax(x, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(LogSoftmax):
    """softmax(-x) along ``dim``."""

    def forward(self, x):
        return F.softmin(x, self.dim)


class SiLU(_InplaceActivation):
    """x·σ(x) elementwise ("swish"); any shape.  ``inplace=True`` overwrites the input."""

    function = staticmethod(F.silu)


class Mish(_InplaceActivation):
    """x·tanh(softplus(x)) elementwise; any shape.  ``inplace=True`` overwrites the input."""

    function = staticmethod(F.mish)


class Hardswish(_InplaceActivation):
    """x·relu6(x + 3)/6 elementwise; any shape.  ``inplace=True`` overwrites the input."""

    function = staticmethod(F.hardswish)


class LogSigmoid(Module):
    """log σ(x) elementwise; any shape."""

    def forward(self, x):
        return F.logsigmoid(x)


class ReLU6(_InplaceActivation):
    """min(max(x, 0), 6) elementwise; any shape.  ``inplace=True`` overwrites the input."""

    function = staticmethod(F.relu6)


class LeakyReLU(Module):
    """x, or negative_slope·x where x <= 0; any shape."""

    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, x):
        return F.leaky_relu(x, self.negative_slope, self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x, or alpha·(exp(x) - 1) where x <= 0; any shape."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, x):
        return F.elu(x, self.alpha, self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class Softplus(Module):
    """(1/beta)·log(1 + exp(beta·x)), x where beta·x > threshold; any shape."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, x):
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """x clipped to [min_val, max_val]; any shape."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, x):
        return F.hardtanh(x, self.min_val, self.max_val, self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}" + \
            (", inplace=True" if self.inplace else "")
