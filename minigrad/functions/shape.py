"""Shape functions: reshape, transpose, broadcast_to, squeeze/unsqueeze,
concatenate/stack, and indexing.  None of them changes a value; backward only
moves gradients back to where the values came from."""
from __future__ import annotations

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import asnumpy, check_index_bounds, get_array_module, scatter_add
from ..dtypes import result_type
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
    """Remove size-1 axes: all of them for ``dim=None``, else those of ``dim``
    (an int or a tuple) that have size 1; a named axis of another size stays,
    as in PyTorch (NumPy would raise)."""

    def __init__(self, dim=None):
        self.dim = dim

    def forward(self, a):
        self.in_shape = a.shape
        if self.dim is None:
            return get_array_module(a).squeeze(a)
        axes = normalize_axis(self.dim, max(a.ndim, 1), "squeeze") if a.ndim else ()
        return a.reshape([n for i, n in enumerate(a.shape) if not (i in axes and n == 1)])

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


def _common_dtype(arrays):
    """The arrays in PyTorch's result type (int64 with float32 is float32)."""
    dtype = result_type(*arrays)
    return [a if a.dtype == dtype else a.astype(dtype) for a in arrays]


class Concatenate(Function):
    """Join tensors along an existing axis."""

    def __init__(self, axis=0):
        self.axis = axis

    def forward(self, *arrays):
        xp = get_array_module(arrays[0])
        arrays = _common_dtype(arrays)
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
        arrays = _common_dtype(arrays)
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


def normalize_index(index, xp, ndim):
    """``index`` in the form NumPy reads it, with every advanced part an array of ``xp``.

    NumPy treats as *advanced* (a copy; a repeated position appears twice):
    integer or boolean arrays of any shape, lists and tuples of numbers, nested
    sequences, and Python/NumPy booleans, whether alone (``t[[0, 0]]``) or
    inside a tuple index (``t[(0, 0), :]``, ``t[:, [[1], [2]]]``).  Ints,
    slices, ``None`` and ``Ellipsis`` are *basic*.  Tensors used as indices
    arrive here as their arrays.  A tuple of ints alone (``t[(0, 1)]``) is a
    tuple index, as in NumPy, so it stays a tuple.

    Returns a tuple index whose advanced parts are arrays on ``xp``'s device
    (CuPy does not take lists or NumPy arrays as indices), for an array of
    ``ndim`` dimensions (its Ellipsis written out: :func:`explicit_ellipsis`).

    Raises IndexError for a sequence that holds something other than
    integers or booleans (floats, strings, slices inside a list).
    """
    parts = index if isinstance(index, tuple) else (index,)
    return explicit_ellipsis(tuple(_index_part(p, xp) for p in parts), ndim)


def _index_part(p, xp):
    if p is None or p is Ellipsis or isinstance(p, slice):
        return p
    if isinstance(p, (bool, np.bool_)):
        return p
    if isinstance(p, (int, np.integer)):
        return int(p)
    if isinstance(p, (list, tuple)):
        try:
            arr = np.asarray(p)
        except ValueError:
            raise IndexError(f"index {p!r}: a nested sequence must be rectangular") from None
        if arr.size == 0:
            arr = arr.astype(np.intp)          # [] selects nothing, as in NumPy
    elif hasattr(p, "shape") and hasattr(p, "dtype"):
        arr = p
    else:
        raise IndexError(f"only integers, slices, None, Ellipsis, and integer or boolean "
                         f"arrays (or Tensors, lists) are valid indices; got "
                         f"{type(p).__name__}")
    if arr.dtype.kind not in "iub":
        raise IndexError(f"index arrays must hold integers or booleans, got dtype "
                         f"{arr.dtype}")
    return asnumpy(arr) if xp is np else xp.asarray(arr)


def explicit_ellipsis(index, ndim):
    """``index`` with its Ellipsis written out as the full slices it stands for,
    when arrays are present (else ``index`` unchanged).

    PyTorch expands ``...`` before it looks at where the arrays are, so an
    Ellipsis that spans no axis does not separate two arrays: for x of shape
    (1, 1), ``x[[0, 0], ..., [0, 0]]`` has shape (2,) in both, but for x of
    shape (1, 1, 1), ``x[None, 0, [0, 0], ..., [0, 0]]`` is (1, 2) in
    PyTorch and NumPy moves the arrays to the front, (2, 1).  Written out,
    NumPy reads the index as PyTorch does.
    """
    at = next((k for k, p in enumerate(index) if p is Ellipsis), None)
    if at is None or not any(_kind(p) == "array" for p in index):
        return index
    used = sum(0 if p is None or p is Ellipsis or _kind(p) == "bool"
               else (p.ndim if _kind(p) == "array" and p.dtype == np.bool_ else 1)
               for p in index)
    if used > ndim:
        return index                   # too many indices: NumPy's IndexError says so
    return index[:at] + (slice(None),) * (ndim - used) + index[at + 1:]


def select_ints_first(index):
    """PyTorch's rule for an index mixing ints and arrays: ``(first, rest)``, two
    indices to apply one after the other, or None when the rule changes nothing.

    NumPy counts an int as an advanced index when arrays are present, so in
    ``x[0, :, [1, 2]]`` (x of shape (2, 3, 4)) the int and the list are
    broadcast together and, being separated by a slice, moved to the front:
    shape (2, 3).  PyTorch applies the ints first (a basic selection, which
    removes their axes) and then the rest: ``x[0][:, [1, 2]]``, shape (3, 2).
    ``first`` keeps the ints, Ellipsis and None and the slices; ``rest``
    keeps the arrays (and a full slice for every axis ``first`` kept).
    """
    kinds = [_kind(p) for p in index]
    if "array" not in kinds or "int" not in kinds or "bool" in kinds:
        return None
    first, rest = [], []
    for p, kind in zip(index, kinds):
        if kind == "int":
            first.append(p)
        elif kind == "array":
            arr = np.asarray(p) if isinstance(p, (list, tuple)) else p
            k = arr.ndim if arr.dtype == np.bool_ else 1      # a mask spans its ndim axes
            first.extend([slice(None)] * k)
            rest.append(p)
        elif p is None:
            first.append(None)
            rest.append(slice(None))
        elif p is Ellipsis:
            first.append(p)
            rest.append(p)
        else:                                  # a slice
            first.append(p)
            rest.append(slice(None))
    return tuple(first), tuple(rest)


def _kind(p):
    kind = type(p)
    if kind is slice or p is None or p is Ellipsis:
        return "basic"
    if kind is int:
        return "int"
    if isinstance(p, (bool, np.bool_)):
        return "bool"
    return "int" if isinstance(p, np.integer) else "array"


def is_advanced(index) -> bool:
    """True when a normalized index (see :func:`normalize_index`) has an advanced
    part: an array of any shape or a boolean."""
    return any(hasattr(p, "shape") or isinstance(p, (bool, np.bool_)) for p in index)


class GetItem(Function):
    """``a[index]`` with NumPy's rules (ints, slices, None, Ellipsis, integer and
    boolean arrays, lists and nested sequences, Tensors).

    Backward scatters the gradient back.  With an advanced index a position
    selected several times receives the sum of its gradients
    (``backend.scatter_add``: ``numpy.add.at`` / ``cupy.add.at``); a
    basic index selects every position at most once, so an assignment does.
    """

    def __init__(self, index):
        self.index = index

    def forward(self, a):
        xp = get_array_module(a)
        self.in_shape, self.dtype = a.shape, a.dtype
        try:
            self.index = normalize_index(self.index, xp, a.ndim)
            if xp is not np:                    # CuPy wraps out-of-bounds indices
                check_index_bounds(self.index, a.shape)
            return a[self.index]
        except IndexError as e:
            raise IndexError(f"index {self.index!r} is invalid for a tensor of shape "
                             f"{tuple(a.shape)}: {e}") from None

    def backward(self, g):
        # BEGIN SOLUTION ch01.14
        xp = get_array_module(g)
        grad = xp.zeros(self.in_shape, dtype=g.dtype)
        if is_advanced(self.index):
            scatter_add(grad, self.index, g)
        else:
            grad[self.index] = g
        return grad
        # END SOLUTION


# ------------------------------------------------- more shape functions
class Repeat(Function):
    """``a.repeat(*repeats)``: tile ``a`` ``repeats[i]`` times along dimension i
    (extra leading repeats add dimensions), as ``numpy.tile``.  Backward sums
    the copies: the gradient, viewed as (r0, n0, r1, n1, ...), summed over
    the r axes."""

    def __init__(self, repeats):
        self.repeats = tuple(repeats)

    def forward(self, a):
        if len(self.repeats) < a.ndim:
            raise ValueError(f"repeat: {len(self.repeats)} repeats for a tensor with "
                             f"{a.ndim} dimensions; give at least one per dimension")
        _check_sizes("repeat", self.repeats, "a count >= 0")
        self.in_shape = a.shape
        self.shape = (1,) * (len(self.repeats) - a.ndim) + tuple(a.shape)
        return get_array_module(a).tile(a, self.repeats)

    def backward(self, g):
        pairs = [n for r, s in zip(self.repeats, self.shape) for n in (r, s)]
        g = g.reshape(pairs).sum(axis=tuple(range(0, len(pairs), 2)))
        return g.reshape(self.in_shape)


class Flip(Function):
    """Reverse the order of entries along ``dims``; backward reverses back."""

    def __init__(self, dims):
        self.dims = dims

    def forward(self, a):
        self.axes = normalize_axis(self.dims, max(a.ndim, 1), "flip") if a.ndim else ()
        return get_array_module(a).flip(a, axis=self.axes).copy()

    def backward(self, g):
        return get_array_module(g).flip(g, axis=self.axes)


class Roll(Function):
    """Shift entries by ``shifts`` along ``dims`` with wrap-around (the whole
    flattened tensor for dims=None); backward shifts back."""

    def __init__(self, shifts, dims=None):
        self.shifts, self.dims = shifts, dims

    def forward(self, a):
        return get_array_module(a).roll(a, self.shifts, axis=self.dims)

    def backward(self, g):
        back = tuple(-s for s in self.shifts) if isinstance(self.shifts, (tuple, list)) \
            else -self.shifts
        return get_array_module(g).roll(g, back, axis=self.dims)


class Diagonal(Function):
    """The diagonal ``a[..., i, i + offset]`` of the planes (dim1, dim2), as a
    last dimension (``torch.diagonal``); backward writes the gradient back
    onto that diagonal of a zero array."""

    def __init__(self, offset=0, dim1=0, dim2=1):
        self.offset, self.dim1, self.dim2 = offset, dim1, dim2

    def forward(self, a):
        if a.ndim < 2:
            raise ValueError(f"diagonal: expected a tensor of at least 2 dimensions, got "
                             f"shape {a.shape}")
        d1, d2 = normalize_axis(self.dim1, a.ndim, "diagonal")[0], \
            normalize_axis(self.dim2, a.ndim, "diagonal")[0]
        if d1 == d2:
            raise ValueError(f"diagonal: dim1 and dim2 must differ, both are {d1}")
        self.axes, self.in_shape = (d1, d2), a.shape
        return get_array_module(a).diagonal(a, self.offset, d1, d2).copy()

    def backward(self, g):
        xp = get_array_module(g)
        grad = xp.zeros(self.in_shape, dtype=g.dtype)
        planes = xp.moveaxis(grad, self.axes, (-2, -1))      # a view: writes reach grad
        i = xp.arange(g.shape[-1])
        planes[..., i + max(-self.offset, 0), i + max(self.offset, 0)] = g
        return grad


PAD_MODES = ("constant", "reflect", "replicate", "circular")


class Pad(Function):
    """``F.pad``: ``pad = (left, right)`` for the last dimension, then
    ``(left, right, top, bottom)`` for the last two, and so on.

    "constant" fills with ``value``; "reflect" mirrors without repeating the
    edge (``[1, 2, 3]`` → ``[3, 2, 1, 2, 3, 2, 1]`` for pad 2), "replicate"
    repeats it, "circular" wraps around.  The three copying modes read each
    output entry from one input position (``numpy.pad`` of the positions),
    so backward adds the gradient back at those positions.  In "constant"
    mode a negative amount crops that side instead (PyTorch's rule): the
    input part ``kept`` lands at ``inner`` of the output.
    """

    def __init__(self, pad, mode="constant", value=0.0):
        self.pad, self.mode, self.value = tuple(pad), mode, value

    def forward(self, a):
        widths = self._widths(a)
        self.in_shape = a.shape
        xp = get_array_module(a)
        if self.mode == "constant":
            out = xp.full([n + lo + hi for n, (lo, hi) in zip(a.shape, widths)],
                          self.value, dtype=a.dtype)
            # what stays of the input (all of it, unless a pad is negative) and where
            self.kept = tuple(slice(max(-lo, 0), n - max(-hi, 0))
                              for n, (lo, hi) in zip(a.shape, widths))
            self.inner = tuple(slice(max(lo, 0), max(lo, 0) + k.stop - k.start)
                               for k, (lo, _) in zip(self.kept, widths))
            out[self.inner] = a[self.kept]
            return out
        numpy_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[self.mode]
        sources = [np.pad(np.arange(n), w, mode=numpy_mode) for n, w in zip(a.shape, widths)]
        self.where = tuple(xp.asarray(s) for s in np.ix_(*sources))
        return a[self.where]

    def backward(self, g):
        if self.mode == "constant":
            if all(k.start == 0 and k.stop == n for k, n in zip(self.kept, self.in_shape)):
                return g[self.inner]            # nothing cropped: the common case
            grad = get_array_module(g).zeros(self.in_shape, dtype=g.dtype)
            grad[self.kept] = g[self.inner]
            return grad
        grad = get_array_module(g).zeros(self.in_shape, dtype=g.dtype)
        scatter_add(grad, self.where, g)
        return grad

    def _widths(self, a):
        """(before, after) for every dimension; checks the mode and the sizes."""
        if self.mode not in PAD_MODES:
            raise ValueError(f"pad: mode must be one of {PAD_MODES}, got {self.mode!r}")
        if len(self.pad) % 2 or len(self.pad) // 2 > a.ndim:
            raise ValueError(f"pad: pad {self.pad} must have an even length of at most "
                             f"2 x {a.ndim} (the tensor's dimensions)")
        widths = [(0, 0)] * a.ndim
        for i in range(len(self.pad) // 2):
            widths[a.ndim - 1 - i] = (self.pad[2 * i], self.pad[2 * i + 1])
        for d, (n, (lo, hi)) in enumerate(zip(a.shape, widths)):
            if (lo < 0 or hi < 0) and self.mode != "constant":
                raise ValueError(f"pad: negative padding {self.pad} is only supported in "
                                 f"mode 'constant', not {self.mode!r}")
            if n + lo + hi < 0:
                raise ValueError(f"pad: the input size {n}, plus negative padding {lo} and "
                                 f"{hi}, gives a negative output size in dimension {d}")
            if self.mode == "reflect" and max(lo, hi) >= n and (lo or hi):
                raise ValueError(f"pad: reflect padding {max(lo, hi)} must be smaller than "
                                 f"the dimension's size {n}")
            if self.mode in ("replicate", "circular") and n == 0 and (lo or hi):
                raise ValueError(f"pad: {self.mode} padding of an empty dimension")
        return widths
