"""Still more of PyTorch's Tensor methods, most of them built from others.

:class:`TensorMore` is a base class of :class:`minigrad.tensor.Tensor`.
Most methods here are compositions: ``trace`` is ``diagonal().sum()``,
``kron`` a broadcast product reshaped, ``rot90`` a flip and a transpose,
``nansum`` a sum after ``where``.  Their gradients come from the operations
they call, with nothing new to derive; that is the point of an autograd.
The few that need a formula of their own (``expm1``, ``xlogy``, ``fmax``...)
call a Function of :mod:`minigrad.functions.special`.  Tests (``signbit``,
the logical operators) return bool tensors without a gradient.

This module is imported by tensor.py before ``Tensor`` exists, so it names
the class as ``type(self)``; the argument checks sit at the end.
"""
from __future__ import annotations

import math

import numpy as np

from . import return_types
from .functions import special as SP
from .tensor_ops import _dim, _other


class TensorMore:
    """Methods of :class:`~minigrad.tensor.Tensor` (see the module docstring)."""

    __slots__ = ()

    # ------------------------------------------------- elementwise math
    def expm1(self):
        """exp(x) - 1, accurate for small x (``torch.expm1``)."""
        return SP.Expm1()(self)

    def log1p(self):
        """log(1 + x), accurate for small x (``torch.log1p``)."""
        return SP.Log1p()(self)

    def sinc(self):
        """sin(πx)/(πx), 1 at 0 (``torch.sinc``)."""
        return SP.Sinc()(self)

    def logit(self, eps=None):
        """log(x/(1 - x)) (``torch.logit``); with ``eps``, x is clamped to
        [eps, 1 - eps] first (a negative ``eps`` counts as None)."""
        return SP.Logit(None if eps is None or eps < 0 else float(eps))(self)

    def xlogy(self, other):
        """x·log(other), 0 where x = 0 (``torch.xlogy``): entropy's p·log q."""
        return SP.Xlogy()(self, other)

    def hypot(self, other):
        """√(x² + other²) without overflow (``torch.hypot``)."""
        return SP.Hypot()(self, other)

    def fmax(self, other):
        """The larger entry, ignoring a nan when only one is nan (``torch.fmax``)."""
        return SP.Fmax()(self, other)

    def fmin(self, other):
        """The smaller entry, ignoring a nan when only one is nan (``torch.fmin``)."""
        return SP.Fmin()(self, other)

    def nan_to_num(self, nan=0.0, posinf=None, neginf=None):
        """nan, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf``
        (default: 0 and the dtype's largest and smallest finite values)
        (``torch.nan_to_num``); the gradient is 0 where the entry was not finite."""
        return SP.NanToNum(nan, posinf, neginf)(self)

    def reciprocal(self):
        """1/x (integers give the default floating dtype; ``torch.reciprocal``)."""
        return 1 / self

    def positive(self):
        """The tensor itself (``torch.positive``); TypeError for bool."""
        _not_bool(self, "positive")
        return self

    def deg2rad(self):
        """Degrees to radians: x·π/180 (``torch.deg2rad``)."""
        return _as_floating(self) * (math.pi / 180)

    def rad2deg(self):
        """Radians to degrees: x·180/π (``torch.rad2deg``)."""
        return _as_floating(self) * (180 / math.pi)

    def sgn(self):
        """The sign -1, 0 or 1; ``sign`` for real tensors (``torch.sgn``)."""
        return self.sign()

    def frac(self):
        """x - trunc(x), the fractional part with the sign of x (``torch.frac``);
        d/dx = 1.  TypeError for integer tensors, as in PyTorch."""
        if self.dtype.kind not in "fc":
            raise TypeError(f"frac: expected a floating tensor, got {self.dtype}")
        return self - self.trunc()

    def float_power(self, exponent):
        """x ** exponent computed in float64 (``torch.float_power``)."""
        exponent = exponent.double() if isinstance(exponent, type(self)) else exponent
        return self.double() ** exponent

    def logaddexp2(self, other):
        """log₂(2^x + 2^other) without overflow (``torch.logaddexp2``):
        logaddexp(x·ln 2, other·ln 2)/ln 2."""
        ln2 = math.log(2.0)
        return (self * ln2).logaddexp(_other(self, other, "logaddexp2") * ln2) / ln2

    # ------------------------------------------------- tests (bool, no gradient)
    def signbit(self):
        """True where the sign bit is set (negative numbers and -0.0)."""
        return type(self)(self._xp.signbit(self._data))

    def isposinf(self):
        """True where the entry is +inf."""
        return type(self)(self._xp.isposinf(self._data))

    def isneginf(self):
        """True where the entry is -inf."""
        return type(self)(self._xp.isneginf(self._data))

    def logical_not(self):
        """True where the entry is 0 (``torch.logical_not``)."""
        return type(self)(self._xp.logical_not(self._data))

    def logical_and(self, other):
        """True where both entries are non-zero (nan counts as non-zero)."""
        return type(self)(self._xp.logical_and(self._data, _other(self, other, "x")._data))

    def logical_or(self, other):
        """True where either entry is non-zero."""
        return type(self)(self._xp.logical_or(self._data, _other(self, other, "x")._data))

    def logical_xor(self, other):
        """True where exactly one entry is non-zero."""
        return type(self)(self._xp.logical_xor(self._data, _other(self, other, "x")._data))

    # ------------------------------------------------------- reductions
    def nansum(self, dim=None, keepdim=False, dtype=None):
        """The sum treating nan as 0 (``torch.nansum``); no gradient reaches a nan."""
        x = self if dtype is None else self.to(dtype=dtype)
        return x._without_nan().sum(dim, keepdim)

    def nanmean(self, dim=None, keepdim=False, *, dtype=None):
        """The mean of the entries that are not nan (``torch.nanmean``):
        nansum / their count; nan where every entry is nan.  Floating only."""
        x = self if dtype is None else self.to(dtype=dtype)
        if x.dtype.kind != "f":
            raise TypeError(f"nanmean: expected a floating tensor, got {x.dtype}")
        count = type(self)(~self._xp.isnan(x._data)).sum(dim, keepdim)
        with np.errstate(invalid="ignore", divide="ignore"):       # all nan: 0/0 = nan
            return x.nansum(dim, keepdim) / count.to(dtype=x.dtype)

    def count_nonzero(self, dim=None):
        """The number of non-zero entries over ``dim`` (an int or a tuple; all
        for None), int64 (``torch.count_nonzero``)."""
        return type(self)(self._data != 0).sum(dim)

    def aminmax(self, *, dim=None, keepdim=False):
        """The named tuple (min, max) over ``dim`` (all for None)
        (``torch.aminmax``); ties share the gradient, as in amin and amax."""
        if self.numel() == 0:
            raise ValueError("aminmax: the input is empty; the minimum of no entries is "
                             "undefined")
        return return_types.aminmax(self.amin(dim, keepdim), self.amax(dim, keepdim))

    def trace(self):
        """The sum of the diagonal of a 2-D tensor (``torch.trace``)."""
        _ndim(self, "trace", (2,))
        return self.diagonal().sum()

    def diff(self, n=1, dim=-1, prepend=None, append=None):
        """The n-th forward difference along ``dim``, out[i] = x[i+1] - x[i]
        repeated n times, after joining ``prepend`` and ``append``
        (``torch.diff``); bool tensors give x[i+1] != x[i]."""
        from .creation import cat  # noqa: PLC0415 (creation imports tensor)
        _ndim(self, "diff", range(1, 64))
        d = _dim(self, dim, "diff")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ValueError(f"diff: n must be a non-negative int, got {n!r}")
        if n == 0:
            return self
        parts = [p if isinstance(p, type(self)) else _other(self, p, "diff")
                 for p in (prepend, self, append) if p is not None]
        x = cat(parts, d) if len(parts) > 1 else self
        for _ in range(int(n)):
            later, earlier = _narrow(x, d, 1, None), _narrow(x, d, 0, -1)
            x = type(self)(later._data != earlier._data) if x.dtype.kind == "b" \
                else later - earlier
        return x

    def dist(self, other, p=2):
        """The p-norm of self - other over every entry (``torch.dist``)."""
        return (self - _other(self, other, "dist")).norm(p)

    # --------------------------------------------------------- pieces
    def tensor_split(self, indices_or_sections, dim=0):
        """Split along ``dim`` (``torch.tensor_split``): an int n gives n pieces
        as equal as possible (the first size % n one longer), a list of
        positions cuts there.  Returns a tuple of tensors."""
        _ndim(self, "tensor_split", range(1, 64))
        d = _dim(self, dim, "tensor_split")
        cuts = _cuts(indices_or_sections, self.shape[d], "tensor_split")
        return tuple(_narrow(self, d, a, b) for a, b in zip(cuts[:-1], cuts[1:]))

    def hsplit(self, split_size_or_sections):
        """``tensor_split`` along dimension 1 (0 for a 1-D tensor); an int must
        divide the size (``torch.hsplit``)."""
        _ndim(self, "hsplit", range(1, 64))
        return _split_evenly(self, split_size_or_sections, 1 if self.ndim > 1 else 0,
                             "hsplit")

    def vsplit(self, split_size_or_sections):
        """``tensor_split`` along dimension 0 of a tensor with 2 or more dimensions."""
        _ndim(self, "vsplit", range(2, 64))
        return _split_evenly(self, split_size_or_sections, 0, "vsplit")

    def dsplit(self, split_size_or_sections):
        """``tensor_split`` along dimension 2 of a tensor with 3 or more dimensions."""
        _ndim(self, "dsplit", range(3, 64))
        return _split_evenly(self, split_size_or_sections, 2, "dsplit")

    def unbind(self, dim=0):
        """The slices along ``dim``, each without that dimension (a tuple)."""
        _ndim(self, "unbind", range(1, 64))
        d = _dim(self, dim, "unbind")
        return tuple(self.select(d, i) for i in range(self.shape[d]))

    def narrow(self, dimension, start, length):
        """Entries start..start+length-1 along ``dimension`` (``torch.narrow``);
        a negative ``start`` counts from the end."""
        d = _dim(self, dimension, "narrow")
        if isinstance(start, type(self)) and (start.ndim or start.dtype.kind not in "iu"):
            raise TypeError(f"narrow: a tensor start must be a 0-d integer tensor, got "
                            f"{start.dtype} of shape {start.shape}")
        start, length, n = int(start), int(length), self.shape[d]
        if not -n <= start <= n or length < 0 or start % max(n, 1) + length > n:
            raise IndexError(f"narrow: start {start} and length {length} do not fit a "
                             f"dimension of size {n}")
        start = start + n if start < 0 else start
        return _narrow(self, d, start, start + length)

    def select(self, dim, index):
        """The slice at ``index`` along ``dim``, without that dimension."""
        d = _dim(self, dim, "select")
        n = self.shape[d]
        if not -n <= int(index) < n:
            raise IndexError(f"select: index {index} is out of range for dimension {dim} "
                             f"of size {n}")
        return self[(slice(None),) * d + (int(index),)]

    def ravel(self):
        """The entries as one dimension (``torch.ravel``)."""
        return self.reshape(-1)

    def reshape_as(self, other):
        """``reshape`` to ``other``'s shape."""
        return self.reshape(other.shape)

    def view_as(self, other):
        """``view`` with ``other``'s shape."""
        return self.view(other.shape)

    # ----------------------------------------------------- rearranging
    def fliplr(self):
        """Reverse dimension 1 (at least 2-D; ``torch.fliplr``)."""
        _ndim(self, "fliplr", range(2, 64))
        return self.flip(1)

    def flipud(self):
        """Reverse dimension 0 (at least 1-D; ``torch.flipud``)."""
        _ndim(self, "flipud", range(1, 64))
        return self.flip(0)

    def rot90(self, k=1, dims=(0, 1)):
        """Rotate by 90° k times in the plane ``dims``, from the first axis
        towards the second (``torch.rot90``): a flip and a transpose."""
        _ndim(self, "rot90", range(2, 64))
        dims = tuple(dims)
        if len(dims) != 2:
            raise ValueError(f"rot90: expected two dims, got {dims}")
        a, b = _dim(self, dims[0], "rot90"), _dim(self, dims[1], "rot90")
        if a == b:
            raise ValueError(f"rot90: the two dims must differ, got {dims}")
        k = int(k) % 4
        if k == 1:
            return self.flip(b).transpose(a, b)
        if k == 2:
            return self.flip(a, b)
        if k == 3:
            return self.flip(a).transpose(a, b)
        return self.clone()

    def diag(self, diagonal=0):
        """A 1-D tensor as a square matrix with it on diagonal ``diagonal``
        (0 the main one, > 0 above); a 2-D tensor's diagonal as a 1-D tensor
        (``torch.diag``)."""
        from .creation import where  # noqa: PLC0415
        _ndim(self, "diag", (1, 2))
        k = int(diagonal)
        if self.ndim == 2:
            return self.diagonal(k)
        n = self.shape[0]
        eye = self._xp.eye(n, dtype=bool)
        square = where(eye, self.unsqueeze(1), type(self)(self._xp.zeros((), self.dtype)))
        from .nn.functional import pad  # noqa: PLC0415
        return pad(square, (k, 0, 0, k) if k >= 0 else (0, -k, -k, 0)) if k else square

    # ------------------------------------------------------- products
    def outer(self, vec2):
        """The (n, m) matrix x_i · y_j of two 1-D tensors (``torch.outer``)."""
        _ndim(self, "outer", (1,))
        _ndim(vec2, "outer: vec2", (1,))
        return self.unsqueeze(1) * vec2.unsqueeze(0)

    ger = outer

    def inner(self, other):
        """Σ over the last dimension of both (``torch.inner``); a 0-d operand
        multiplies."""
        other = _other(self, other, "inner")
        if self.ndim == 0 or other.ndim == 0:
            return self * other
        if self.shape[-1] != other.shape[-1]:
            raise ValueError(f"inner: last dimensions differ: {self.shape} and {other.shape}")
        from .tensor_functions import tensordot  # noqa: PLC0415
        return tensordot(self, other, ([self.ndim - 1], [other.ndim - 1]))

    def kron(self, other):
        """The Kronecker product (``torch.kron``): block (i, j) is
        self[i, j]·other; fewer dimensions get leading 1s."""
        other = _other(self, other, "kron")
        n = max(self.ndim, other.ndim)
        a_shape = (1,) * (n - self.ndim) + self.shape
        b_shape = (1,) * (n - other.ndim) + other.shape
        a = self.reshape(*[s for m in a_shape for s in (m, 1)])
        b = other.reshape(*[s for m in b_shape for s in (1, m)])
        return (a * b).reshape(*[p * q for p, q in zip(a_shape, b_shape)])

    def cross(self, other, dim=None):
        """The cross product of 3-vectors along ``dim`` (``torch.cross``); for
        None, the first dimension of size 3 (PyTorch's deprecated default)."""
        other = _other(self, other, "cross")
        if self.ndim != other.ndim:
            raise ValueError(f"cross: the inputs must have the same number of dimensions, "
                             f"got shapes {self.shape} and {other.shape}")
        if dim is None:
            dim = next((i for i, s in enumerate(self.shape) if s == 3), None)
            if dim is None:
                raise ValueError(f"cross: no dimension of size 3 in {self.shape}")
        d = _dim(self, dim, "cross")
        if self.shape[d] != 3 or other.shape[d] != 3:
            raise ValueError(f"cross: dimension {dim} must have size 3 in both inputs, got "
                             f"shapes {self.shape} and {other.shape}")
        shape = np.broadcast_shapes(self.shape, other.shape)
        a, b = self.expand(shape), other.expand(shape)
        a0, a1, a2 = a.unbind(d)
        b0, b1, b2 = b.unbind(d)
        from .creation import stack  # noqa: PLC0415
        return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)

    def addcmul(self, tensor1, tensor2, *, value=1):
        """self + value·tensor1·tensor2, broadcast (``torch.addcmul``)."""
        return self + value * (tensor1 * tensor2)

    def addcdiv(self, tensor1, tensor2, *, value=1):
        """self + value·tensor1/tensor2 (``torch.addcdiv``); TypeError when both
        tensor1 and tensor2 hold integers (PyTorch's rule)."""
        if all(getattr(t, "dtype", np.dtype(float)).kind in "biu" for t in (tensor1, tensor2)):
            raise TypeError("addcdiv: integer division of tensor1 by tensor2 is not "
                            "supported; give a floating tensor")
        return self + value * (tensor1 / tensor2)

    def addmv(self, mat, vec, *, beta=1, alpha=1):
        """beta·self + alpha·(mat @ vec) (``torch.addmv``); beta = 0 ignores self."""
        from .tensor_ops import _scaled_sum  # noqa: PLC0415
        return _scaled_sum(self, mat.mv(vec), beta, alpha)

    def addr(self, vec1, vec2, *, beta=1, alpha=1):
        """beta·self + alpha·outer(vec1, vec2) (``torch.addr``); beta = 0 ignores self."""
        from .tensor_ops import _scaled_sum  # noqa: PLC0415
        return _scaled_sum(self, vec1.outer(vec2), beta, alpha)

    def addbmm(self, batch1, batch2, *, beta=1, alpha=1):
        """beta·self + alpha·Σ_b batch1[b] @ batch2[b] (``torch.addbmm``)."""
        from .tensor_ops import _scaled_sum  # noqa: PLC0415
        return _scaled_sum(self, batch1.bmm(batch2).sum(0), beta, alpha)

    # --------------------------------------------------- indexing, new
    def take(self, indices):
        """Entries of the flattened tensor at ``index`` (any shape; negative
        counts from the end) (``torch.take``); repeated positions add up in
        the gradient."""
        idx = indices._data if isinstance(indices, type(self)) else np.asarray(indices)
        if idx.dtype.kind not in "iu":
            raise TypeError(f"take: index must hold integers, got {idx.dtype}")
        n = self.numel()
        if idx.size and (int(idx.max()) >= n or int(idx.min()) < -n):
            raise IndexError(f"take: index out of range for a tensor of {n} entries")
        return self.reshape(-1)[type(self)(idx)]

    def masked_select(self, mask):
        """The entries where ``mask`` (bool, broadcast with self) is True, as a
        1-D tensor in row-major order (``torch.masked_select``)."""
        m = mask._data if isinstance(mask, type(self)) else np.asarray(mask)
        if m.dtype.kind != "b":
            raise TypeError(f"masked_select: mask must be bool, got {m.dtype}")
        shape = np.broadcast_shapes(self.shape, m.shape)
        return self.expand(shape)[type(self)(self._xp.broadcast_to(m, shape))]

    def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
        """A tensor of ``size`` filled with ``fill_value``, with self's dtype and
        device unless given (``Tensor.new_full``)."""
        from .creation import full  # noqa: PLC0415
        return full(_size(size), fill_value, dtype=dtype or self.dtype,
                    device=device or self.device, requires_grad=requires_grad)

    def new_zeros(self, *size, dtype=None, device=None, requires_grad=False):
        """Zeros of ``size`` with self's dtype and device unless given."""
        return self.new_full(_size(size), 0, dtype=dtype, device=device,
                             requires_grad=requires_grad)

    def new_ones(self, *size, dtype=None, device=None, requires_grad=False):
        """Ones of ``size`` with self's dtype and device unless given."""
        return self.new_full(_size(size), 1, dtype=dtype, device=device,
                             requires_grad=requires_grad)

    def new_empty(self, *size, dtype=None, device=None, requires_grad=False):
        """A tensor of ``size`` (here filled with zeros) with self's dtype and device."""
        return self.new_zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)

    # -------------------------------------------------------- helpers
    def _without_nan(self):
        if self.dtype.kind != "f":
            return self
        from .creation import where  # noqa: PLC0415
        return where(self._xp.isnan(self._data), type(self)(self._xp.zeros((), self.dtype)),
                     self)


# ------------------------------------------------------------------ helpers
def _narrow(x, d, start, stop):
    return x[(slice(None),) * d + (slice(start, stop),)]


def _ndim(x, name, allowed):
    if x.ndim not in allowed:
        allowed = list(allowed)
        want = " or ".join(map(str, allowed)) if len(allowed) < 3 else f"at least {allowed[0]}"
        raise ValueError(f"{name}: expected a tensor with {want} dimensions, got shape "
                         f"{tuple(x.shape)}")


def _not_bool(x, name):
    if x.dtype.kind == "b":
        raise TypeError(f"{name}: not defined for bool tensors")


def _as_floating(x):
    from .dtypes import to_floating  # noqa: PLC0415
    return x if x.dtype.kind in "fc" else type(x)(to_floating(x._data))


def _size(size):
    """A shape from ``(2, 3)``, ``[2, 3]``, ``((2, 3),)`` or ``torch.Size``."""
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    return tuple(int(s) for s in size)


def _cuts(indices_or_sections, n, name):
    """The boundaries [0, ..., n] of ``tensor_split``'s pieces."""
    spec = indices_or_sections
    if hasattr(spec, "_data"):                       # a 0-d (sections) or 1-D tensor
        if spec.dtype.kind not in "iu" or spec.ndim > 1:
            raise TypeError(f"{name}: a tensor of indices_or_sections must be a 0-d or "
                            f"1-D integer tensor, got {spec.dtype} of shape {spec.shape}")
        spec = int(spec.item()) if spec.ndim == 0 else [int(i) for i in spec._data]
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec <= 0:
            raise ValueError(f"{name}: the number of sections must be positive, got {spec}")
        size, extra = divmod(n, int(spec))
        sizes = [size + 1] * extra + [size] * (int(spec) - extra)
        return [0] + list(np.cumsum(sizes, dtype=int))
    cuts = [min(max(int(i) + n if i < 0 else int(i), 0), n) for i in spec]
    return [0] + cuts + [n]


def _split_evenly(x, spec, d, name):
    if isinstance(spec, (int, np.integer)) and not isinstance(spec, bool):
        if spec <= 0 or x.shape[d] % spec:
            raise ValueError(f"{name}: the size {x.shape[d]} of dimension {d} is not "
                             f"divisible into {spec} sections")
    return x.tensor_split(spec, d)


__all__ = ["TensorMore"]
