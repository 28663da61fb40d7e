"""scatter_reduce (sum, prod, mean, amax, amin; include_self) and scatter's
reduce= form: values and gradients against PyTorch, gradchecked in float64,
and the edge cases (zeros in a product, ties in a maximum, untouched entries,
integer means) against values worked out by hand."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad
from tests.functions import FAST, nonempty_shapes, values
from tests.helpers import check_gradients, compare_with_torch

RNG = np.random.default_rng(26)
A = RNG.standard_normal((2, 3, 4))
SRC = RNG.standard_normal((2, 2, 4))     # index-shaped: PyTorch's backward needs that
IDX = np.array([[[0, 2, 1, 0], [2, 2, 0, 1]], [[1, 0, 0, 2], [0, 1, 2, 2]]])  # (2, 2, 4)
REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_scatter_reduce_matches_torch(torch, reduce, include_self, dim):
    index = IDX % np.array(A.shape)[dim]           # in range for dim
    compare_with_torch(
        torch,
        lambda a, s: a.scatter_reduce(dim, index, s, reduce, include_self=include_self),
        lambda a, s: a.scatter_reduce(dim, torch.tensor(index), s, reduce,
                                      include_self=include_self),
        [A, SRC])


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_with_reduce_matches_torch_values(torch, reduce):
    """PyTorch's deprecated scatter(..., reduce=) form (it has no gradient in
    PyTorch; minigrad's is scatter_reduce's, checked above)."""
    th_index = torch.tensor(IDX)
    out = minigrad.tensor(A).scatter(1, IDX, minigrad.tensor(SRC), reduce=reduce)
    ref = torch.tensor(A).scatter(1, th_index, torch.tensor(SRC), reduce=reduce)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
    out = minigrad.tensor(A).scatter(2, IDX, 1.5, reduce=reduce)
    ref = torch.tensor(A).scatter(2, th_index, 1.5, reduce=reduce)
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12, atol=1e-12)
    a = minigrad.tensor(A, requires_grad=True)
    a.scatter(1, IDX, minigrad.tensor(SRC), reduce=reduce).sum().backward()
    expected = "sum" if reduce == "add" else "prod"
    b = minigrad.tensor(A, requires_grad=True)
    b.scatter_reduce(1, IDX, minigrad.tensor(SRC), expected).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), b.grad.numpy())


def test_a_larger_source_uses_its_index_shaped_corner(torch):
    """src may be larger than index (PyTorch's rule): the corner of index's
    shape is used, the rest gets a zero gradient."""
    src = RNG.standard_normal((3, 3, 5))
    corner = (slice(0, 2), slice(0, 2), slice(0, 4))
    ref = torch.tensor(A).scatter_reduce(1, torch.tensor(IDX), torch.tensor(src), "mean")
    s = minigrad.tensor(src, requires_grad=True)
    out = minigrad.tensor(A).scatter_reduce(1, IDX, s, "mean")
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
    s_corner = minigrad.tensor(src[corner], requires_grad=True)
    minigrad.tensor(A).scatter_reduce(1, IDX, s_corner, "mean").sum().backward()
    out.sum().backward()
    expected = np.zeros(src.shape)
    expected[corner] = s_corner.grad.numpy()
    np.testing.assert_array_equal(s.grad.numpy(), expected)


@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_integer_scatter_reduce_matches_torch(torch, reduce):
    a = np.array([[1, 5, 3], [2, 2, 2]])
    src = np.array([[5, 0, 5], [-2, 7, -1]])
    index = np.array([[1, 1, 1], [0, 0, 2]])
    for include_self in (True, False):
        out = minigrad.tensor(a).scatter_reduce(1, index, minigrad.tensor(src), reduce,
                                                include_self=include_self)
        ref = torch.tensor(a).scatter_reduce(1, torch.tensor(index), torch.tensor(src), reduce,
                                             include_self=include_self)
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out.numpy(), ref.numpy())   # mean rounds down


def test_product_gradient_with_zeros(torch):
    """One zero among a slot's contributors: only the zero gets a gradient,
    the product of the others; two zeros: no gradient at all."""
    a = np.array([[1.0, 5.0, 3.0], [2.0, 0.0, 2.0]])
    src = np.array([[5.0, 0.0, 5.0], [2.0, 7.0, 0.0]])
    index = np.array([[1, 1, 1], [0, 1, 1]])
    compare_with_torch(torch, lambda x, s: x.scatter_reduce(1, index, s, "prod"),
                       lambda x, s: x.scatter_reduce(1, torch.tensor(index), s, "prod"),
                       [a, src])
    x, s = minigrad.tensor(a, requires_grad=True), minigrad.tensor(src, requires_grad=True)
    x.scatter_reduce(1, index, s, "prod").sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1, 0, 1], [2 * 1, 0, 1]])
    np.testing.assert_array_equal(s.grad.numpy(), [[0, 125, 0], [1 * 2, 0, 0]])


def test_maximum_tie_splits_the_gradient_evenly(torch):
    """Three contributors equal to the maximum 5 each get a third."""
    a = np.array([[1.0, 5.0, 3.0]])
    src = np.array([[5.0, 0.0, 5.0]])
    index = np.array([[1, 1, 1]])
    out = compare_with_torch(torch, lambda x, s: x.scatter_reduce(1, index, s, "amax"),
                             lambda x, s: x.scatter_reduce(1, torch.tensor(index), s, "amax"),
                             [a, src])
    x, s = minigrad.tensor(a, requires_grad=True), minigrad.tensor(src, requires_grad=True)
    x.scatter_reduce(1, index, s, "amax").sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1, 1 / 3, 1]])
    np.testing.assert_allclose(s.grad.numpy(), [[1 / 3, 0, 1 / 3]])
    assert out.shape == (1, 3)


def test_excluded_self_takes_no_share_of_a_tie():
    """include_self=False: the entry's own 5 is not a contributor, so the two
    sources equal to the maximum share the gradient, a half each (summing
    to 1, the derivative along a shift of every input).  PyTorch 2.13 still
    counts the excluded entry and gives each two thirds."""
    x = minigrad.tensor([[1.0, 5.0, 3.0]], requires_grad=True)
    s = minigrad.tensor([[5.0, 0.0, 5.0]], requires_grad=True)
    x.scatter_reduce(1, np.array([[1, 1, 1]]), s, "amax", include_self=False).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[1, 0, 1]])
    np.testing.assert_allclose(s.grad.numpy(), [[0.5, 0, 0.5]])


def test_untouched_entries_keep_value_and_gradient():
    """An entry no source reaches stays as it is, with gradient 1, for every
    reduction and include_self=False too (mean divides by 1 there)."""
    for reduce in REDUCTIONS:
        x = minigrad.tensor([[2.0, -3.0, 4.0]], requires_grad=True)
        out = x.scatter_reduce(1, np.array([[0]]), minigrad.tensor([[7.0]]), reduce,
                               include_self=False)
        np.testing.assert_array_equal(out.numpy(), [[7.0, -3.0, 4.0]])
        out.sum().backward()
        np.testing.assert_array_equal(x.grad.numpy(), [[0, 1, 1]])


def test_scatter_reduce_errors():
    x = minigrad.zeros((2, 3))
    with pytest.raises(ValueError, match="reduce must be one of 'sum', 'prod', 'mean'"):
        x.scatter_reduce(1, np.array([[0]]), minigrad.ones((1, 1)), "add")
    with pytest.raises(ValueError, match="reduce must be 'add' or 'multiply'"):
        x.scatter(1, np.array([[0]]), 1.0, reduce="sum")
    with pytest.raises(TypeError, match="src must be a Tensor"):
        x.scatter_reduce(1, np.array([[0]]), 1.0, "sum")
    with pytest.raises(IndexError, match="out of bounds for dimension 1 with size 3"):
        x.scatter_reduce(1, np.array([[3]]), minigrad.ones((1, 1)), "amax")


@FAST
@given(data=st.data(), include_self=st.booleans())
def test_scatter_reduce_gradcheck(data, include_self):
    # distinct values, so that maxima and minima have no ties
    x = data.draw(nonempty_shapes.flatmap(values))
    d = data.draw(st.integers(0, x.ndim - 1))
    shape = tuple(data.draw(st.integers(1, 3)) if i == d else k for i, k in enumerate(x.shape))
    seed = data.draw(st.integers(0, 99))
    index = np.random.default_rng(seed).integers(0, x.shape[d], shape)
    order = np.random.default_rng(seed).permutation(x.size + int(np.prod(shape)))
    x = (order[:x.size] * 0.3 - 2.0).reshape(x.shape)
    src = (order[x.size:] * 0.3 - 2.0).reshape(shape)
    for reduce in REDUCTIONS:
        assert check_gradients(
            lambda a, s: a.scatter_reduce(d, index, s, reduce, include_self=include_self),
            [x, src]), reduce


@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("reduce", REDUCTIONS)
def test_zero_dimensional_matches_torch(torch, reduce, include_self):
    compare_with_torch(
        torch, lambda a, s: a.scatter_reduce(0, np.array(0), s, reduce,
                                             include_self=include_self),
        lambda a, s: a.scatter_reduce(0, torch.tensor(0), s, reduce, include_self=include_self),
        [np.array(1.5), np.array(-2.0)])
