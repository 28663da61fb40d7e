"""Elementwise functions: gradchecks over broadcast shapes, exact edge values,
float32 preservation, and parity with PyTorch."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad
from tests.functions import (FAST, away_from_zero, broadcast_pair, positive, shapes,
                             values)
from tests.helpers import check_gradients, compare_with_torch


def _tensor(data, device="cpu", dtype=np.float64, requires_grad=True):
    return minigrad.tensor(np.asarray(data, dtype=dtype), device=device,
                           requires_grad=requires_grad)


def _grad_of(fn, data, device="cpu", dtype=np.float64):
    """Gradient of fn(x).sum() at ``data``."""
    x = _tensor(data, device, dtype)
    fn(x).sum().backward()
    return x.grad.numpy()


# ----------------------------------------------------------- binary, broadcast
def _checkerboard(a, b):
    """A fixed boolean condition of the broadcast shape (True, False, True, ...)."""
    shape = np.broadcast_shapes(a.shape, b.shape)
    return np.arange(int(np.prod(shape))).reshape(shape) % 2 == 0


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "where": lambda a, b: minigrad.where(_checkerboard(a, b), a, b),
}


@pytest.mark.parametrize("name", sorted(BINARY))
@FAST
@given(pair=broadcast_pair())
def test_binary_gradcheck_broadcasting(name, pair):
    assert check_gradients(BINARY[name], list(pair))


@FAST
@given(pair=broadcast_pair(elements=away_from_zero))
def test_div_gradcheck_broadcasting(pair):
    assert check_gradients(lambda a, b: a / b, list(pair))


@FAST
@given(pair=broadcast_pair(elements=positive))
def test_pow_tensor_exponent_gradcheck(pair):
    assert check_gradients(lambda a, b: a ** b, list(pair))


def _quarter_grid(shape):
    """float64 arrays of ``shape`` with values on the grid k/4, k in [-8, 8]."""
    return hnp.arrays(np.float64, shape, elements=st.integers(-8, 8).map(lambda k: k / 4))


@FAST
@given(pair=broadcast_pair(elements=_quarter_grid))
def test_maximum_minimum_gradcheck(pair):
    a, b = pair
    b = b + 0.125          # a on the grid k/4, b on k/4 + 1/8: never tied
    assert check_gradients(minigrad.maximum, [a, b])
    assert check_gradients(minigrad.minimum, [a, b])


@FAST
@given(pair=broadcast_pair())
def test_binary_gradient_has_each_input_shape(pair):
    a, b = (minigrad.tensor(x, requires_grad=True) for x in pair)
    for out in (a + b, a - b, a * b, a / (b * b + 1), minigrad.maximum(a, b),
                minigrad.minimum(a, b), minigrad.where(a.data > 0, a, b)):
        a.grad = b.grad = None
        out.sum().backward()
        assert a.grad.shape == a.shape and b.grad.shape == b.shape
        assert a.grad.dtype == a.dtype and b.grad.dtype == b.dtype


def test_broadcast_gradient_sums_over_broadcast_axes():
    a = _tensor(np.ones((2, 1, 3)))
    b = _tensor(np.ones((4, 1)))
    (a * b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), np.full((2, 1, 3), 4.0))
    np.testing.assert_array_equal(b.grad.numpy(), np.full((4, 1), 6.0))
    s = _tensor(2.0)                 # 0-d
    (s * _tensor(np.ones((2, 3)), requires_grad=False)).sum().backward()
    assert s.grad.shape == () and s.grad.item() == 6.0


def test_incompatible_shapes_name_both():
    a, b = minigrad.ones(2, 3), minigrad.ones(4)
    for op in (lambda: a + b, lambda: a * b, lambda: a - b, lambda: a / b,
               lambda: minigrad.maximum(a, b), lambda: minigrad.minimum(a, b)):
        with pytest.raises(ValueError, match=r"\(2, 3\) and \(4,\)"):
            op()
    with pytest.raises(ValueError, match=r"\(2, 3\).*\(4,\)"):
        minigrad.where(np.ones((2, 3), bool), a, b)


# ------------------------------------------------------------------- unary ops
UNARY = {
    "neg": (lambda x: -x, values),
    "exp": (lambda x: x.exp(), values),
    "log": (lambda x: x.log(), positive),
    "sqrt": (lambda x: x.sqrt(), positive),
    "abs": (lambda x: x.abs(), away_from_zero),
    "tanh": (lambda x: x.tanh(), values),
    "sigmoid": (lambda x: x.sigmoid(), values),
    "relu": (lambda x: x.relu(), away_from_zero),
    "pow2": (lambda x: x ** 2, values),
    "pow3": (lambda x: x ** 3, values),
    "pow-half": (lambda x: x ** -0.5, positive),
    "pow0": (lambda x: x ** 0, values),
    "pow1": (lambda x: x ** 1, values),
    "rpow": (lambda x: 2.0 ** x, values),
    "scalar-arith": (lambda x: (3 - x) * 2 / 4 + 1 - x / 2, values),
    "rdiv": (lambda x: 1 / x, away_from_zero),
    "clip": (lambda x: x.clip(-0.45, 0.55), away_from_zero),
    "clip-low": (lambda x: x.clip(min=0.05), away_from_zero),
    "module-functions": (lambda x: minigrad.tanh(minigrad.exp(x)) + minigrad.sigmoid(x)
                         + minigrad.relu(x) + minigrad.abs(x), away_from_zero),
}


@pytest.mark.parametrize("name", sorted(UNARY))
@FAST
@given(data=st.data())
def test_unary_gradcheck(name, data):
    fn, elements = UNARY[name]
    x = data.draw(shapes.flatmap(elements))
    if name.startswith("clip"):   # keep finite differences off the clip edges
        for edge in (-0.45, 0.55, 0.05):                  # the bounds used above
            x = np.where(np.isclose(x, edge, atol=0.02), 0.3, x)
    assert check_gradients(fn, [x])


# ----------------------------------------------------------------- edge values
def test_square_derivative_at_zero_is_zero():
    assert _grad_of(lambda x: x ** 2, [0.0]).tolist() == [0.0]
    assert _grad_of(lambda x: x * x, [0.0]).tolist() == [0.0]


def test_sqrt_derivative_at_zero_is_inf():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = _grad_of(lambda x: x.sqrt(), [0.0, 4.0])
    assert g[0] == np.inf and g[1] == 0.25


def test_log_at_zero():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        x = _tensor([0.0, 1.0])
        y = x.log()
        y.sum().backward()
    assert y.numpy()[0] == -np.inf and x.grad.numpy()[0] == np.inf


def test_pow_exponent_gradient_at_base_zero_is_zero():
    a = _tensor([0.0, 0.0, 2.0])
    b = _tensor([2.0, 0.5, 3.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (a ** b).sum().backward()
    # d/db 0**b = 0 for b > 0; d/da 0**2 = 0, d/da 0**0.5 = inf
    np.testing.assert_array_equal(b.grad.numpy(), [0.0, 0.0, 8 * np.log(2.0)])
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, np.inf, 12.0])


def test_pow_base_gradient_with_zero_exponent_is_zero():
    a = _tensor([0.0, 3.0])
    (a ** _tensor([0.0, 0.0], requires_grad=False)).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.0, 0.0])
    assert _grad_of(lambda x: x ** 0, [0.0, 5.0]).tolist() == [0.0, 0.0]


@pytest.mark.parametrize("name", ["tanh", "sigmoid"])
def test_tanh_sigmoid_saturate_without_warnings(name, device):
    x = _tensor([-1000.0, 1000.0, -1e30, 1e30], device)
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        y = getattr(x, name)()
        y.sum().backward()
    low = -1.0 if name == "tanh" else 0.0
    np.testing.assert_array_equal(y.numpy(), [low, 1.0, low, 1.0])
    np.testing.assert_array_equal(x.grad.numpy(), [0.0] * 4)


def test_sigmoid_float32_extremes(device):
    """sigmoid(-100) = 3.78e-44 is a float32 subnormal: the CPU (NumPy) keeps it,
    the GPU may flush it to 0 (CUDA kernels flush float32 subnormals); what
    minigrad promises on every device is an error of at most float32's smallest
    normal number, ``finfo(float32).tiny`` (see minigrad.backend)."""
    x = _tensor([-100.0, 0.0, 100.0], device, np.float32)
    with np.errstate(all="raise"):
        y = x.sigmoid()
    exact = np.exp(np.float32(-100.0))
    tiny = np.finfo(np.float32).tiny
    assert 0 < exact < tiny                                  # a subnormal
    got = y.numpy()
    assert got[1:].tolist() == [0.5, 1.0]
    assert abs(float(got[0]) - float(exact)) <= tiny         # the promise, every device
    if device == "cpu":
        np.testing.assert_allclose(got[0], exact, rtol=1e-6)  # NumPy keeps subnormals
    else:
        assert got[0] == 0.0 or got[0] == pytest.approx(exact, rel=1e-6)
    assert y.dtype == np.float32


def test_abs_and_relu_derivative_at_zero_is_zero(device):
    assert _grad_of(lambda x: x.abs(), [0.0, -2.0, 3.0], device).tolist() == [0.0, -1.0, 1.0]
    assert _grad_of(lambda x: x.relu(), [0.0, -2.0, 3.0], device).tolist() == [0.0, 0.0, 1.0]


def test_maximum_minimum_ties_split_evenly(device):
    for fn in (minigrad.maximum, minigrad.minimum):
        a = _tensor([1.0, 2.0, 3.0], device)
        b = _tensor([1.0, 5.0, 0.0], device)
        fn(a, b).sum().backward()
        winner_a = [0.5, 0.0, 1.0] if fn is minigrad.maximum else [0.5, 1.0, 0.0]
        np.testing.assert_array_equal(a.grad.numpy(), winner_a)
        np.testing.assert_array_equal(b.grad.numpy(), 1 - np.array(winner_a))


def test_maximum_tie_against_broadcast_scalar():
    a = _tensor([0.0, 0.0, 1.0])
    b = _tensor(0.0)
    minigrad.maximum(a, b).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [0.5, 0.5, 1.0])
    assert b.grad.item() == 1.0


def test_clip_gradient_passes_inside_and_at_bounds():
    g = _grad_of(lambda x: x.clip(-1.0, 1.0), [-2.0, -1.0, 0.0, 1.0, 2.0])
    np.testing.assert_array_equal(g, [0.0, 1.0, 1.0, 1.0, 0.0])


def test_where_sends_gradient_to_the_chosen_side():
    a, b = _tensor([1.0, 2.0, 3.0]), _tensor([4.0, 5.0, 6.0])
    cond = minigrad.tensor([True, False, True])
    out = minigrad.where(cond, a, b)
    out.backward(minigrad.tensor([1.0, 2.0, 3.0], dtype=np.float64))
    np.testing.assert_array_equal(out.numpy(), [1.0, 5.0, 3.0])
    np.testing.assert_array_equal(a.grad.numpy(), [1.0, 0.0, 3.0])
    np.testing.assert_array_equal(b.grad.numpy(), [0.0, 2.0, 0.0])


# --------------------------------------------------------------------- float32
FLOAT32_OPS = {
    "add-scalar": lambda x: x + 1.5, "radd": lambda x: 2.5 + x,
    "sub-scalar": lambda x: x - 0.1, "rsub": lambda x: 1.0 - x,
    "mul-scalar": lambda x: x * 0.3, "rmul": lambda x: 0.3 * x,
    "div-scalar": lambda x: x / 3.0, "rdiv": lambda x: 1.0 / (x * x + 1),
    "pow-scalar": lambda x: (x * x) ** 1.5, "pow-int": lambda x: x ** 3,
    "rpow": lambda x: 2.0 ** x, "pow-tensor": lambda x: (x * x + 1) ** x,
    "neg": lambda x: -x, "exp": lambda x: x.exp(), "log": lambda x: (x * x + 1).log(),
    "sqrt": lambda x: (x * x + 1).sqrt(), "abs": lambda x: x.abs(),
    "tanh": lambda x: x.tanh(), "sigmoid": lambda x: x.sigmoid(),
    "relu": lambda x: x.relu(), "clip": lambda x: x.clip(-0.5, 0.5),
    "maximum": lambda x: minigrad.maximum(x, 0.2), "minimum": lambda x: minigrad.minimum(x, 0.2),
    "where": lambda x: minigrad.where(x.data > 0, x, 0.5),
    "numpy-scalar": lambda x: x * np.float64(2.0) / np.sqrt(64),
    "numpy-scalar-left": lambda x: np.float64(2.0) * x + np.float64(1.0),
}


@pytest.mark.parametrize("name", sorted(FLOAT32_OPS))
def test_float32_stays_float32(name, device):
    x = _tensor([[-1.5, 0.5, 2.0], [0.25, -0.75, 1.0]], device, np.float32)
    y = FLOAT32_OPS[name](x)
    assert y.dtype == np.float32, f"{name} gave {y.dtype}"
    y.sum().backward()
    assert x.grad.dtype == np.float32


# ----------------------------------------------------------- parity with torch
def _arrays(rng, *shapes, low=-2.0, high=2.0):
    return [rng.uniform(low, high, s) for s in shapes]


def _away(rng, *shapes):
    return [rng.uniform(0.2, 2.0, s) * rng.choice([-1.0, 1.0], s) for s in shapes]


def _torch_cases(torch):
    rng = np.random.default_rng(1)
    cond = rng.random((3, 4)) > 0.5
    return {
        "add": (lambda a, b: a + b, lambda a, b: a + b, _arrays(rng, (2, 3, 4), (3, 1))),
        "sub": (lambda a, b: a - b, lambda a, b: a - b, _arrays(rng, (4,), (2, 3, 4))),
        "mul": (lambda a, b: a * b, lambda a, b: a * b, _arrays(rng, (3, 1), (1, 4))),
        "div": (lambda a, b: a / b, lambda a, b: a / b, _away(rng, (2, 3), (3,))),
        "pow": (lambda a, b: a ** b, lambda a, b: a ** b,
                _arrays(rng, (2, 3), (2, 3), low=0.3, high=2.0)),
        "pow-scalar": (lambda a: a ** 3, lambda a: a ** 3, _arrays(rng, (2, 3))),
        "pow-frac": (lambda a: a ** 1.5, lambda a: a ** 1.5,
                     _arrays(rng, (5,), low=0.1, high=2.0)),
        "rpow": (lambda a: 3.0 ** a, lambda a: 3.0 ** a, _arrays(rng, (4,))),
        "neg": (lambda a: -a, lambda a: -a, _arrays(rng, (3,))),
        "exp": (lambda a: a.exp(), torch.exp, _arrays(rng, (2, 3))),
        "log": (lambda a: a.log(), torch.log, _arrays(rng, (2, 3), low=0.1)),
        "sqrt": (lambda a: a.sqrt(), torch.sqrt, _arrays(rng, (2, 3), low=0.1)),
        "abs": (lambda a: a.abs(), torch.abs, _away(rng, (2, 3))),
        "tanh": (lambda a: a.tanh(), torch.tanh, _arrays(rng, (2, 3), low=-5, high=5)),
        "sigmoid": (lambda a: a.sigmoid(), torch.sigmoid,
                    _arrays(rng, (2, 3), low=-30, high=30)),
        "relu": (lambda a: a.relu(), torch.relu, _away(rng, (2, 3))),
        "maximum": (minigrad.maximum, torch.maximum, _arrays(rng, (3, 4), (4,))),
        "minimum": (minigrad.minimum, torch.minimum, _arrays(rng, (3, 4), (3, 1))),
        "where": (lambda a, b: minigrad.where(cond, a, b),
                  lambda a, b: torch.where(torch.tensor(cond), a, b),
                  _arrays(rng, (3, 4), (4,))),
        "clip": (lambda a: a.clip(-0.5, 0.8), lambda a: a.clamp(-0.5, 0.8),
                 _arrays(rng, (4, 5))),
    }


CASE_NAMES = ["add", "sub", "mul", "div", "pow", "pow-scalar", "pow-frac", "rpow", "neg",
              "exp", "log", "sqrt", "abs", "tanh", "sigmoid", "relu", "maximum", "minimum",
              "where", "clip"]


@pytest.mark.parametrize("name", CASE_NAMES)
def test_parity_with_torch(name, torch):
    mg_fn, th_fn, arrays = _torch_cases(torch)[name]
    compare_with_torch(torch, mg_fn, th_fn, arrays)


def test_parity_on_device(device, torch):
    """The same numbers on every device (the cuda case runs on a GPU)."""
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0.2, 2.0, (3, 4)), rng.uniform(0.2, 2.0, (4,))
    compare_with_torch(torch, lambda x, y: (x * y).exp() / (x + y).sqrt() - (x ** y).log(),
                       lambda x, y: (x * y).exp() / (x + y).sqrt() - (x ** y).log(),
                       [a, b], device=device)


def test_relu_of_minus_inf_is_zero_and_of_nan_is_nan(device):
    y = _tensor([-np.inf, np.nan, 2.0], device).relu()
    out = y.numpy()
    assert out[0] == 0.0 and np.isnan(out[1]) and out[2] == 2.0


def test_broadcast_to_error_names_broadcast_to():
    with pytest.raises(ValueError, match="broadcast_to"):
        minigrad.tensor([1.0]).broadcast_to((2, -3))
