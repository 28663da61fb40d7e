"""Indexing along one dimension: gather, take_along_dim, index_select, scatter,
scatter_add.

Each forward picks (or writes) entries at integer positions along ``dim``;
each backward sends the gradient back to the positions it came from, adding
up where a position was picked more than once (:func:`minigrad.backend.scatter_add`).
"""
from __future__ import annotations

from ..autograd import Function
from ..backend import get_array_module, scatter_add
from .reduction import normalize_axis


def along_dim(index, dim):
    """The full NumPy index that picks ``a[..., index[i, j, k], ...]`` at
    dimension ``dim``: ``index`` itself there, an open ``arange`` grid elsewhere.

    ``a[along_dim(index, dim)]`` has ``index``'s shape: out[i][j][k] =
    a[i][index[i][j][k]][k] for dim = 1 (PyTorch's ``gather``)."""
    xp = get_array_module(index)
    grid = []
    for d, n in enumerate(index.shape):
        if d == dim:
            grid.append(index)
        else:
            shape = [1] * index.ndim
            shape[d] = n
            grid.append(xp.arange(n).reshape(shape))
    return tuple(grid)


class Gather(Function):
    """out[i][j][k] = a[i][index[i][j][k]][k] (for dim = 1); ``index`` has
    ``a``'s number of dimensions and is no larger than ``a`` outside ``dim``
    (PyTorch's ``gather``).  Backward adds the gradient back at the picked
    positions (a position picked twice gets both)."""

    def __init__(self, dim, index):
        self.dim, self.index = dim, index

    def forward(self, a):
        check_index("gather", a, self.index, self.dim)
        self.dim = normalize_axis(self.dim, a.ndim, "gather")[0] if a.ndim else 0
        self.in_shape = a.shape
        self.where = along_dim(self.index, self.dim) if a.ndim else ()
        return a[self.where]

    def backward(self, g):
        grad = get_array_module(g).zeros(self.in_shape, dtype=g.dtype)
        scatter_add(grad, self.where, g)
        return grad


class ScatterAdd(Function):
    """out = a, then out[i][index[i][j][k]][k] += src[i][j][k] (dim = 1):
    PyTorch's ``scatter_add``.  d/da = g; d/dsrc = g gathered at ``index``."""

    reduce = "add"

    def __init__(self, dim, index):
        self.dim, self.index = dim, index

    def forward(self, a, src):
        check_index("scatter", a, self.index, self.dim, src)
        self.dim = normalize_axis(self.dim, a.ndim, "scatter")[0] if a.ndim else 0
        self.where = along_dim(self.index, self.dim) if a.ndim else ()
        self.src_shape = src.shape
        src = src[tuple(slice(0, n) for n in self.index.shape)].astype(a.dtype, copy=False)
        out = a.copy()
        if self.reduce == "add":
            scatter_add(out, self.where, src)
        else:
            out[self.where] = src
        return out

    def backward(self, g):
        ga = g
        if self.reduce != "add":             # overwritten positions get no gradient
            ga = g.copy()
            ga[self.where] = 0
        gsrc = None
        if self.needs_input_grad[1]:
            xp = get_array_module(g)
            gsrc = xp.zeros(self.src_shape, dtype=g.dtype)
            gsrc[tuple(slice(0, n) for n in self.index.shape)] = g[self.where]
        return ga, gsrc


class Scatter(ScatterAdd):
    """out = a, then out[i][index[i][j][k]][k] = src[i][j][k] (dim = 1):
    PyTorch's ``scatter``.  The overwritten entries of ``a`` get no gradient.
    With a repeated index the value written is one of the sources (NumPy
    keeps the last; PyTorch leaves it unspecified), so keep indices unique."""

    reduce = "set"


class IndexSelect(Function):
    """The entries at positions ``index`` (1-D integers) along ``dim``:
    ``a.index_select(dim, index)``; repeated positions add up in backward."""

    def __init__(self, dim, index):
        self.dim, self.index = dim, index

    def forward(self, a):
        if self.index.ndim != 1 or self.index.dtype.kind not in "iu":
            raise IndexError(f"index_select: index must be a 1-D integer tensor, got "
                             f"shape {tuple(self.index.shape)} of dtype {self.index.dtype}")
        self.dim = normalize_axis(self.dim, max(a.ndim, 1), "index_select")[0]
        n = a.shape[self.dim] if a.ndim else 1
        if self.index.size and (int(self.index.min()) < -n or int(self.index.max()) >= n):
            raise IndexError(f"index_select: index out of range for size {n} of dim "
                             f"{self.dim}")
        self.in_shape = a.shape
        return get_array_module(a).take(a, self.index, axis=self.dim if a.ndim else None)

    def backward(self, g):
        grad = get_array_module(g).zeros(self.in_shape, dtype=g.dtype)
        where = (slice(None),) * self.dim + (self.index,)
        scatter_add(grad, where if len(self.in_shape) else (), g)
        return grad


def check_index(name, a, index, dim, src=None):
    """PyTorch's rules for gather/scatter: an integer index with ``a``'s number
    of dimensions, no larger than ``a`` (and ``src``) outside ``dim``, and its
    values in range along ``dim``."""
    if index.dtype.kind not in "iu":
        raise TypeError(f"{name}: index must be an integer tensor, got dtype {index.dtype}")
    if index.ndim != max(a.ndim, 1) and not (a.ndim == 0 and index.ndim == 0):
        raise ValueError(f"{name}: index has {index.ndim} dimensions but the input has "
                         f"{a.ndim}; they must have the same number")
    d = normalize_axis(dim, max(a.ndim, 1), name)[0]
    for k, n in enumerate(index.shape):
        if a.ndim and k != d and n > a.shape[k]:
            raise ValueError(f"{name}: index of shape {tuple(index.shape)} is larger than "
                             f"the input of shape {tuple(a.shape)} in dimension {k}")
        if src is not None and src.ndim and n > src.shape[k]:
            raise ValueError(f"{name}: index of shape {tuple(index.shape)} is larger than "
                             f"src of shape {tuple(src.shape)} in dimension {k}")
    size = a.shape[d] if a.ndim else 1
    if index.size and (int(index.min()) < 0 or int(index.max()) >= size):
        bad = int(index.max()) if int(index.max()) >= size else int(index.min())
        raise IndexError(f"{name}: index {bad} is out of bounds for dimension {d} with "
                         f"size {size}; expected 0 <= index < {size}")
