"""More of PyTorch's Tensor methods: splitting and moving dimensions, the
matrix-product family, cumulative operations, more elementwise math,
closeness tests, ``nonzero`` and the bitwise operators.

:class:`TensorOps` is a base class of :class:`minigrad.tensor.Tensor`, so
``x.split(2)``, ``x.cummax(0)`` and ``a & b`` are ordinary methods.  Each
is a few lines that either compose existing differentiable operations
(where that is exact: ``split`` slices, ``movedim`` permutes, ``mm``
multiplies) or call one Function of :mod:`minigrad.functions` (where the
gradient needs its own formula: ``cumprod``, ``einsum``, ``atan2``).
Results without a gradient (``nonzero``, ``isclose``, the bitwise
operators) are plain tensors, as comparisons are.

This module is imported by tensor.py before ``Tensor`` exists, so it names
the class as ``type(self)``.  The argument checks and the bitwise helpers
come after the class.
"""
from __future__ import annotations

import math

import numpy as np

from . import return_types
from .backend import get_array_module
from .dtypes import result_type
from .functions import clamp as _clamp
from .functions import linalg as L
from .functions import scan as _scan
from .functions import trig as T
from .functions.elementwise import Where
from .functions.split import Split


class TensorOps:
    """Methods of :class:`~minigrad.tensor.Tensor` (see the module docstring)."""

    __slots__ = ()

    # ---------------------------------------------------------- dimensions
    def split(self, split_size, dim=0):
        """Consecutive pieces along ``dim`` (``torch.split``): an int gives
        pieces of that size (the last one smaller when the size does not
        divide), a list gives pieces of those sizes (they must sum to the
        dimension's size).  Returns a tuple of tensors; the gradient of each
        goes back to its place.

        Raises ValueError for a 0-d tensor, sizes that do not sum to the
        dimension's size, a negative size, or size 0 of a non-empty
        dimension; IndexError for an out-of-range ``dim``."""
        if self.ndim == 0:
            raise ValueError("split: expects a tensor with at least one dimension, got a 0-d "
                             "tensor")
        d = _dim(self, dim, "split")
        n = self.shape[d]
        if isinstance(split_size, (int, np.integer)) and not isinstance(split_size, bool):
            size = int(split_size)
            if size < 0 or (size == 0 and n):
                raise ValueError(f"split: split_size must be a positive int (0 only for an "
                                 f"empty dimension), got {size} for a dimension of size {n}")
            sizes = [size] * (n // size) + ([n % size] if n % size else []) if size else [0]
        else:
            sizes = [int(s) for s in split_size]
            if any(s < 0 for s in sizes) or sum(sizes) != n:
                raise ValueError(f"split: split_sizes {sizes} must be >= 0 and sum exactly "
                                 f"to {n} (the size of dimension {dim})")
        return Split(sizes or [0], d)(self)

    def chunk(self, chunks, dim=0):
        """At most ``chunks`` pieces of equal size ceil(n / chunks) along ``dim``
        (the last smaller; fewer pieces when they run out), ``torch.chunk``.
        An empty dimension gives ``chunks`` empty pieces.  Raises ValueError
        for chunks < 1."""
        if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
            raise ValueError(f"chunk: chunks must be an int greater than 0, got {chunks!r}")
        if self.ndim == 0:
            raise ValueError("chunk: expects a tensor with at least one dimension, got a 0-d "
                             "tensor")
        d = _dim(self, dim, "chunk")
        n = self.shape[d]
        if n == 0:
            return self.split([0] * int(chunks), d)
        return self.split(math.ceil(n / chunks), d)

    def movedim(self, source, destination):
        """Move dimension(s) ``source`` to position(s) ``destination`` (ints or
        sequences of one length), the others keeping their order
        (``torch.movedim``).  Raises ValueError for lengths that differ or a
        repeated dim, IndexError for one out of range."""
        src = [source] if isinstance(source, (int, np.integer)) else list(source)
        dst = [destination] if isinstance(destination, (int, np.integer)) else list(destination)
        if len(src) != len(dst):
            raise ValueError(f"movedim: source {src} and destination {dst} must name the "
                             "same number of dimensions")
        src = [_dim(self, d, "movedim") for d in src]
        dst = [_dim(self, d, "movedim") for d in dst]
        for label, dims in (("source", src), ("destination", dst)):
            if len(set(dims)) != len(dims):
                raise ValueError(f"movedim: repeated dim in {label} {dims}")
        if self.ndim == 0:
            return self * 1
        rest = iter(d for d in range(self.ndim) if d not in src)
        where = dict(zip(dst, src))
        return self.permute(*[where[i] if i in where else next(rest)
                              for i in range(self.ndim)])

    moveaxis = movedim

    def tile(self, *dims):
        """``dims[i]`` copies along dimension i (``torch.tile``; ``x.tile(2, 1)``
        or ``x.tile((2, 1))``); fewer dims than dimensions are padded with 1s
        in front, more add dimensions."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = tuple(dims[0])
        return self.repeat(*((1,) * (self.ndim - len(dims)) + dims))

    def repeat_interleave(self, repeats, dim=None, *, output_size=None):
        """Each entry repeated ``repeats`` times in place, along ``dim``
        (the flattened tensor for None), ``torch.repeat_interleave``:
        [1, 2] with 2 repeats gives [1, 1, 2, 2].  ``repeats`` is an int or a
        1-D integer tensor with one count per entry (or one count for all).
        The gradient sums the copies.  Raises ValueError for a negative
        count, counts of the wrong length, or an ``output_size`` that
        disagrees with their sum."""
        x = self.reshape(-1) if dim is None else self
        d = 0 if dim is None else _dim(self, dim, "repeat_interleave")
        if x.ndim == 0:
            x = x.reshape(1)
        n = x.shape[d]
        counts = repeats.data if isinstance(repeats, type(self)) else np.asarray(repeats)
        counts = np.asarray(counts.get() if hasattr(counts, "get") else counts)
        if counts.dtype.kind not in "iu" or counts.ndim > 1:
            raise TypeError(f"repeat_interleave: repeats must be an int or a 1-D integer "
                            f"tensor, got {repeats!r}")
        counts = counts.reshape(-1)
        if counts.size == 1:
            counts = np.full(n, int(counts[0]))
        if counts.size != n:
            raise ValueError(f"repeat_interleave: repeats has {counts.size} counts for a "
                             f"dimension of size {n}; give one count or {n}")
        if (counts < 0).any():
            raise ValueError("repeat_interleave: repeats must be >= 0")
        if output_size is not None and int(counts.sum()) != output_size:
            raise ValueError(f"repeat_interleave: output_size {output_size} differs from the "
                             f"sum of repeats {int(counts.sum())}")
        index = np.repeat(np.arange(n), counts)
        return x.index_select(d, x._xp.asarray(index))

    # ------------------------------------------------------ matrix products
    def mm(self, mat2):
        """The matrix product of (n, k) and (k, m) matrices (``torch.mm``).
        Raises ValueError unless both are 2-D and k agrees."""
        _check_matrix("mm", "input", self, 2)
        _check_matrix("mm", "mat2", mat2, 2)
        return L.MatMul()(self, mat2)

    def bmm(self, mat2):
        """Batched matrix product (b, n, k) @ (b, k, m) -> (b, n, m), no
        broadcasting (``torch.bmm``)."""
        _check_matrix("bmm", "input", self, 3)
        _check_matrix("bmm", "mat2", mat2, 3)
        if self.shape[0] != mat2.shape[0]:
            raise ValueError(f"bmm: batch sizes differ: input {self.shape}, mat2 {mat2.shape}")
        return L.MatMul()(self, mat2)

    def mv(self, vec):
        """Matrix (n, m) times vector (m,) -> (n,) (``torch.mv``)."""
        _check_matrix("mv", "input", self, 2)
        _check_matrix("mv", "vec", vec, 1)
        return L.MatMul()(self, vec)

    def dot(self, tensor):
        """The inner product of two 1-D tensors of one size and dtype (``torch.dot``)."""
        _check_matrix("dot", "input", self, 1)
        _check_matrix("dot", "tensor", tensor, 1)
        if self.shape != tensor.shape:
            raise ValueError(f"dot: inconsistent sizes {self.shape[0]} and {tensor.shape[0]}")
        return L.MatMul()(self, tensor)

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        """beta·self + alpha·(mat1 @ mat2), self broadcast to (n, m)
        (``torch.addmm``); beta = 0 ignores self (nan or inf there does not
        spread)."""
        return _scaled_sum(self, mat1.mm(mat2), beta, alpha)

    def baddbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """beta·self + alpha·(batch1 @ batch2) for batches of matrices
        (``torch.baddbmm``); beta = 0 ignores self."""
        return _scaled_sum(self, batch1.bmm(batch2), beta, alpha)

    # --------------------------------------------------------- cumulative
    def cumprod(self, dim, dtype=None):
        """Running products along ``dim`` (``torch.cumprod``); integers give
        int64; exact gradient also where entries are 0
        (:class:`~minigrad.functions.scan.CumProd`)."""
        return _scan.CumProd(dim)(self if dtype is None else self.to(dtype=dtype))

    def cummax(self, dim):
        """The named tuple (values, indices) of the running maximum along
        ``dim`` (``torch.cummax``); a tie points at the later entry, nan
        stays once met.  The gradient goes to the entry at ``indices``."""
        fn = _scan.CumExtreme(dim, True)
        values = fn(self)
        return return_types.cummax(values, type(self)(fn.positions))

    def cummin(self, dim):
        """The named tuple (values, indices) of the running minimum (``torch.cummin``)."""
        fn = _scan.CumExtreme(dim, False)
        values = fn(self)
        return return_types.cummin(values, type(self)(fn.positions))

    def logcumsumexp(self, dim):
        """log Σ_{i<=j} exp(x_i) along ``dim``, stable (``torch.logcumsumexp``)."""
        return _scan.LogCumSumExp(dim)(self)

    # --------------------------------------------------- elementwise math
    def tan(self):
        """tan(x) elementwise (integers: the default float dtype)."""
        return T.Tan()(self)

    def asin(self):
        """arcsin(x) elementwise, in [-π/2, π/2]; nan outside [-1, 1]."""
        return T.Asin()(self)

    def acos(self):
        """arccos(x) elementwise, in [0, π]; nan outside [-1, 1]."""
        return T.Acos()(self)

    def atan(self):
        """arctan(x) elementwise, in (-π/2, π/2)."""
        return T.Atan()(self)

    def sinh(self):
        """sinh(x) elementwise."""
        return T.Sinh()(self)

    def cosh(self):
        """cosh(x) elementwise."""
        return T.Cosh()(self)

    def asinh(self):
        """arsinh(x) elementwise."""
        return T.Asinh()(self)

    def acosh(self):
        """arcosh(x) elementwise; nan below 1."""
        return T.Acosh()(self)

    def atanh(self):
        """artanh(x) elementwise; ±inf at ±1, nan outside [-1, 1]."""
        return T.Atanh()(self)

    arcsin, arccos, arctan = asin, acos, atan
    arcsinh, arccosh, arctanh = asinh, acosh, atanh

    def atan2(self, other):
        """The angle of the point (other, self) in (-π, π] (``torch.atan2``)."""
        return T.Atan2()(self, other)

    arctan2 = atan2

    def copysign(self, other):
        """|self| with the sign of ``other`` (always floating; ``torch.copysign``)."""
        return T.Copysign()(self, other)

    def fmod(self, other):
        """self - trunc(self/other)·other: the remainder with the sign of self
        (``torch.fmod``; ``remainder`` has the sign of other)."""
        return T.Fmod()(self, other)

    def logaddexp(self, other):
        """log(exp(self) + exp(other)), without overflow (``torch.logaddexp``)."""
        return T.LogAddExp()(self, other)

    # ----------------------------------------------------- tests, positions
    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """|self - other| <= atol + rtol·|other| elementwise, a bool tensor
        (``torch.isclose``); equal infinities are close, nan is close to nan
        only with ``equal_nan``.  Raises TypeError for tensors of two dtypes
        (PyTorch's rule) and ValueError for a negative rtol or atol."""
        other = _other(self, other, "isclose")
        if self.dtype != other.dtype:
            raise TypeError(f"isclose: expected both tensors to have the same dtype, got "
                            f"{self.dtype} and {other.dtype}")
        if rtol < 0 or atol < 0:
            raise ValueError(f"isclose: rtol and atol must be >= 0, got rtol={rtol}, "
                             f"atol={atol}")
        xp = self._xp
        a, b = self._data, other._data
        if a.dtype.kind == "b":
            return type(self)(xp.asarray(a == b))
        close = xp.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
        return type(self)(xp.asarray(close))

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Whether every entry is :meth:`isclose` (a Python bool)."""
        return bool(self.isclose(other, rtol, atol, equal_nan)._data.all())

    def nonzero(self, *, as_tuple=False):
        """The positions of the non-zero entries (``torch.nonzero``): an int64
        tensor of shape (count, ndim), in row-major order; with
        ``as_tuple=True`` one 1-D tensor per dimension (a 0-d input counts
        as 1-D there)."""
        xp = self._xp
        data = self._data
        if as_tuple:
            found = xp.nonzero(data.reshape(data.shape or (1,)))
            return tuple(type(self)(i.astype(np.int64)) for i in found)
        if data.ndim == 0:
            return type(self)(xp.zeros((int(bool(data)), 0), dtype=np.int64))
        return type(self)(xp.argwhere(data).astype(np.int64))

    def argwhere(self):
        """``nonzero()``: the (count, ndim) positions of the non-zero entries."""
        return self.nonzero()

    # ----------------------------------------------------------- bitwise
    def bitwise_and(self, other):
        """Bitwise AND of integer tensors (logical AND of bool ones); no gradient."""
        return _bitwise("bitwise_and", self, other, lambda a, b: a & b)

    def bitwise_or(self, other):
        """Bitwise OR of integer tensors (logical OR of bool ones); no gradient."""
        return _bitwise("bitwise_or", self, other, lambda a, b: a | b)

    def bitwise_xor(self, other):
        """Bitwise XOR of integer tensors (logical XOR of bool ones); no gradient."""
        return _bitwise("bitwise_xor", self, other, lambda a, b: a ^ b)

    def bitwise_not(self):
        """~x: every bit flipped (logical NOT for bool); no gradient."""
        _check_integer("bitwise_not", self)
        return type(self)(~self._data)

    def bitwise_left_shift(self, other):
        """self · 2^other for integer tensors; shifts past the width give 0."""
        return _bitwise("bitwise_left_shift", self, other, _shift_left, shift=True)

    def bitwise_right_shift(self, other):
        """self // 2^other (arithmetic shift); past the width 0, or -1 if negative."""
        return _bitwise("bitwise_right_shift", self, other, _shift_right, shift=True)

    __and__ = bitwise_and
    __or__ = bitwise_or
    __xor__ = bitwise_xor
    __invert__ = bitwise_not
    __lshift__ = bitwise_left_shift
    __rshift__ = bitwise_right_shift

    def __rand__(self, other):
        return _other(self, other, "bitwise_and").bitwise_and(self)

    def __ror__(self, other):
        return _other(self, other, "bitwise_or").bitwise_or(self)

    def __rxor__(self, other):
        return _other(self, other, "bitwise_xor").bitwise_xor(self)

    def __rlshift__(self, other):
        return _other(self, other, "bitwise_left_shift").bitwise_left_shift(self)

    def __rrshift__(self, other):
        return _other(self, other, "bitwise_right_shift").bitwise_right_shift(self)


# ------------------------------------------------------------------ helpers
def _dim(x, dim, name):
    """``dim`` as a non-negative int for ``x`` (a 0-d tensor accepts 0 and -1);
    IndexError naming the dimension when out of range, TypeError if not an int."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{name}: dim must be an int, got {dim!r}")
    n = max(x.ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"{name}: dimension {dim} is out of range for a tensor with "
                         f"{x.ndim} dimensions (expected -{n} <= dim < {n})")
    return int(dim) % n


def _other(x, other, name):
    """``other`` as a Tensor beside ``x`` (a number takes x's dtype, by PyTorch's rule)."""
    from .tensor import as_tensor_like  # noqa: PLC0415 (tensor.py imports this module)
    return other if isinstance(other, type(x)) else as_tensor_like(other, x)


def _check_integer(name, *tensors):
    """TypeError unless every tensor holds integers or booleans."""
    for t in tensors:
        if t.dtype.kind not in "biu":
            raise TypeError(f"{name}: expected integer or bool tensors, got dtype {t.dtype}")


def _bitwise(name, x, other, op, shift=False):
    """``op`` on the arrays of x and other in their common dtype (no graph)."""
    other = _other(x, other, name)
    _check_integer(name, x, other)
    dtype = result_type(x._data, other._data)
    a, b = x._data.astype(dtype, copy=False), other._data.astype(dtype, copy=False)
    if shift:
        if dtype.kind == "b":
            raise TypeError(f"{name}: shifts need integer tensors, got bool")
        return type(x)(op(a, b, dtype))
    return type(x)(op(a, b))


def _shift_left(a, b, dtype):
    """a << b; a shift by the dtype's width or more gives 0 (PyTorch's rule;
    NumPy leaves it to the processor)."""
    xp = get_array_module(a)
    bits = np.dtype(dtype).itemsize * 8
    wide = (b >= bits) | (b < 0)
    return xp.where(wide, 0, xp.left_shift(a, xp.where(wide, 0, b))).astype(dtype)


def _shift_right(a, b, dtype):
    """a >> b, arithmetic for signed integers; a shift by the width or more
    gives 0, or -1 for a negative signed a (PyTorch's rule)."""
    xp = get_array_module(a)
    bits = np.dtype(dtype).itemsize * 8
    wide = (b >= bits) | (b < 0)
    fill = xp.where(a < 0, -1, 0) if np.dtype(dtype).kind == "i" else 0
    return xp.where(wide, fill, xp.right_shift(a, xp.where(wide, 0, b))).astype(dtype)


def _check_matrix(name, label, t, ndim):
    if t.ndim != ndim:
        kind = {1: "a vector (1-D)", 2: "a matrix (2-D)", 3: "a batch of matrices (3-D)"}[ndim]
        raise ValueError(f"{name}: {label} must be {kind}, got shape {t.shape}")


def _scaled_sum(x, product, beta, alpha):
    """beta·x + alpha·product (``addmm``/``baddbmm``).  beta = 0 ignores x's
    values, so a nan or inf there does not spread (PyTorch's rule); x still
    broadcasts and gets a zero gradient."""
    out = product if alpha == 1 else product * alpha
    if beta == 0:
        xp = x._xp
        zeros = type(x)(xp.zeros((), dtype=x.dtype))
        return out + Where(xp.ones((), dtype=bool))(zeros, x)    # 0, shaped like x
    return out + (x if beta == 1 else x * beta)


def clamp_tensor(x, min=None, max=None):  # noqa: A002 (PyTorch's names)
    """``clamp`` where a bound is a Tensor: min(max(x, min), max), broadcast,
    with gradients for x and for the bounds
    (:class:`~minigrad.functions.clamp.ClampTensor`).  A number bound
    beside a tensor one becomes a constant tensor."""
    bounds = [b if isinstance(b, type(x)) else _other(x, b, "clamp")
              for b in (min, max) if b is not None]
    return _clamp.ClampTensor(min is not None, max is not None)(x, *bounds)


__all__ = ["TensorOps", "clamp_tensor"]
