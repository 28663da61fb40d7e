"""softmax and log_softmax: gradchecks over axes, exact values at ±1e8 and with
-inf logits (no nan where the true value is finite), float32, parity with PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad
from tests.functions import FAST, nonempty_shapes, values
from tests.helpers import check_gradients, compare_with_torch

FUNCTIONS = {"softmax": lambda t, axis: t.softmax(axis=axis),
             "log_softmax": lambda t, axis: t.log_softmax(axis=axis),
             "module-softmax": lambda t, axis: minigrad.softmax(t, axis),
             "module-log_softmax": lambda t, axis: minigrad.log_softmax(t, axis)}


def _reference_log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@FAST
@given(data=st.data())
def test_gradcheck_over_axes(name, data):
    x = data.draw(nonempty_shapes.flatmap(lambda s: values(s, -5.0, 5.0)))
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    out = FUNCTIONS[name](minigrad.tensor(x), axis)
    expected = _reference_log_softmax(x, axis)
    if "log" not in name:
        expected = np.exp(expected)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-12, atol=1e-15)
    assert check_gradients(lambda t: FUNCTIONS[name](t, axis), [x])


def _run_quietly(fn, x):
    """fn(x) and the gradient of sum(fn(x) * weights), raising on any warning."""
    t = minigrad.tensor(np.asarray(x, dtype=np.float64), requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = fn(t)
        out.backward(minigrad.tensor(np.arange(1.0, t.numel() + 1).reshape(t.shape)))
    return out.numpy(), t.grad.numpy()


def test_huge_logits_are_exact():
    x = [[1e8, 0.0, -1e8], [1e8, 1e8, -1e8]]
    p, g = _run_quietly(lambda t: t.softmax(axis=1), x)
    np.testing.assert_array_equal(p, [[1.0, 0.0, 0.0], [0.5, 0.5, 0.0]])
    assert np.isfinite(g).all()
    lp, g = _run_quietly(lambda t: t.log_softmax(axis=1), x)
    np.testing.assert_array_equal(lp, [[0.0, -1e8, -2e8], [-np.log(2), -np.log(2), -2e8 - np.log(2)]])
    # d/dx_j sum_i w_i log p_i = w_j - p_j * sum_i w_i, with w = 1..6
    np.testing.assert_allclose(g, [[1 - 6, 2, 3], [4 - 7.5, 5 - 7.5, 6]], rtol=1e-15)


def test_minus_inf_logits_give_zero_probability_and_finite_gradients():
    x = [[0.0, -np.inf, np.log(3.0)], [-np.inf, 2.0, -np.inf]]
    p, g = _run_quietly(lambda t: t.softmax(axis=-1), x)
    np.testing.assert_allclose(p, [[0.25, 0.0, 0.75], [0.0, 1.0, 0.0]], rtol=1e-15)
    assert np.isfinite(g).all() and g[0, 1] == 0.0 and g[1, 0] == 0.0
    lp, g = _run_quietly(lambda t: t.log_softmax(axis=-1), x)
    np.testing.assert_allclose(lp, [[np.log(0.25), -np.inf, np.log(0.75)],
                                    [-np.inf, 0.0, -np.inf]], rtol=1e-15)
    assert not np.isnan(lp).any()
    # gradient: w - p * sum(w); finite everywhere, exactly w_j at -inf entries
    np.testing.assert_allclose(g, [[1 - 0.25 * 6, 2, 3 - 0.75 * 6], [4, 5 - 15, 6]],
                               rtol=1e-15)


def test_a_row_of_only_minus_inf_has_no_softmax():
    """Undefined (0/0): nan, as in PyTorch; the other rows are unaffected."""
    x = np.array([[-np.inf, -np.inf], [0.0, 0.0]])
    with np.errstate(invalid="ignore"):
        p = minigrad.tensor(x).softmax(axis=1).numpy()
        lp = minigrad.tensor(x).log_softmax(axis=1).numpy()
    assert np.isnan(p[0]).all() and np.isnan(lp[0]).all()
    np.testing.assert_array_equal(p[1], [0.5, 0.5])


def test_a_row_of_only_minus_inf_is_nan_in_torch_too(torch):
    x = np.array([[-np.inf, -np.inf], [0.0, 0.0]])
    assert torch.isnan(torch.softmax(torch.tensor(x), dim=1)[0]).all()


def test_float32_stays_float32_and_is_exact_at_large_logits(device):
    x = minigrad.tensor([[1e8, 0.0], [-1e8, 1e8]], dtype=np.float32, device=device,
                        requires_grad=True)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        for fn in (x.softmax, x.log_softmax):
            out = fn(axis=1)
            assert out.dtype == np.float32
            out.sum().backward()
            assert x.grad.dtype == np.float32 and np.isfinite(x.grad.numpy()).all()
    np.testing.assert_array_equal(x.softmax(axis=1).numpy(), [[1.0, 0.0], [0.0, 1.0]])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_parity_with_torch(name, axis, torch, device):
    x = np.random.default_rng(6).standard_normal((3, 4, 5)) * 4
    compare_with_torch(torch, lambda t: getattr(t, name)(axis=axis),
                       lambda t: getattr(torch, name)(t, dim=axis), [x], device=device)


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_the_formula_and_finite_differences_without_torch(name, axis, float64):
    """test_parity_with_torch's cases where PyTorch is not installed: the
    forward against the formula in float64, the backward by finite differences."""
    x = np.random.default_rng(6).standard_normal((3, 4, 5)) * 4
    z = x - x.max(axis=axis, keepdims=True)
    log_sum = np.log(np.exp(z).sum(axis=axis, keepdims=True))
    want = np.exp(z - log_sum) if name == "softmax" else z - log_sum
    got = getattr(minigrad.tensor(x), name)(axis=axis).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
    assert check_gradients(lambda t: getattr(t, name)(axis=axis), [x[:2, :3, :2]])


def test_parity_with_torch_for_minus_inf(torch):
    x = np.array([[0.0, -np.inf, 1.5, -2.0]])
    compare_with_torch(torch, lambda t: t.softmax(axis=1), lambda t: t.softmax(dim=1), [x])
    compare_with_torch(torch, lambda t: t.log_softmax(axis=1)[:, [0, 2, 3]],
                       lambda t: t.log_softmax(dim=1)[:, [0, 2, 3]], [x])


def test_bad_axis_names_the_op():
    x = minigrad.zeros(2, 3)
    for fn in (minigrad.softmax, minigrad.log_softmax):
        with pytest.raises(ValueError, match="axis 3 is out of range"):
            fn(x, axis=3)
