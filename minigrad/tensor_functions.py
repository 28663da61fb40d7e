"""Module-level forms (``minigrad.split(x, 2)``, as ``torch.split``) of the
methods in :mod:`minigrad.tensor_ops`, and the functions PyTorch has only
at module level: ``einsum``, ``std_mean``, ``var_mean``.

Each takes PyTorch's arguments and calls the method on its first argument
(a number or array becomes a constant tensor first).
"""
from __future__ import annotations

import numpy as np

from .functions.einsum import Einsum
from .tensor import Tensor, as_tensor_like


def _t(x):
    return x if isinstance(x, Tensor) else as_tensor_like(x)


def _forward(name, doc_extra=""):
    """``fn(input, *args, **kwargs)`` calling ``input.name(*args, **kwargs)``."""
    def fn(input, *args, **kwargs):  # noqa: A002 (PyTorch's name)
        return getattr(_t(input), name)(*args, **kwargs)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``{name}(input, ...)``: the function form of ``Tensor.{name}``.{doc_extra}"
    return fn


# elementwise math and tests, one tensor or two
(tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, arcsin, arccos, arctan,
 arcsinh, arccosh, arctanh, bitwise_not) = [
    _forward(n) for n in ("tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh",
                          "atanh", "arcsin", "arccos", "arctan", "arcsinh", "arccosh",
                          "arctanh", "bitwise_not")]


def atan2(input, other):  # noqa: A002
    """The angle of the point (other, input) in (-π, π]; see ``Tensor.atan2``."""
    return _t(input).atan2(other)


arctan2 = atan2


def copysign(input, other):  # noqa: A002
    """|input| with the sign of ``other``; see ``Tensor.copysign``."""
    return _t(input).copysign(other)


def fmod(input, other):  # noqa: A002
    """The remainder with the sign of ``input``; see ``Tensor.fmod``."""
    return _t(input).fmod(other)


def logaddexp(input, other):  # noqa: A002
    """log(exp(input) + exp(other)), stable; see ``Tensor.logaddexp``."""
    return _t(input).logaddexp(other)


def bitwise_and(input, other):  # noqa: A002
    """Bitwise AND of integer tensors (logical AND for bool); no gradient."""
    return _t(input).bitwise_and(other)


def bitwise_or(input, other):  # noqa: A002
    """Bitwise OR of integer tensors (logical OR for bool); no gradient."""
    return _t(input).bitwise_or(other)


def bitwise_xor(input, other):  # noqa: A002
    """Bitwise XOR of integer tensors (logical XOR for bool); no gradient."""
    return _t(input).bitwise_xor(other)


def bitwise_left_shift(input, other):  # noqa: A002
    """input · 2^other for integer tensors; shifts past the width give 0."""
    return _t(input).bitwise_left_shift(other)


def bitwise_right_shift(input, other):  # noqa: A002
    """input >> other, arithmetic; past the width 0, or -1 when negative."""
    return _t(input).bitwise_right_shift(other)


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):  # noqa: A002
    """Elementwise |input - other| <= atol + rtol·|other| (a bool tensor)."""
    return _t(input).isclose(other, rtol, atol, equal_nan)


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:  # noqa: A002
    """Whether every entry of ``input`` is close to ``other`` (a Python bool)."""
    return _t(input).allclose(other, rtol, atol, equal_nan)


def nonzero(input, *, as_tuple=False):  # noqa: A002
    """Positions of the non-zero entries; see ``Tensor.nonzero``."""
    return _t(input).nonzero(as_tuple=as_tuple)


def argwhere(input):  # noqa: A002
    """The (count, ndim) int64 positions of the non-zero entries (``nonzero()``)."""
    return _t(input).nonzero()


# dimensions
def split(tensor, split_size_or_sections, dim=0):
    """Consecutive pieces along ``dim``; see ``Tensor.split``."""
    return _t(tensor).split(split_size_or_sections, dim)


def chunk(input, chunks, dim=0):  # noqa: A002
    """At most ``chunks`` equal pieces along ``dim``; see ``Tensor.chunk``."""
    return _t(input).chunk(chunks, dim)


def movedim(input, source, destination):  # noqa: A002
    """Dimensions ``source`` moved to ``destination``; see ``Tensor.movedim``."""
    return _t(input).movedim(source, destination)


moveaxis = movedim


def flip(input, dims):  # noqa: A002
    """``input`` with the order of its entries reversed along ``dims`` (a
    tuple or list of ints, ``torch.flip``; the method also takes ints)."""
    return _t(input).flip(dims=dims)


def tile(input, dims):  # noqa: A002
    """``dims[i]`` copies along dimension i; see ``Tensor.tile``."""
    return _t(input).tile(dims)


def repeat_interleave(input, repeats=None, dim=None, *, output_size=None):  # noqa: A002
    """Each entry repeated in place (see ``Tensor.repeat_interleave``).  With
    one argument, a 1-D integer tensor of counts, the positions 0, 1, ...
    each repeated by its count: ``repeat_interleave(tensor([2, 1]))`` is
    ``[0, 0, 1]``."""
    if repeats is None:
        counts = _t(input)
        if counts.ndim > 1 or counts.dtype.kind not in "iu":
            raise TypeError(f"repeat_interleave: repeats must be a 0-d or 1-D integer "
                            f"tensor, got shape {counts.shape} of dtype {counts.dtype}")
        positions = Tensor(counts._xp.arange(counts.numel(), dtype=np.int64))
        return positions.repeat_interleave(counts.reshape(-1), 0, output_size=output_size)
    return _t(input).repeat_interleave(repeats, dim, output_size=output_size)


# matrix products
def mm(input, mat2):  # noqa: A002
    """(n, k) @ (k, m); see ``Tensor.mm``."""
    return _t(input).mm(mat2)


def bmm(input, mat2):  # noqa: A002
    """(b, n, k) @ (b, k, m); see ``Tensor.bmm``."""
    return _t(input).bmm(mat2)


def mv(input, vec):  # noqa: A002
    """(n, m) @ (m,); see ``Tensor.mv``."""
    return _t(input).mv(vec)


def dot(input, tensor):  # noqa: A002
    """The inner product of two 1-D tensors; see ``Tensor.dot``."""
    return _t(input).dot(tensor)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):  # noqa: A002
    """beta·input + alpha·(mat1 @ mat2); see ``Tensor.addmm``."""
    return _t(input).addmm(mat1, mat2, beta=beta, alpha=alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """beta·input + alpha·(batch1 @ batch2), batched; see ``Tensor.baddbmm``."""
    return _t(input).baddbmm(batch1, batch2, beta=beta, alpha=alpha)


def einsum(equation, *operands):
    """Products of the operands summed over the letters of ``equation``
    (``torch.einsum``): ``einsum("ij,jk->ik", a, b)`` is ``a @ b``,
    ``einsum("bii->bi", x)`` takes diagonals, ``"...ij->...ji"`` transposes
    the last two dimensions.  The operands may also come as one list.
    See :mod:`minigrad.functions.einsum` for the rules and the gradient.

    Raises ValueError when the equation and the operands' shapes disagree
    (the message names the operand and letter), TypeError for operands of
    different dtypes or an equation that is not a string.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum: needs at least one operand")
    return Einsum(equation)(*[_t(x) for x in operands])


# cumulative
def cumprod(input, dim, *, dtype=None):  # noqa: A002
    """Running products along ``dim``; see ``Tensor.cumprod``."""
    return _t(input).cumprod(dim, dtype)


def cummax(input, dim):  # noqa: A002
    """(values, indices) of the running maximum; see ``Tensor.cummax``."""
    return _t(input).cummax(dim)


def cummin(input, dim):  # noqa: A002
    """(values, indices) of the running minimum; see ``Tensor.cummin``."""
    return _t(input).cummin(dim)


def logcumsumexp(input, dim):  # noqa: A002
    """log of the running sums of exp, stable; see ``Tensor.logcumsumexp``."""
    return _t(input).logcumsumexp(dim)


# moments
def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """The tuple (variance, mean) over ``dim`` (``torch.var_mean``); ``var``'s
    arguments (``correction=1``, Bessel's, by default; ``unbiased=False`` is
    ``correction=0``).  Both are differentiable."""
    x = _t(input)
    return (x.var(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None):  # noqa: A002
    """The tuple (standard deviation, mean) over ``dim`` (``torch.std_mean``)."""
    x = _t(input)
    return (x.std(dim, unbiased, keepdim, correction=correction), x.mean(dim, keepdim))


def clamp(input, min=None, max=None):  # noqa: A002
    """Clamp into [min, max]; numbers or Tensors (broadcast, with gradients)."""
    return _t(input).clamp(min, max)


# more elementwise math and tests (minigrad.tensor_more)
(expm1, log1p, sinc, reciprocal, positive, deg2rad, rad2deg, sgn, frac, signbit,
 isposinf, isneginf, logical_not, trace, ravel, fliplr, flipud) = [
    _forward(n) for n in ("expm1", "log1p", "sinc", "reciprocal", "positive", "deg2rad",
                          "rad2deg", "sgn", "frac", "signbit", "isposinf", "isneginf",
                          "logical_not", "trace", "ravel", "fliplr", "flipud")]


def logit(input, eps=None):  # noqa: A002
    """log(x/(1 - x)); see ``Tensor.logit``."""
    return _t(input).logit(eps)


def xlogy(input, other):  # noqa: A002
    """input·log(other), 0 where input = 0; see ``Tensor.xlogy``."""
    return _t(input).xlogy(other)


def hypot(input, other):  # noqa: A002
    """√(input² + other²); see ``Tensor.hypot``."""
    return _t(input).hypot(other)


def fmax(input, other):  # noqa: A002
    """The larger entry, a nan only where both are nan; see ``Tensor.fmax``."""
    return _t(input).fmax(other)


def fmin(input, other):  # noqa: A002
    """The smaller entry, a nan only where both are nan; see ``Tensor.fmin``."""
    return _t(input).fmin(other)


def float_power(input, exponent):  # noqa: A002
    """input ** exponent in float64; see ``Tensor.float_power``."""
    return _t(input).float_power(exponent)


def logaddexp2(input, other):  # noqa: A002
    """log₂(2^input + 2^other); see ``Tensor.logaddexp2``."""
    return _t(input).logaddexp2(other)


def logical_and(input, other):  # noqa: A002
    """True where both are non-zero (bool)."""
    return _t(input).logical_and(other)


def logical_or(input, other):  # noqa: A002
    """True where either is non-zero (bool)."""
    return _t(input).logical_or(other)


def logical_xor(input, other):  # noqa: A002
    """True where exactly one is non-zero (bool)."""
    return _t(input).logical_xor(other)


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):  # noqa: A002
    """nan and infinities replaced by finite numbers; see ``Tensor.nan_to_num``."""
    return _t(input).nan_to_num(nan, posinf, neginf)


def rsub(input, other, *, alpha=1):  # noqa: A002
    """other - alpha·input (``torch.rsub``: subtraction with the operands swapped)."""
    x = _t(input)
    other = other if isinstance(other, Tensor) else as_tensor_like(other, x)
    return other - (x if alpha == 1 else x * alpha)


# reductions
def nansum(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The sum treating nan as 0; see ``Tensor.nansum``."""
    return _t(input).nansum(dim, keepdim, dtype=dtype)


def nanmean(input, dim=None, keepdim=False, *, dtype=None):  # noqa: A002
    """The mean of the entries that are not nan; see ``Tensor.nanmean``."""
    return _t(input).nanmean(dim, keepdim, dtype=dtype)


def count_nonzero(input, dim=None):  # noqa: A002
    """The number of non-zero entries (int64); see ``Tensor.count_nonzero``."""
    return _t(input).count_nonzero(dim)


def aminmax(input, *, dim=None, keepdim=False):  # noqa: A002
    """The named tuple (min, max); see ``Tensor.aminmax``."""
    return _t(input).aminmax(dim=dim, keepdim=keepdim)


def diff(input, n=1, dim=-1, prepend=None, append=None):  # noqa: A002
    """The n-th forward difference along ``dim``; see ``Tensor.diff``."""
    return _t(input).diff(n, dim, prepend, append)


def dist(input, other, p=2):  # noqa: A002
    """The p-norm of input - other; see ``Tensor.dist``."""
    return _t(input).dist(other, p)


# pieces and shapes
def tensor_split(input, indices_or_sections, dim=0):  # noqa: A002
    """n nearly equal pieces, or pieces cut at positions; see ``Tensor.tensor_split``."""
    return _t(input).tensor_split(indices_or_sections, dim)


def hsplit(input, indices_or_sections):  # noqa: A002
    """``tensor_split`` along dimension 1 (0 for 1-D); see ``Tensor.hsplit``."""
    return _t(input).hsplit(indices_or_sections)


def vsplit(input, indices_or_sections):  # noqa: A002
    """``tensor_split`` along dimension 0; see ``Tensor.vsplit``."""
    return _t(input).vsplit(indices_or_sections)


def dsplit(input, indices_or_sections):  # noqa: A002
    """``tensor_split`` along dimension 2; see ``Tensor.dsplit``."""
    return _t(input).dsplit(indices_or_sections)


def unbind(input, dim=0):  # noqa: A002
    """The slices along ``dim`` (a tuple); see ``Tensor.unbind``."""
    return _t(input).unbind(dim)


def narrow(input, dim, start, length):  # noqa: A002
    """length entries from start along ``dim``; see ``Tensor.narrow``."""
    return _t(input).narrow(dim, start, length)


def select(input, dim, index):  # noqa: A002
    """The slice at ``index`` along ``dim``; see ``Tensor.select``."""
    return _t(input).select(dim, index)


def rot90(input, k=1, dims=(0, 1)):  # noqa: A002
    """Rotation by 90° k times in the plane ``dims``; see ``Tensor.rot90``."""
    return _t(input).rot90(k, dims)


def diag(input, diagonal=0):  # noqa: A002
    """Vector → diagonal matrix, matrix → its diagonal; see ``Tensor.diag``."""
    return _t(input).diag(diagonal)


def take(input, index):  # noqa: A002
    """Entries of the flattened input at ``index``; see ``Tensor.take``."""
    return _t(input).take(index)


def masked_select(input, mask):  # noqa: A002
    """The entries where ``mask`` is True (1-D); see ``Tensor.masked_select``."""
    return _t(input).masked_select(mask)


_AT_LEAST = {1: {0: (1,)},
             2: {0: (1, 1), 1: lambda s: (1, *s)},
             3: {0: (1, 1, 1), 1: lambda s: (1, *s, 1), 2: lambda s: (*s, 1)}}


def _at_least(ndim, tensors):
    """atleast_nd: one tensor in, one out; several (or one list) in, a tuple out."""
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    items = tensors if single or len(tensors) != 1 else tensors[0]
    out = []
    for x in map(_t, items):
        if x.ndim < ndim:
            shape = _AT_LEAST[ndim][x.ndim]
            x = x.reshape(*(shape(x.shape) if callable(shape) else shape))
        out.append(x)
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each tensor with at least 1 dimension (a 0-d one becomes (1,))."""
    return _at_least(1, tensors)


def atleast_2d(*tensors):
    """Each tensor with at least 2 dimensions (leading 1s: (n,) becomes (1, n))."""
    return _at_least(2, tensors)


def atleast_3d(*tensors):
    """Each tensor with at least 3 dimensions: () → (1, 1, 1), (n,) → (1, n, 1),
    (m, n) → (m, n, 1), as ``numpy.atleast_3d``."""
    return _at_least(3, tensors)


def broadcast_shapes(*shapes):
    """The shape the given shapes broadcast to (a tuple; ``torch.broadcast_shapes``);
    ValueError when they do not broadcast."""
    return tuple(np.broadcast_shapes(*[(s,) if isinstance(s, (int, np.integer)) else tuple(s)
                                       for s in shapes]))


def broadcast_tensors(*tensors):
    """The tensors expanded to their common shape (a tuple; gradients sum back)."""
    tensors = [_t(x) for x in tensors]
    shape = broadcast_shapes(*[x.shape for x in tensors])
    return tuple(x.expand(shape) for x in tensors)


def hstack(tensors):
    """Join along dimension 1 (0 for 1-D tensors) (``torch.hstack``)."""
    from .creation import cat  # noqa: PLC0415
    items = atleast_1d(list(tensors))
    return cat(items, 0 if items[0].ndim == 1 else 1)


def vstack(tensors):
    """Join along dimension 0 after ``atleast_2d`` (``torch.vstack``)."""
    from .creation import cat  # noqa: PLC0415
    return cat(atleast_2d(list(tensors)), 0)


def dstack(tensors):
    """Join along dimension 2 after ``atleast_3d`` (``torch.dstack``)."""
    from .creation import cat  # noqa: PLC0415
    return cat(atleast_3d(list(tensors)), 2)


def column_stack(tensors):
    """Join as columns: 0-d and 1-D tensors become (n, 1), then ``hstack``."""
    items = [_t(x) for x in tensors]
    return hstack([x.reshape(x.numel(), 1) if x.ndim <= 1 else x for x in items])


# products
def outer(input, vec2):  # noqa: A002
    """x_i · y_j of two 1-D tensors; see ``Tensor.outer``."""
    return _t(input).outer(vec2)


ger = outer


def inner(input, other):  # noqa: A002
    """Σ over the last dimension of both; see ``Tensor.inner``."""
    return _t(input).inner(other)


def kron(input, other):  # noqa: A002
    """The Kronecker product; see ``Tensor.kron``."""
    return _t(input).kron(other)


def cross(input, other, dim=None):  # noqa: A002
    """The cross product of 3-vectors; see ``Tensor.cross``."""
    return _t(input).cross(other, dim)


def tensordot(a, b, dims=2):
    """Σ over pairs of dimensions of a and b (``torch.tensordot``): an int n
    pairs a's last n with b's first n; ``([i, ...], [j, ...])`` pairs a's
    dimension i with b's j.  The result has a's free dimensions, then b's.
    Computed as one matrix product after permuting and reshaping, so the
    gradient is that of ``matmul``."""
    a, b = _t(a), _t(b)
    if isinstance(dims, (int, np.integer)):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: dims={dims} does not fit shapes {a.shape} and "
                             f"{b.shape}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, (int, np.integer)) else list(d) for d in dims)
    da, db = [d % max(a.ndim, 1) for d in da], [d % max(b.ndim, 1) for d in db]
    if len(da) != len(db) or any(a.shape[i] != b.shape[j] for i, j in zip(da, db)):
        raise ValueError(f"tensordot: contracted dimensions {da} of {a.shape} and {db} of "
                         f"{b.shape} differ in size")
    free_a = [i for i in range(a.ndim) if i not in da]
    free_b = [j for j in range(b.ndim) if j not in db]
    k = int(np.prod([a.shape[i] for i in da], dtype=np.int64))
    left = a.permute(*free_a, *da).reshape(-1, k) if a.ndim else a.reshape(1, 1)
    right = b.permute(*db, *free_b).reshape(k, -1) if b.ndim else b.reshape(1, 1)
    return (left @ right).reshape(*[a.shape[i] for i in free_a],
                                  *[b.shape[j] for j in free_b])


def addcmul(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """input + value·tensor1·tensor2; see ``Tensor.addcmul``."""
    return _t(input).addcmul(tensor1, tensor2, value=value)


def addcdiv(input, tensor1, tensor2, *, value=1):  # noqa: A002
    """input + value·tensor1/tensor2; see ``Tensor.addcdiv``."""
    return _t(input).addcdiv(tensor1, tensor2, value=value)


def addmv(input, mat, vec, *, beta=1, alpha=1):  # noqa: A002
    """beta·input + alpha·(mat @ vec); see ``Tensor.addmv``."""
    return _t(input).addmv(mat, vec, beta=beta, alpha=alpha)


def addr(input, vec1, vec2, *, beta=1, alpha=1):  # noqa: A002
    """beta·input + alpha·outer(vec1, vec2); see ``Tensor.addr``."""
    return _t(input).addr(vec1, vec2, beta=beta, alpha=alpha)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):  # noqa: A002
    """beta·input + alpha·Σ_b batch1[b] @ batch2[b]; see ``Tensor.addbmm``."""
    return _t(input).addbmm(batch1, batch2, beta=beta, alpha=alpha)
