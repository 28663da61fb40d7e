"""Linear-algebra functions (``torch.linalg`` names): the vector norm."""
from __future__ import annotations

from .arguments import check_bool
from .functions.linalg import VectorNorm, check_ord
from .tensor import Tensor


def vector_norm(x: Tensor, ord=2, dim=None, keepdim: bool = False, *, axis=None,  # noqa: A002
                keepdims=None) -> Tensor:
    """The vector ``ord``-norm of ``x`` over ``axis`` (``torch.linalg.vector_norm``).

    Args:
        x: a floating-point Tensor of any shape.
        ord: p > 0 (a number; 2, the default, is the Euclidean norm, 1 the sum
            of absolute values), ``inf`` (max |x|), ``-inf`` (min |x|) or 0
            (the count of non-zero entries).
        dim: None (all entries, as one vector), an int or a tuple of ints
            (NumPy's ``axis`` is accepted too).
        keepdim: keep the reduced dimensions with size 1 (or ``keepdims``).

    Returns:
        a Tensor of x's dtype: x's shape without (or with size 1 at) ``dim``.

    The gradient at the zero vector is 0 for every ``ord`` (the formula
    x / ‖x‖ would give nan there), as in PyTorch, so that e.g. a gradient
    penalty on an all-zero input stays finite.

    Raises:
        TypeError: x is not a floating-point Tensor, or ord is not a number.
        ValueError: ord < 0 other than -inf, an axis out of range, or
            ord = ±inf over an empty axis.
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"vector_norm: expected a Tensor, got {type(x).__name__}")
    dim = dim if axis is None else axis
    keepdim = check_bool("vector_norm", "keepdim", keepdim if keepdims is None else keepdims)
    return VectorNorm(check_ord(ord), dim, keepdim)(x)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:  # noqa: A002
    """The cross product of 3-vectors along ``dim`` (default the last one),
    input and other broadcast (``torch.linalg.cross``).  Raises ValueError
    when that dimension does not have size 3."""
    return input.cross(other, dim)
