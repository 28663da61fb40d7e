"""The operations of minigrad.tensor_more, functions.special and
nn.functional_extra: stated values (no PyTorch needed), float64 finite
differences for every gradient, and the refusals PyTorch makes.
PyTorch's own samples for all of them run in tests/test_opinfo_sweep.py."""
import math

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from minigrad import gradcheck


def t(values, grad=False, dtype=np.float64):
    return minigrad.tensor(np.asarray(values, dtype=dtype), requires_grad=grad)


def close(x, expected, tol=1e-12):
    got = x.numpy() if hasattr(x, "numpy") else np.asarray(x)
    np.testing.assert_allclose(got, np.asarray(expected, dtype=float), rtol=tol, atol=tol)


# ---------------------------------------------------------------- values
STATED = [
    (lambda: t([1e-10, 1.0]).expm1(), [1.00000000005e-10, math.e - 1]),
    (lambda: t([1e-10, 1.0]).log1p(), [9.9999999995e-11, math.log(2)]),
    (lambda: t([0.0, 0.5, 1.0]).sinc(), [1.0, 2 / math.pi, 0.0]),
    (lambda: t([0.25, 0.5]).logit(), [-math.log(3), 0.0]),
    (lambda: t([0.0, 1.0]).logit(eps=0.25), [-math.log(3), math.log(3)]),
    (lambda: t([0.0, 0.0, 2.0]).xlogy(t([0.0, np.nan, math.e])), [0.0, np.nan, 2.0]),
    (lambda: t([3.0, 1e300]).hypot(t([4.0, 1e300])), [5.0, math.sqrt(2) * 1e300]),
    (lambda: t([1.0, np.nan, np.nan]).fmax(t([np.nan, 2.0, np.nan])), [1.0, 2.0, np.nan]),
    (lambda: t([1.0, np.nan]).fmin(t([0.0, -2.0])), [0.0, -2.0]),
    (lambda: t([np.nan, np.inf, -np.inf, 1.0]).nan_to_num(posinf=9.0, neginf=-9.0),
     [0.0, 9.0, -9.0, 1.0]),
    (lambda: t([2.0, -4.0]).reciprocal(), [0.5, -0.25]),
    (lambda: t([180.0, 90.0]).deg2rad(), [math.pi, math.pi / 2]),
    (lambda: t([math.pi]).rad2deg(), [180.0]),
    (lambda: t([-2.5, 2.5]).frac(), [-0.5, 0.5]),
    (lambda: t([0.0, 0.0]).logaddexp2(t([0.0, 1.0])), [1.0, math.log2(3)]),
    (lambda: minigrad.rsub(t([1.0, 2.0]), 10.0, alpha=2), [8.0, 6.0]),
    (lambda: t([1.0, np.nan, 3.0]).nansum(), 4.0),
    (lambda: t([[1.0, np.nan], [np.nan, np.nan]]).nanmean(1), [1.0, np.nan]),
    (lambda: t([[0.0, 1.0], [2.0, 0.0]]).count_nonzero(0), [1, 1]),
    (lambda: t([[1.0, 2.0], [3.0, 4.0]]).trace(), 5.0),
    (lambda: t([1.0, 4.0, 9.0]).diff(), [3.0, 5.0]),
    (lambda: t([1.0, 4.0, 9.0]).diff(n=2, prepend=t([0.0])), [2.0, 2.0]),
    (lambda: t([0.0, 0.0]).dist(t([3.0, 4.0])), 5.0),
    (lambda: t([0.0, 0.0]).dist(t([3.0, -4.0]), p=1), 7.0),
    (lambda: t([[1.0, 2.0], [3.0, 4.0]]).rot90(), [[2.0, 4.0], [1.0, 3.0]]),
    (lambda: t([[1.0, 2.0], [3.0, 4.0]]).rot90(-1), [[3.0, 1.0], [4.0, 2.0]]),
    (lambda: t([1.0, 2.0]).diag(1), [[0, 1, 0], [0, 0, 2], [0, 0, 0]]),
    (lambda: t([1.0, 2.0]).diag(-1), [[0, 0, 0], [1, 0, 0], [0, 2, 0]]),
    (lambda: t([[1.0, 2.0], [3.0, 4.0]]).diag(), [1.0, 4.0]),
    (lambda: t([1.0, 2.0]).outer(t([3.0, 4.0, 5.0])), [[3, 4, 5], [6, 8, 10]]),
    (lambda: t([[1.0, 2.0]]).inner(t([[3.0, 4.0], [5.0, 6.0]])), [[11.0, 17.0]]),
    (lambda: t([[1.0, 2.0]]).kron(t([[1.0], [10.0]])), [[1, 2], [10, 20]]),
    (lambda: t([1.0, 0.0, 0.0]).cross(t([0.0, 1.0, 0.0])), [0.0, 0.0, 1.0]),
    (lambda: minigrad.tensordot(t(np.arange(6.0).reshape(2, 3)),
                                t(np.arange(6.0).reshape(3, 2)), 1), [[10, 13], [28, 40]]),
    (lambda: t([1.0, 2.0]).addcmul(t([2.0, 2.0]), t([3.0, 4.0]), value=0.5), [4.0, 6.0]),
    (lambda: t([1.0, 2.0]).addcdiv(t([2.0, 2.0]), t([4.0, 1.0]), value=2), [2.0, 6.0]),
    (lambda: t([np.nan, 1.0]).addmv(t([[1.0, 1.0], [0.0, 1.0]]), t([1.0, 2.0]), beta=0),
     [3.0, 2.0]),
    (lambda: t(np.zeros((2, 2))).addr(t([1.0, 2.0]), t([1.0, 3.0]), alpha=2),
     [[2, 6], [4, 12]]),
    (lambda: t(np.ones((1, 1))).addbmm(t(np.ones((3, 1, 2))), t(np.ones((3, 2, 1)))),
     [[7.0]]),
    (lambda: t(np.arange(6.0)).take(minigrad.tensor([-1, 0, 0])), [5.0, 0.0, 0.0]),
    (lambda: t([[1.0, 2.0], [3.0, 4.0]]).masked_select(minigrad.tensor([True, False])),
     [1.0, 3.0]),
    (lambda: F.softsign(t([-3.0, 1.0])), [-0.75, 0.5]),
    (lambda: F.tanhshrink(t([0.5])), [0.5 - math.tanh(0.5)]),
    (lambda: F.threshold(t([1.0, 3.0]), 2.0, -1.0), [-1.0, 3.0]),
    (lambda: F.hardshrink(t([-1.0, 0.5, 0.2])), [-1.0, 0.0, 0.0]),
    (lambda: F.softshrink(t([-1.0, 0.3, 2.0])), [-0.5, 0.0, 1.5]),
    (lambda: F.glu(t([1.0, 0.0])), [0.5]),
    (lambda: F.prelu(t([[-2.0, 3.0], [-1.0, -1.0]]), t([0.5, 0.25])),
     [[-1.0, 3.0], [-0.5, -0.25]]),
    (lambda: F.rms_norm(t([[3.0, 4.0]]), (2,), eps=0.0), [[3 / math.sqrt(12.5),
                                                          4 / math.sqrt(12.5)]]),
    (lambda: F.pixel_shuffle(t(np.arange(4.0).reshape(1, 4, 1, 1)), 2), [[[[0, 1], [2, 3]]]]),
    (lambda: F.pixel_unshuffle(t([[[[0.0, 1.0], [2.0, 3.0]]]]), 2),
     np.arange(4.0).reshape(1, 4, 1, 1)),
    (lambda: F.pairwise_distance(t([[0.0, 0.0]]), t([[3.0, 4.0]]), eps=0.0), [5.0]),
    (lambda: F.soft_margin_loss(t([0.0, 0.0]), t([1.0, -1.0])), math.log(2)),
    (lambda: F.margin_ranking_loss(t([1.0, 1.0]), t([2.0, 0.0]), t([1.0, 1.0]), margin=0.5),
     (1.5 + 0.0) / 2),
    (lambda: F.hinge_embedding_loss(t([0.3, 0.3]), t([1.0, -1.0]), reduction="none"),
     [0.3, 0.7]),
    (lambda: F.multilabel_soft_margin_loss(t([[0.0, 0.0]]), t([[1.0, 0.0]])), math.log(2)),
    (lambda: F.cosine_embedding_loss(t([[1.0, 0.0]]), t([[0.0, 1.0]]), t([1.0])), 1.0),
    (lambda: F.triplet_margin_loss(t([[0.0]]), t([[1.0]]), t([[3.0]]), eps=0.0), 0.0),
    (lambda: F.poisson_nll_loss(t([0.0]), t([2.0])), 1.0),
]


@pytest.mark.parametrize("case", range(len(STATED)))
def test_stated_values(case):
    call, expected = STATED[case]
    close(call(), expected)


def test_shapes_and_pieces():
    x = t(np.arange(10.0))
    assert [p.shape for p in x.tensor_split(3)] == [(4,), (3,), (3,)]
    assert [p.tolist() for p in x.tensor_split([2, 5])] == [[0, 1], [2, 3, 4],
                                                            [5, 6, 7, 8, 9]]
    m = t(np.arange(12.0).reshape(2, 6))
    assert [p.shape for p in m.hsplit(3)] == [(2, 2)] * 3
    assert [p.shape for p in m.vsplit([1])] == [(1, 6), (1, 6)]
    assert [p.shape for p in m.reshape(1, 2, 6).dsplit(2)] == [(1, 2, 3)] * 2
    assert [p.tolist() for p in m.unbind(0)] == m.tolist()
    assert m.narrow(1, -2, 2).tolist() == [[4, 5], [10, 11]]
    assert m.select(1, -1).tolist() == [5, 11]
    assert m.ravel().shape == (12,) and m.reshape_as(t(np.zeros((6, 2)))).shape == (6, 2)
    assert m.fliplr()[0, 0].item() == 5 and m.flipud()[0, 0].item() == 6
    assert minigrad.atleast_1d(t(1.0)).shape == (1,)
    assert minigrad.atleast_2d(t([1.0, 2.0])).shape == (1, 2)
    assert [a.shape for a in minigrad.atleast_3d(t(1.0), t([1.0, 2.0]), m)] == \
        [(1, 1, 1), (1, 2, 1), (2, 6, 1)]
    assert minigrad.broadcast_shapes((2, 1), (3,)) == (2, 3)
    assert [a.shape for a in minigrad.broadcast_tensors(t([[1.0], [2.0]]), t([1.0, 2.0]))] \
        == [(2, 2), (2, 2)]
    assert minigrad.hstack([t([1.0]), t([2.0, 3.0])]).tolist() == [1, 2, 3]
    assert minigrad.vstack([t([1.0, 2.0]), t([3.0, 4.0])]).shape == (2, 2)
    assert minigrad.dstack([t([1.0, 2.0]), t([3.0, 4.0])]).shape == (1, 2, 2)
    assert minigrad.column_stack([t([1.0, 2.0]), t([[3.0], [4.0]])]).tolist() == \
        [[1, 3], [2, 4]]
    assert m.new_full((2,), 7).tolist() == [7, 7] and m.new_zeros(3).dtype == m.dtype
    assert m.new_ones((1, 2), dtype=minigrad.int64).dtype == np.int64
    mn, mx = t([[3.0, -1.0], [2.0, 5.0]]).aminmax(dim=0)
    assert mn.tolist() == [2, -1] and mx.tolist() == [3, 5]


def test_tests_without_gradient():
    x = t([-0.0, 0.0, -np.inf, np.inf, np.nan])
    assert x.signbit().tolist() == [True, False, True, False, False]
    assert x.isposinf().tolist() == [False, False, False, True, False]
    assert x.isneginf().tolist() == [False, False, True, False, False]
    a, b = t([0.0, 1.0, 2.0, np.nan]), t([0.0, 0.0, 3.0, 0.0])
    assert a.logical_and(b).tolist() == [False, False, True, False]
    assert a.logical_or(b).tolist() == [False, True, True, True]
    assert a.logical_xor(b).tolist() == [False, True, False, True]
    assert a.logical_not().tolist() == [True, False, False, False]
    assert t([1.0]).float_power(2).dtype == np.float64
    assert t([1.0], dtype=np.float32).float_power(2).dtype == np.float64


# ------------------------------------------------------------- gradients
GRADS = {
    "expm1": (lambda x: x.expm1(), [[0.3, -1.2]]),
    "log1p": (lambda x: x.log1p(), [[0.3, 1.2]]),
    "sinc": (lambda x: x.sinc(), [[0.3, -1.7]]),
    "logit": (lambda x: x.logit(), [[0.3, 0.8]]),
    "logit-eps": (lambda x: x.logit(eps=0.2), [[0.3, 0.5]]),
    "xlogy": (lambda x, y: x.xlogy(y), [[0.5, -2.0], [1.5, 0.7]]),
    "hypot": (lambda x, y: x.hypot(y), [[0.5, -2.0], [1.5, 0.7]]),
    "fmax": (lambda x, y: x.fmax(y), [[0.5, -2.0], [1.5, -3.0]]),
    "fmin": (lambda x, y: x.fmin(y), [[0.5, -2.0], [1.5, -3.0]]),
    "nan_to_num": (lambda x: x.nan_to_num(), [[0.5, -2.0]]),
    "logaddexp2": (lambda x, y: x.logaddexp2(y), [[0.5, -2.0], [1.5, 0.7]]),
    "frac": (lambda x: x.frac(), [[0.5, -2.25]]),
    "float_power": (lambda x: x.float_power(3), [[0.5, -2.0]]),
    "nanmean": (lambda x: x.nanmean(), [[0.5, -2.0, 3.0]]),
    "diff": (lambda x: x.diff(n=2), [[0.5, -2.0, 3.0, 1.0]]),
    "dist": (lambda x, y: x.dist(y), [[0.5, -2.0], [1.5, 0.7]]),
    "rot90": (lambda x: x.rot90(3), [[[0.5, -2.0], [3.0, 1.0]]]),
    "diag": (lambda x: x.diag(1), [[0.5, -2.0]]),
    "kron": (lambda x, y: x.kron(y), [[[0.5, -2.0]], [[1.5], [0.7]]]),
    "cross": (lambda x, y: x.cross(y), [[0.5, -2.0, 1.0], [1.5, 0.7, -0.3]]),
    "tensordot": (lambda x, y: minigrad.tensordot(x, y, ([0], [1])),
                  [[[0.5, -2.0], [1.0, 2.0]], [[1.5, 0.7], [0.1, -0.3]]]),
    "addcdiv": (lambda x, y, z: x.addcdiv(y, z, value=0.5), [[0.5], [1.5], [0.7]]),
    "take": (lambda x: x.take(minigrad.tensor([1, 1, 0])), [[0.5, -2.0]]),
    "prelu": (lambda x, w: F.prelu(x, w), [[[-0.5, 2.0]], [0.3]]),
    "glu": (lambda x: F.glu(x), [[0.5, -2.0, 1.0, 0.3]]),
    "rms_norm": (lambda x, w: F.rms_norm(x, (2,), w), [[[0.5, -2.0]], [1.5, 0.7]]),
    "softshrink": (lambda x: F.softshrink(x), [[0.9, -2.0, 0.1]]),
    "pixel_shuffle": (lambda x: F.pixel_shuffle(x, 2), [np.arange(8.0).reshape(1, 4, 2, 1)]),
    "cosine_embedding": (lambda x, y: F.cosine_embedding_loss(x, y, t([1.0, -1.0])),
                         [[[0.5, -2.0], [1.0, 1.0]], [[1.5, 0.7], [0.9, 1.1]]]),
    "triplet": (lambda a, p, n: F.triplet_margin_loss(a, p, n, margin=3.0),
                [[[0.5, -2.0]], [[1.5, 0.7]], [[0.1, 0.2]]]),
    "poisson_full": (lambda x: F.poisson_nll_loss(x, t([0.0, 3.0]), log_input=False,
                                                  full=True), [[0.5, 2.0]]),
}


@pytest.mark.parametrize("name", sorted(GRADS))
def test_gradients_match_finite_differences(name):
    fn, values = GRADS[name]
    assert gradcheck(fn, [t(v, grad=True) for v in values])


def test_gradients_at_pytorchs_special_points():
    """Where the formula divides by zero, PyTorch's value (derivatives.yaml)."""
    x = t([0.0, 2.0], grad=True)
    x.sinc().sum().backward()
    assert x.grad.tolist()[0] == 0.0
    x, y = t([0.0, 0.0], grad=True), t([0.0, -1.0], grad=True)
    x.xlogy(y).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0]            # x = 0 and y <= 0: 0, not -inf or nan
    a, b = t([1.0, 2.0], grad=True), t([1.0, np.nan], grad=True)
    a.fmax(b).sum().backward()
    assert a.grad.tolist() == [1.0, 1.0] and b.grad.tolist() == [0.0, 0.0]   # a tie: to a
    x = t([np.nan, 1.0, np.inf], grad=True)
    x.nan_to_num().sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
    x = t([1.0, np.nan], grad=True)
    x.nansum().backward()
    assert x.grad.tolist() == [1.0, 0.0]
    x = t([0.1, 0.5], grad=True)
    x.logit(eps=0.2).sum().backward()
    assert x.grad.tolist() == [0.0, 4.0]            # clamped: no gradient


# --------------------------------------------------------------- refusals
REFUSED = [
    (lambda: t([1.0]).diff(n=-1), ValueError, "non-negative"),
    (lambda: t(1.0).diff(), ValueError, "at least 1 dimensions"),
    (lambda: t(np.zeros((2, 5))).hsplit(3), ValueError, "not divisible"),
    (lambda: t(np.zeros(4)).vsplit(2), ValueError, "at least 2"),
    (lambda: t(np.zeros(4)).narrow(0, 3, 2), IndexError, "do not fit"),
    (lambda: t(np.zeros(4)).select(0, 4), IndexError, "out of range"),
    (lambda: t(np.zeros((2, 2))).rot90(dims=(0, 0)), ValueError, "must differ"),
    (lambda: t(np.zeros((2, 2, 2))).diag(), ValueError, "1 or 2 dimensions"),
    (lambda: t([1.0, 2.0]).cross(t([1.0, 2.0])), ValueError, "size 3"),
    (lambda: t(np.zeros((2, 3))).cross(t(np.zeros(3)), dim=1), ValueError,
     "same number of dimensions"),
    (lambda: t([1.0]).take(minigrad.tensor([1])), IndexError, "out of range"),
    (lambda: t([1.0]).masked_select(minigrad.tensor([1])), TypeError, "must be bool"),
    (lambda: minigrad.tensor([1, 2]).frac(), TypeError, "floating"),
    (lambda: minigrad.tensor([1, 2]).nanmean(), TypeError, "floating"),
    (lambda: minigrad.tensor([True]).positive(), TypeError, "bool"),
    (lambda: t([]).aminmax(), ValueError, "empty"),
    (lambda: minigrad.tensor([1]).addcdiv(minigrad.tensor([1]), minigrad.tensor([2])),
     TypeError, "integer division"),
    (lambda: F.softshrink(t([1.0]), -0.5), ValueError, ">= 0"),
    (lambda: F.glu(t([1.0, 2.0, 3.0])), ValueError, "even"),
    (lambda: F.prelu(t(np.zeros((2, 3))), t([1.0, 2.0])), ValueError, "1 or the 3"),
    (lambda: F.rms_norm(t(np.zeros((2, 3))), (2,)), ValueError, "last"),
    (lambda: F.pixel_shuffle(t(np.zeros((1, 3, 2, 2))), 2), ValueError, "C·r²"),
    (lambda: F.triplet_margin_loss(t([[0.0]]), t([[0.0]]), t([[0.0]]), margin=0),
     ValueError, "greater than 0"),
    (lambda: F.soft_margin_loss(t([0.0]), t([1.0]), reduction="avg"), ValueError,
     "reduction"),
]


@pytest.mark.parametrize("case", range(len(REFUSED)))
def test_refusals_name_the_problem(case):
    call, error, text = REFUSED[case]
    with pytest.raises(error, match=text):
        call()
