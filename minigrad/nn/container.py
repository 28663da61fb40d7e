"""Containers and shape layers: Sequential, ModuleList, Flatten, Identity."""
from __future__ import annotations

import operator

from .module import Module


def _index(i, n, name):
    """A valid non-negative index into n items (negative counts from the end)."""
    i = operator.index(i)
    if not -n <= i < n:
        raise IndexError(f"{name}: index {i} is out of range for {n} modules")
    return i % n


class _ModuleSequence(Module):
    """Children named "0", "1", ... in order: ``append``, ``len()``, iteration,
    ``seq[i]`` (negative too) and ``seq[i:j]`` (a new container sharing the modules)."""

    def append(self, module: Module):
        if not isinstance(module, Module):
            raise TypeError(f"{type(self).__name__}: expected a Module, got "
                            f"{type(module).__name__}")
        self.add_module(str(len(self._modules)), module)
        return self

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def __getitem__(self, i):
        modules = list(self._modules.values())
        if isinstance(i, slice):
            return self._from_modules(modules[i])
        return modules[_index(i, len(modules), type(self).__name__)]

    @classmethod
    def _from_modules(cls, modules):
        raise NotImplementedError


class Sequential(_ModuleSequence):
    """Modules applied one after the other: ``Sequential(a, b, c)(x) == c(b(a(x)))``.

    Children are named "0", "1", ... in order.  Supports ``len()``, iteration,
    ``seq[i]`` (negative too), ``seq[i:j]`` (a new Sequential sharing the same
    modules) and ``append``.
    """

    def __init__(self, *modules: Module):
        super().__init__()
        for m in modules:
            self.append(m)

    @classmethod
    def _from_modules(cls, modules):
        return cls(*modules)

    def forward(self, x):
        for module in self._modules.values():
            x = module(x)
        return x


class ModuleList(_ModuleSequence):
    """A list of Modules whose parameters are registered (children "0", "1", ...)."""

    def __init__(self, modules=None):
        super().__init__()
        self.extend(modules or ())

    @classmethod
    def _from_modules(cls, modules):
        return cls(modules)

    def extend(self, modules) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

    def forward(self, *args, **kwargs):
        raise NotImplementedError("ModuleList has no forward(): iterate over it instead")


class Identity(Module):
    """Returns its input unchanged."""

    def forward(self, x):
        return x


class Flatten(Module):
    """Merge the axes ``start_dim`` .. ``end_dim`` (inclusive) into one.

    Default: (N, C, H, W) -> (N, C·H·W).  Negative dims count from the end.
    Raises ValueError when a dim is out of range or start_dim comes after end_dim.
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        n = x.ndim
        start, end = self.start_dim, self.end_dim
        if not (-n <= start < n and -n <= end < n):
            raise ValueError(f"Flatten: dims ({start}, {end}) out of range for an input "
                             f"of shape {x.shape}")
        start, end = start % n, end % n
        if start > end:
            raise ValueError(f"Flatten: start_dim {self.start_dim} comes after end_dim "
                             f"{self.end_dim} for an input of shape {x.shape}")
        shape = x.shape[:start] + (-1,) + x.shape[end + 1:]
        if 0 in x.shape[start:end + 1]:
            size = 1
            for s in x.shape[start:end + 1]:
                size *= s
            shape = x.shape[:start] + (size,) + x.shape[end + 1:]
        return x.reshape(*shape)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"
