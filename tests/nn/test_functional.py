"""minigrad.nn.functional: exported names, softmax family, errors on bad input."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad
from minigrad.nn import functional as F
from tests.helpers import check_gradients, compare_with_torch

GUIDE_NAMES = ["relu", "gelu", "tanh", "sigmoid", "softmax", "log_softmax", "cross_entropy",
               "mse_loss", "binary_cross_entropy_with_logits", "dropout", "linear",
               "embedding", "nll_loss"]


def test_exports():
    for name in GUIDE_NAMES:
        assert callable(getattr(F, name)), name


shapes = hnp.array_shapes(min_dims=1, max_dims=3, max_side=4)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), shape=shapes)
def test_softmax_family_gradcheck(data, shape):
    x = data.draw(hnp.arrays(np.float64, shape, elements=st.floats(-5, 5)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    assert check_gradients(lambda t: F.softmax(t, axis), [x])
    assert check_gradients(lambda t: F.log_softmax(t, axis), [x])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_family_parity(torch, name, device):
    x = np.random.default_rng(0).standard_normal((3, 5)) * 10
    compare_with_torch(torch, lambda t: getattr(F, name)(t, axis=0),
                       lambda t: getattr(torch, name)(t, dim=0), [x], device=device,
                       rtol=1e-12, atol=1e-14)


def test_log_softmax_with_minus_inf():
    x = minigrad.tensor([[0.0, -np.inf, 1.0]], dtype=np.float64, requires_grad=True)
    y = F.log_softmax(x)
    assert np.isneginf(y.numpy()[0, 1]) and np.isfinite(y.numpy()[0, [0, 2]]).all()
    y[:, 0].sum().backward()
    assert np.isfinite(x.grad.numpy()).all()


@pytest.mark.parametrize("fn", [F.relu, F.tanh, F.sigmoid, F.gelu, F.softmax])
def test_functions_reject_non_tensors(fn):
    with pytest.raises(TypeError, match="expected a Tensor"):
        fn(np.zeros(3))


def test_sigmoid_stable_at_extremes():
    x = minigrad.tensor([-800.0, 800.0], dtype=np.float64)
    np.testing.assert_array_equal(F.sigmoid(x).numpy(), [0.0, 1.0])
