"""Indexing along one dimension: gather, take_along_dim, index_select, scatter,
scatter_add, scatter_reduce.

Each forward picks (or writes) entries at integer positions along ``dim``;
each backward sends the gradient back to the positions it came from, adding
up where a position was picked more than once (:func:`minigrad.backend.scatter_add`).
"""
from __future__ import annotations

import numpy as np

from ..autograd import Function
from ..backend import get_array_module, scatter_add, scatter_reduce_at
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
        if not a.ndim:   # a 0-d input: the output has the index's shape, as in PyTorch
            return get_array_module(a).broadcast_to(a, self.index.shape).copy()
        self.where = along_dim(self.index, self.dim)
        return a[self.where]

    def backward(self, g):
        if not self.in_shape:
            return g.sum().reshape(())
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
        src = _scatter_inputs(self, "scatter", a, src)
        out = a.copy()
        if self.reduce == "add":
            scatter_add(out, self.where, src)
        else:
            out[self.where] = src
        return out

    def backward(self, g):
        ga = g
        if self.reduce != "add":             # overwritten positions get no gradient
            ga = get_array_module(g).array(g, copy=True)    # an array, even for 0-d g
            ga[self.where] = 0
        gsrc = _src_grad(self, g[self.where], g.dtype) if self.needs_input_grad[1] else None
        return ga, gsrc


class Scatter(ScatterAdd):
    """out = a, then out[i][index[i][j][k]][k] = src[i][j][k] (dim = 1):
    PyTorch's ``scatter``.  The overwritten entries of ``a`` get no gradient.
    With a repeated index the value written is one of the sources (NumPy
    keeps the last; PyTorch leaves it unspecified), so keep indices unique."""

    reduce = "set"


class ScatterReduce(Function):
    """out = a, then every src[i][j][k] is combined into out[i][index[i][j][k]][k]
    (dim = 1) by ``reduce``: "sum", "prod", "mean", "amax" or "amin"
    (PyTorch's ``scatter_reduce``).  With ``include_self=False`` the entries
    of ``a`` that receive a source take no part; the others stay as they are.
    An integer "mean" rounds down, as PyTorch's.

    Backward (PyTorch's formulas): "sum" sends g to every contributor; "mean"
    g / n (n contributors); "prod" g times the product of the other
    contributors (exact with zeros among them); "amax"/"amin" g split evenly
    among the contributors equal to the result (an entry of ``a`` left out by
    ``include_self=False`` takes no share; PyTorch 2.13 counts it in the split,
    so that its shares of such a tie do not add up to g).
    """

    def __init__(self, dim, index, reduce, include_self=True):
        self.dim, self.index = dim, index
        self.reduce, self.include_self = check_reduce(reduce), include_self

    def forward(self, a, src):
        src = _scatter_inputs(self, "scatter_reduce", a, src)
        xp = get_array_module(a)
        self.takes_part = xp.ones(a.shape, dtype=bool)   # a's entry is a contributor
        if not self.include_self:
            self.takes_part[self.where] = False
        out = xp.where(self.takes_part, a, _identity(self.reduce, a.dtype)).astype(a.dtype)
        if self.reduce in ("sum", "mean"):
            scatter_add(out, self.where, src)
        else:
            op = {"prod": "multiply", "amax": "maximum", "amin": "minimum"}[self.reduce]
            scatter_reduce_at(op, out, self.where, src)
        if self.reduce == "mean":
            self.n = self.takes_part.astype(a.dtype)
            scatter_add(self.n, self.where, xp.ones(src.shape, dtype=a.dtype))
            n = xp.maximum(self.n, 1)
            out = out // n if a.dtype.kind in "iu" else out / n
        if self.reduce in ("prod", "amax", "amin"):           # what backward reads
            self.a, self.src, self.out = a, src, out
        return out

    def backward(self, g):
        xp = get_array_module(g)
        if self.reduce == "sum":
            weight_a, weight_src = 1, 1
        elif self.reduce == "mean":
            g = g / xp.maximum(self.n, 1)
            weight_a, weight_src = 1, 1
        elif self.reduce == "prod":
            weight_a, weight_src = self._product_of_the_others()
        else:
            weight_a, weight_src = self._share_of_the_extremum()
        ga = g * self.takes_part * weight_a
        gsrc = None
        if self.needs_input_grad[1]:
            gsrc = _src_grad(self, g[self.where] * weight_src, g.dtype)
        return ga, gsrc

    def _product_of_the_others(self):
        """For each contributor x to a slot, the product of the slot's other
        contributors: result / x without a zero among them; with exactly one
        zero, the product of the nonzero ones for the zero and 0 for the rest;
        with two or more zeros, 0."""
        xp = get_array_module(self.a)
        a, src, where, takes_part = self.a, self.src, self.where, self.takes_part
        nonzero = xp.where(takes_part & (a != 0), a, 1).astype(a.dtype)
        scatter_reduce_at("multiply", nonzero, where, xp.where(src == 0, 1, src))
        zeros = xp.asarray(takes_part & (a == 0), dtype=xp.int64)   # an array, also 0-d
        scatter_add(zeros, where, (src == 0).astype(xp.int64))

        def others(x, p, z):
            return xp.where(x == 0, p * (z == 1), p / xp.where(x == 0, 1, x) * (z == 0))
        return others(a, nonzero, zeros), others(src, nonzero[where], zeros[where])

    def _share_of_the_extremum(self):
        """1 / (number of contributors equal to the result) for those equal to
        it, 0 for the others (a tie splits the gradient evenly, as PyTorch)."""
        xp = get_array_module(self.a)
        hit_a = self.takes_part & (self.a == self.out)
        hit_src = self.src == self.out[self.where]
        count = xp.asarray(hit_a, dtype=self.a.dtype)        # an array, also 0-d
        scatter_add(count, self.where, hit_src.astype(self.a.dtype))
        count = xp.maximum(count, 1)
        return hit_a / count, hit_src / count[self.where]


def _scatter_inputs(fn, name, a, src):
    """Check a scatter's index and set ``fn.dim`` (non-negative), ``fn.where``
    (the full index into ``a``) and ``fn.src_shape``; return the part of
    ``src`` the index covers (its index-shaped corner), in ``a``'s dtype."""
    check_index(name, a, fn.index, fn.dim, src)
    fn.dim = normalize_axis(fn.dim, a.ndim, name)[0] if a.ndim else 0
    fn.where = along_dim(fn.index, fn.dim) if a.ndim else ()
    fn.src_shape = src.shape
    return src[tuple(slice(0, n) for n in fn.index.shape)].astype(a.dtype, copy=False)


def _src_grad(fn, values, dtype):
    """d/dsrc of a scatter: ``values`` in src's index-shaped corner, 0 elsewhere."""
    gsrc = get_array_module(values).zeros(fn.src_shape, dtype=dtype)
    gsrc[tuple(slice(0, n) for n in fn.index.shape)] = values
    return gsrc


def check_reduce(reduce):
    """PyTorch's reductions for ``scatter_reduce``."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise ValueError(f"scatter_reduce: reduce must be one of 'sum', 'prod', 'mean', "
                         f"'amax', 'amin', got {reduce!r}")
    return reduce


def _identity(reduce, dtype):
    """The value that leaves every other unchanged under ``reduce``."""
    if reduce in ("sum", "mean"):
        return 0
    if reduce == "prod":
        return 1
    largest = reduce == "amin"                    # amin starts from the largest value
    if dtype.kind == "f":
        return np.inf if largest else -np.inf
    if dtype.kind == "b":
        return largest
    return np.iinfo(dtype).max if largest else np.iinfo(dtype).min


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
        if self.index.size and (int(self.index.min()) < 0 or int(self.index.max()) >= n):
            bad = int(self.index.min()) if int(self.index.min()) < 0 else int(self.index.max())
            raise IndexError(f"index_select: index {bad} is out of range for size {n} of "
                             f"dim {self.dim}; expected 0 <= index < {n} (negative indices "
                             f"are refused, as in PyTorch)")
        self.in_shape = a.shape
        if not a.ndim:   # a 0-d input gives a 0-d output, as in PyTorch
            if self.index.size != 1:
                raise IndexError(f"index_select: a 0-d input takes an index of one entry, "
                                 f"got {self.index.size}")
            return a.copy()
        return get_array_module(a).take(a, self.index, axis=self.dim)

    def backward(self, g):
        if not self.in_shape:
            return g.copy()
        grad = get_array_module(g).zeros(self.in_shape, dtype=g.dtype)
        where = (slice(None),) * self.dim + (self.index,)
        scatter_add(grad, where, g)
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
