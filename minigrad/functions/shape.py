"""Shape functions: reshape, transpose, broadcast_to, squeeze/unsqueeze,
concatenate/stack, and indexing.  None of them changes a value; backward only
moves gradients back to where the values came from."""
from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module, scatter_add
from .reduction import normalize_axis


def _check_sizes(name, shape, minus_one_means):
    """Sizes must be ints >= 0, or -1 (NumPy would read any negative size as -1)."""
    for n in shape:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"{name}: shape must be ints, got {shape}")
        if n < -1:
            raise ValueError(f"{name}: invalid size {n} in shape {shape}; sizes must be "
                             f">= 0, or {minus_one_means}")


class Reshape(Function):
    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, a):
        _check_sizes("reshape", self.shape, "-1 for one inferred size")
        self.in_shape = a.shape
        try:
            return a.reshape(self.shape)
        except ValueError:
            raise ValueError(f"reshape: cannot reshape a tensor of shape {tuple(a.shape)} "
                             f"({a.size} elements) into shape {self.shape}") from None

    def backward(self, g):
        return g.reshape(self.in_shape)


class Transpose(Function):
    """Permute axes; ``axes=None`` reverses them (``.T``)."""

    def __init__(self, axes=None):
        self.axes = None if axes is None else tuple(axes)

    def forward(self, a):
        if self.axes is not None and sorted(ax % max(a.ndim, 1) for ax in self.axes) \
                != list(range(a.ndim)):
            raise ValueError(f"transpose: axes {self.axes} are not a permutation of the "
                             f"{a.ndim} axes of a tensor of shape {tuple(a.shape)}")
        return a.transpose(self.axes)

    def backward(self, g):
        # BEGIN SOLUTION ch01.13
        if self.axes is None:
            return g.transpose()
        inverse = [0] * len(self.axes)
        for i, ax in enumerate(self.axes):
            inverse[ax % len(self.axes)] = i
        return g.transpose(inverse)
        # END SOLUTION


class BroadcastTo(Function):
    def __init__(self, shape):
        self.shape = tuple(shape)

    def forward(self, a):
        _check_sizes("broadcast_to", self.shape, "-1 to keep an axis's size")
        self.in_shape = a.shape
        try:
            return get_array_module(a).broadcast_to(a, self.shape)
        except ValueError:
            raise ValueError(f"broadcast_to: cannot broadcast shape {tuple(a.shape)} to "
                             f"{self.shape}") from None

    def backward(self, g):
        return unbroadcast(g, self.in_shape)


class Squeeze(Function):
    """Remove size-1 axes (all of them for ``axis=None``)."""

    def __init__(self, axis=None):
        self.axis = axis

    def forward(self, a):
        self.in_shape = a.shape
        try:
            return get_array_module(a).squeeze(a, axis=self.axis)
        except ValueError:
            raise ValueError(f"squeeze: axis {self.axis} of shape {tuple(a.shape)} does "
                             "not have size 1") from None

    def backward(self, g):
        return g.reshape(self.in_shape)


class Unsqueeze(Function):
    """Insert a size-1 axis at position ``axis`` (``numpy.expand_dims``)."""

    def __init__(self, axis):
        self.axis = axis

    def forward(self, a):
        self.in_shape = a.shape
        return get_array_module(a).expand_dims(a, self.axis)

    def backward(self, g):
        return g.reshape(self.in_shape)


class Concatenate(Function):
    """Join tensors along an existing axis."""

    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *arrays):
        xp = get_array_module(arrays[0])
        normalize_axis(self.axis, arrays[0].ndim, "concatenate")
        try:
            out = xp.concatenate(arrays, axis=self.axis)
        except ValueError:
            shapes = ", ".join(str(tuple(a.shape)) for a in arrays)
            raise ValueError(f"concatenate: shapes {shapes} do not match outside axis "
                             f"{self.axis}") from None
        axis = self.axis % out.ndim
        self.splits = []
        total = 0
        for a in arrays[:-1]:
            total += a.shape[axis]
            self.splits.append(total)
        self.axis_ = axis
        return out

    def backward(self, g):
        xp = get_array_module(g)
        return tuple(xp.split(g, self.splits, axis=self.axis_))


class Stack(Function):
    """Join tensors of one shape along a new axis."""

    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *arrays):
        xp = get_array_module(arrays[0])
        shapes = {tuple(a.shape) for a in arrays}
        if len(shapes) > 1:
            raise ValueError(f"stack: all tensors must have the same shape, got "
                             f"{', '.join(str(tuple(a.shape)) for a in arrays)}")
        out = xp.stack(arrays, axis=self.axis)
        self.axis_ = self.axis % out.ndim
        return out

    def backward(self, g):
        n = g.shape[self.axis_]
        return tuple(g.take(i, axis=self.axis_) for i in range(n))


def _is_advanced(index) -> bool:
    """True when an index uses integer or boolean arrays (NumPy's advanced indexing)."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(hasattr(p, "shape") and getattr(p, "ndim", 0) > 0 or isinstance(p, list)
               for p in parts)


class GetItem(Function):
    """``a[index]`` with NumPy's rules (ints, slices, None, Ellipsis, integer and
    boolean arrays).  Backward scatters the gradient back; with integer arrays a
    repeated index receives the sum of its gradients (``numpy.add.at``)."""

    def __init__(self, index):
        self.index = index

    def forward(self, a):
        self.in_shape, self.dtype = a.shape, a.dtype
        try:
            return a[self.index]
        except IndexError as e:
            raise IndexError(f"index {self.index!r} is invalid for a tensor of shape "
                             f"{tuple(a.shape)}: {e}") from None

    def backward(self, g):
        # BEGIN SOLUTION ch01.14
        xp = get_array_module(g)
        grad = xp.zeros(self.in_shape, dtype=g.dtype)
        if _is_advanced(self.index):
            scatter_add(grad, self.index, g)
        else:
            grad[self.index] = g
        return grad
        # END SOLUTION
