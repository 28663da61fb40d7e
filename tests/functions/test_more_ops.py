"""Shape, indexing, reduction and elementwise operations beyond the first
chapter's: each gradchecked in float64 over hypothesis shapes and compared
with PyTorch (values and gradients)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad
from tests.functions import FAST, distinct_values, nonempty_shapes, positive, values
from tests.helpers import check_gradients, compare_with_torch

RNG = np.random.default_rng(2026)
X = RNG.standard_normal((2, 3, 4))
D = RNG.permutation(24).reshape(2, 3, 4) * 0.25 - 3.0      # distinct: sorts have no ties
P = RNG.uniform(0.5, 2.0, (2, 3, 4))
IDX = np.array([[[0, 2, 1, 0], [2, 2, 0, 1]], [[1, 0, 0, 2], [0, 1, 2, 2]]])   # (2, 2, 4)


def _cases(torch):
    th = torch
    t_idx = None if th is None else th.tensor(IDX)
    return {
        # shape
        "expand": (lambda t: t[:, :1].expand(4, 2, 3, -1),
                   lambda t: t[:, :1].expand(4, 2, 3, -1), [X]),
        "repeat": (lambda t: t.repeat(2, 1, 1, 3), lambda t: t.repeat(2, 1, 1, 3), [X]),
        "flip": (lambda t: t.flip(0, 2), lambda t: t.flip(0, 2), [X]),
        "roll": (lambda t: t.roll(2, 2), lambda t: t.roll(2, 2), [X]),
        "roll-flat": (lambda t: t.roll(5), lambda t: t.roll(5), [X]),
        "roll-pair": (lambda t: t.roll((1, -1), (0, 1)), lambda t: t.roll((1, -1), (0, 1)),
                      [X]),
        "unflatten": (lambda t: t.unflatten(2, (2, 2)), lambda t: t.unflatten(2, (2, 2)), [X]),
        "flatten": (lambda t: t.flatten(1, 2), lambda t: t.flatten(1, 2), [X]),
        "diagonal": (lambda t: t.diagonal(), lambda t: t.diagonal(), [X]),
        "diagonal-offset": (lambda t: t.diagonal(1, 1, 2), lambda t: t.diagonal(1, 1, 2), [X]),
        "diagonal-negative": (lambda t: t.diagonal(-1, -1, 1),
                              lambda t: t.diagonal(-1, -1, 1), [X]),
        # indexing
        "gather": (lambda t: t.gather(1, IDX), lambda t: t.gather(1, t_idx), [X]),
        "gather-last": (lambda t: t.gather(-1, IDX[:, :, :3] % 4),
                        lambda t: t.gather(-1, t_idx[:, :, :3] % 4), [X]),
        "take_along_dim": (lambda t: t.take_along_dim(IDX[:1], 1),
                           lambda t: th.take_along_dim(t, t_idx[:1], 1), [X]),
        "take_along_dim-flat": (lambda t: minigrad.take_along_dim(t, np.array([5, 0, 5])),
                                lambda t: th.take_along_dim(t, th.tensor([5, 0, 5])), [X]),
        "index_select": (lambda t: t.index_select(2, np.array([3, 0, 3])),
                         lambda t: t.index_select(2, th.tensor([3, 0, 3])), [X]),
        "scatter_add": (lambda a, s: a.scatter_add(1, IDX, s),
                        lambda a, s: a.scatter_add(1, t_idx, s), [X, P[:, :2].copy()]),
        "scatter": (lambda a, s: a.scatter(1, IDX[:, :1], s),
                    lambda a, s: a.scatter(1, t_idx[:, :1], s), [X, P[:, :1].copy()]),
        "scatter-value": (lambda a: a.scatter(2, IDX[:, :, :1], 2.5),
                          lambda a: a.scatter(2, t_idx[:, :, :1], 2.5), [X]),
        # reductions
        "std": (lambda t: t.std(), lambda t: t.std(), [X]),
        "std-dim": (lambda t: t.std(dim=(0, 2), keepdim=True, correction=0),
                    lambda t: t.std(dim=(0, 2), keepdim=True, correction=0), [X]),
        "var-correction-2": (lambda t: t.var(1, correction=2), lambda t: t.var(1, correction=2),
                             [X]),
        "logsumexp": (lambda t: t.logsumexp(1), lambda t: t.logsumexp(1), [X]),
        "logsumexp-tuple": (lambda t: t.logsumexp((0, 2), keepdim=True),
                            lambda t: t.logsumexp((0, 2), keepdim=True), [X]),
        "cumsum": (lambda t: t.cumsum(2), lambda t: t.cumsum(2), [X]),
        "cumsum-neg": (lambda t: t.cumsum(-3), lambda t: t.cumsum(-3), [X]),
        "prod": (lambda t: t.prod(), lambda t: t.prod(), [P]),
        "prod-dim": (lambda t: t.prod(1, keepdim=True), lambda t: t.prod(1, keepdim=True), [X]),
        "prod-with-zero": (lambda t: (t * np.array([0.0, 1, 1, 0])).prod(-1),
                           lambda t: (t * th.tensor([0.0, 1, 1, 0],
                                                    dtype=th.float64)).prod(-1), [X]),
        "sort": (lambda t: t.sort(1).values, lambda t: t.sort(1).values, [D]),
        "sort-descending": (lambda t: t.sort(-1, descending=True)[0],
                            lambda t: t.sort(-1, descending=True)[0], [D]),
        "topk": (lambda t: t.topk(2).values, lambda t: t.topk(2).values, [D]),
        "topk-smallest": (lambda t: t.topk(2, dim=0, largest=False).values,
                          lambda t: t.topk(2, dim=0, largest=False).values, [D]),
        "norm-1": (lambda t: t.norm(1, dim=2), lambda t: t.norm(1, dim=2), [X]),
        "norm-fro": (lambda t: t.norm(), lambda t: t.norm(), [X]),
        "norm-inf": (lambda t: t.norm(float("inf"), dim=(0, 1)),
                     lambda t: t.norm(float("inf"), dim=(0, 1)), [D]),
        "norm-3": (lambda t: t.norm(3, dim=-1, keepdim=True),
                   lambda t: t.norm(3, dim=-1, keepdim=True), [X]),
        # elementwise
        "sin": (lambda t: t.sin(), lambda t: t.sin(), [X]),
        "cos": (lambda t: t.cos(), lambda t: t.cos(), [X]),
        "erf": (lambda t: t.erf(), lambda t: t.erf(), [X]),
        "floor": (lambda t: t.floor(), lambda t: t.floor(), [X * 3]),
        "ceil": (lambda t: t.ceil(), lambda t: t.ceil(), [X * 3]),
        "round": (lambda t: t.round(), lambda t: t.round(), [X * 3]),
        "round-decimals": (lambda t: t.round(decimals=1), lambda t: t.round(decimals=1), [X]),
        "trunc": (lambda t: t.trunc(), lambda t: t.trunc(), [X * 3]),
        "sign": (lambda t: t.sign(), lambda t: t.sign(), [X]),
        "rsqrt": (lambda t: t.rsqrt(), lambda t: t.rsqrt(), [P]),
        "log2": (lambda t: t.log2(), lambda t: t.log2(), [P]),
        "log10": (lambda t: t.log10(), lambda t: t.log10(), [P]),
        "exp2": (lambda t: t.exp2(), lambda t: t.exp2(), [X]),
        "lerp": (lambda a, b, w: a.lerp(b, w), lambda a, b, w: a.lerp(b, w),
                 [X, P, RNG.uniform(0, 1, (3, 1))]),
        "lerp-scalar": (lambda a, b: a.lerp(b, 0.25), lambda a, b: a.lerp(b, 0.25), [X, P]),
        "remainder": (lambda a, b: a % b, lambda a, b: a % b, [X * 3, P]),
        "remainder-scalar": (lambda a: a % 0.75, lambda a: a % 0.75, [X]),
        "rmod": (lambda a: 2.5 % a.detach(), lambda a: 2.5 % a.detach(), [P]),
        "remainder-negative": (lambda a, b: a % b, lambda a, b: a % b, [X * 3, -P]),
        "floor_divide": (lambda a, b: a // b, lambda a, b: a // b, [X * 3, P]),
        "div-floor": (lambda a, b: a.div(b, rounding_mode="floor"),
                      lambda a, b: a.div(b, rounding_mode="floor"), [X * 3, P]),
        "div-trunc": (lambda a, b: a.div(b, rounding_mode="trunc"),
                      lambda a, b: a.div(b, rounding_mode="trunc"), [X * 3, P]),
    }


NAMES = sorted(_cases(None))


@pytest.mark.parametrize("name", NAMES)
def test_parity_with_torch(name, torch):
    mg_fn, th_fn, arrays = _cases(torch)[name]
    compare_with_torch(torch, mg_fn, th_fn, arrays)


@pytest.mark.parametrize("name", ["sort", "topk", "topk-smallest", "sort-descending"])
def test_sort_and_topk_indices_match_torch(name, torch):
    fns = {"sort": lambda t: t.sort(1), "topk": lambda t: t.topk(2),
           "topk-smallest": lambda t: t.topk(2, dim=0, largest=False),
           "sort-descending": lambda t: t.sort(-1, descending=True)}
    got, want = fns[name](minigrad.tensor(D)), fns[name](torch.tensor(D))
    np.testing.assert_array_equal(got.indices.numpy(), want.indices.numpy())
    np.testing.assert_array_equal(minigrad.tensor(D).argsort(1).numpy(),
                                  torch.tensor(D).argsort(1).numpy())


def test_boolean_results_match_torch(torch):
    x = np.array([[0.0, np.nan, 1.0], [np.inf, -np.inf, 2.0]])
    for name in ("isnan", "isinf", "isfinite"):
        np.testing.assert_array_equal(getattr(minigrad.tensor(x), name)().numpy(),
                                      getattr(torch.tensor(x), name)().numpy())
    b = np.array([[0, 1, 2], [3, 0, 0]])
    for name in ("all", "any"):
        for dim in (None, 0, 1):
            got = getattr(minigrad.tensor(b), name)(dim) if dim is not None \
                else getattr(minigrad.tensor(b), name)()
            want = getattr(torch.tensor(b), name)(dim) if dim is not None \
                else getattr(torch.tensor(b), name)()
            np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_integer_floor_divide_and_remainder_match_python():
    a, b = minigrad.tensor([7, -7, 7, -7]), minigrad.tensor([2, 2, -2, -2])
    assert (a // b).numpy().tolist() == [3, -4, -4, 3]
    assert (a % b).numpy().tolist() == [1, 1, -1, -1]
    with pytest.raises(ZeroDivisionError, match="floor_divide"):
        a // 0


def test_creation_functions_match_torch(torch):
    cases = [
        (minigrad.eye(3), torch.eye(3)), (minigrad.eye(2, 4), torch.eye(2, 4)),
        (minigrad.full((2, 3), 1.5), torch.full((2, 3), 1.5)),
        (minigrad.full((2,), 7), torch.full((2,), 7)),
        (minigrad.full((2,), True), torch.full((2,), True)),
        (minigrad.full_like(minigrad.ones(2, dtype=np.float64), 3),
         torch.full_like(torch.ones(2, dtype=torch.float64), 3)),
        (minigrad.linspace(0, 1, 5), torch.linspace(0, 1, 5)),
        (minigrad.arange(5), torch.arange(5)), (minigrad.arange(1, 2, 0.25),
                                                torch.arange(1, 2, 0.25)),
        (minigrad.arange(0, 6, 2, dtype=np.float64), torch.arange(0, 6, 2,
                                                                  dtype=torch.float64)),
        (minigrad.arange(4, dtype=np.int32), torch.arange(4, dtype=torch.int32)),
    ]
    for got, want in cases:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.dtype == want.numpy().dtype
    e = minigrad.empty(2, 3, dtype=np.float64)
    assert e.shape == (2, 3) and e.dtype == np.float64


# ----------------------------------------------------------- gradchecks
@FAST
@given(data=st.data())
def test_shape_ops_gradcheck(data):
    x = data.draw(nonempty_shapes.flatmap(values))
    d = data.draw(st.integers(-x.ndim, x.ndim - 1))
    reps = data.draw(st.lists(st.integers(1, 3), min_size=x.ndim, max_size=x.ndim + 1))
    assert check_gradients(lambda t: t.repeat(*reps) ** 2, [x])
    assert check_gradients(lambda t: t.flip(d) * np.arange(x.size).reshape(x.shape), [x])
    shift, offset = data.draw(st.integers(-3, 3)), data.draw(st.integers(-1, 1))
    assert check_gradients(lambda t: t.roll(shift, d) * np.arange(x.size).reshape(x.shape),
                           [x])
    assert check_gradients(lambda t: t.unsqueeze(0).expand(2, *x.shape) ** 2, [x])
    if x.ndim >= 2:
        assert check_gradients(lambda t: t.diagonal(offset, 0, -1) ** 2, [x])


@FAST
@given(data=st.data())
def test_indexing_ops_gradcheck(data):
    x = data.draw(nonempty_shapes.flatmap(values))
    d = data.draw(st.integers(0, x.ndim - 1))
    n = x.shape[d]
    shape = tuple(data.draw(st.integers(1, 3)) if i == d else k for i, k in enumerate(x.shape))
    index = np.random.default_rng(data.draw(st.integers(0, 99))).integers(0, n, shape)
    assert check_gradients(lambda t: t.gather(d, index) ** 2, [x])
    assert check_gradients(lambda t: t.index_select(d, index.reshape(-1)) ** 2, [x])
    src = data.draw(values(shape))
    assert check_gradients(lambda a, s: a.scatter_add(d, index, s) ** 2, [x, src])


@FAST
@given(data=st.data(), keepdim=st.booleans())
def test_reductions_gradcheck(data, keepdim):
    x = data.draw(nonempty_shapes.flatmap(values))
    d = data.draw(st.integers(-x.ndim, x.ndim - 1))
    assert check_gradients(lambda t: t.logsumexp(d, keepdim), [x])
    assert check_gradients(lambda t: t.cumsum(d) ** 2, [x])
    assert check_gradients(lambda t: t.prod(d, keepdim), [x])
    assert check_gradients(lambda t: t.prod(), [x])
    if x.size > 1:      # entries 5 apart (values lie in [-2, 2]): no two equal, no kink
        assert check_gradients(lambda t: t.std(), [x + 5.0 * np.arange(x.size).reshape(x.shape)])
    y = data.draw(distinct_values(x.shape))
    assert check_gradients(lambda t: t.sort(d, descending=keepdim).values ** 2, [y])
    assert check_gradients(lambda t: t.topk(1, d).values ** 2, [y])
    assert check_gradients(lambda t: t.max(d, keepdim).values ** 2, [y])


@FAST
@given(data=st.data())
def test_elementwise_gradcheck(data):
    x = data.draw(nonempty_shapes.flatmap(values))
    p = data.draw(positive(x.shape))
    for name in ("sin", "cos", "erf", "exp2"):
        assert check_gradients(lambda t: getattr(t, name)(), [x])
    for name in ("rsqrt", "log2", "log10"):
        assert check_gradients(lambda t: getattr(t, name)(), [p])
    w = data.draw(values(x.shape[-1:], 0.0, 1.0))
    assert check_gradients(lambda a, b, c: a.lerp(b, c), [x, p, w])
    # a in [0.5, 4.5], b in [5.2, 8]: a / b stays in (0, 1), away from the jumps
    assert check_gradients(lambda a, b: a % b, [x + 2.5, p + 5.0])


def test_rounding_gradients_are_zero():
    x = minigrad.tensor([0.3, -1.7, 2.5], dtype=np.float64, requires_grad=True)
    for name in ("floor", "ceil", "round", "trunc", "sign"):
        x.grad = None
        getattr(x, name)().sum().backward()
        assert x.grad.numpy().tolist() == [0.0, 0.0, 0.0]


def test_errors_name_what_was_wrong():
    x = minigrad.ones(2, 3)
    with pytest.raises(IndexError, match="gather: index 3 is out of bounds for dimension 1"):
        x.gather(1, np.array([[3], [0]]))
    with pytest.raises(ValueError, match="gather: index has 1 dimensions"):
        x.gather(1, np.array([0]))
    with pytest.raises(TypeError, match="index_select: index must hold integers"):
        x.index_select(0, np.array([0.5]))
    with pytest.raises(ValueError, match="repeat: 1 repeats for a tensor with 2"):
        x.repeat(2)
    with pytest.raises(ValueError, match="topk: k = 4 is out of range"):
        x.topk(4)
    with pytest.raises(ValueError, match="expand: cannot|broadcast_to: cannot"):
        x.expand(3, 3)


def test_true_division_makes_each_integer_operand_a_float_first(torch):
    # uint8 [3] / int8 -4 (0-d): the common integer type would wrap -4 to 252
    a, b = np.array([3], np.uint8), np.array(-4, np.int8)
    ours = (minigrad.tensor(a) / minigrad.tensor(b)).numpy()
    theirs = (torch.tensor(a) / torch.tensor(b)).numpy()
    np.testing.assert_array_equal(ours, theirs)
    assert ours.tolist() == [-0.75]


@pytest.mark.parametrize("name", ["mean", "var", "mse", "cross_entropy", "bce"])
def test_counts_beyond_float16_range_in_float16_reductions(name):
    # 70,000 entries: the count (and a float16 sum) would be inf in float16
    n = 70_000
    x = minigrad.tensor(np.full(n, 0.5, np.float16), requires_grad=True)
    if name == "mean":
        out, value, grad = x.mean(), 0.5, 1 / n
    elif name == "var":
        out, value, grad = x.var(), 0.0, 0.0
    elif name == "mse":
        out = minigrad.nn.functional.mse_loss(x, minigrad.tensor(np.zeros(n, np.float16)))
        value, grad = 0.25, 1 / n
    elif name == "bce":
        out = minigrad.nn.functional.binary_cross_entropy_with_logits(
            x, minigrad.tensor(np.zeros(n, np.float16)))
        value, grad = float(np.log1p(np.exp(0.5))), float(1 / (1 + np.exp(-0.5))) / n
    else:
        x = minigrad.tensor(np.zeros((n, 3), np.float16), requires_grad=True)
        out = minigrad.nn.functional.cross_entropy(x, minigrad.tensor(np.zeros(n, np.int64)))
        value, grad = float(np.log(3)), -2 / 3 / n
    out.backward()
    assert out.dtype == np.float16 and x.grad.dtype == np.float16
    np.testing.assert_allclose(float(out.item()), value, rtol=2e-3, atol=1e-6)
    np.testing.assert_allclose(x.grad.numpy().ravel()[0], grad, rtol=2e-2, atol=1e-9)
