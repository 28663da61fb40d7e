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
