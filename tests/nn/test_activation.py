"""Activations: erf accuracy, GELU (exact and tanh), the activation layers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad
from minigrad import nn
from minigrad.functions.activation import erf, erfc
from tests.helpers import check_gradients, compare_with_torch

EDGES = np.array([0.0, -0.0, 1e-300, 0.46875, -0.46875, 0.5, 4.0, -4.0, 4.0001, 5.9,
                  26.5, 27.5, -27.5, 40.0, -40.0, np.inf, -np.inf])


def test_erf_to_float64_rounding():
    x = np.concatenate([np.linspace(-8, 8, 40001), EDGES])
    ref = np.array([math.erf(v) for v in x])
    np.testing.assert_allclose(erf(x), ref, rtol=1e-15, atol=3e-16)


def test_erfc_relative_accuracy_in_the_tail():
    x = np.concatenate([np.linspace(-6, 26, 32001), EDGES])
    ref = np.array([math.erfc(v) for v in x])
    np.testing.assert_allclose(erfc(x), ref, rtol=2e-15, atol=1e-320)
    assert erfc(np.array([np.inf]))[0] == 0.0 and erfc(np.array([-np.inf]))[0] == 2.0


def test_erf_keeps_float32_and_nan():
    assert erf(np.ones(3, dtype=np.float32)).dtype == np.float32
    assert np.isnan(erf(np.array([np.nan]))[0])


@settings(max_examples=20, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4),
                  elements=st.floats(-6, 6)), st.sampled_from(["none", "tanh"]))
def test_gelu_gradcheck(x, approximate):
    assert check_gradients(lambda t: nn.functional.gelu(t, approximate), [x])


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_parity_with_torch(torch, approximate, device):
    x = np.concatenate([np.linspace(-10, 10, 201), [-40.0, 40.0, 0.0, -5.5]])
    compare_with_torch(torch, lambda t: nn.GELU(approximate)(t),
                       lambda t: torch.nn.functional.gelu(t, approximate=approximate),
                       [x], device=device, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("layer, reference", [
    (nn.ReLU, "relu"), (nn.Tanh, "tanh"), (nn.Sigmoid, "sigmoid")])
def test_pointwise_layers_parity(torch, layer, reference, device):
    x = np.random.default_rng(0).standard_normal((3, 4)) * 5
    x[0, 0] = 0.0
    compare_with_torch(torch, lambda t: layer()(t), getattr(torch, reference), [x],
                       device=device, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("layer", [nn.ReLU, nn.Tanh, nn.Sigmoid, nn.GELU])
def test_pointwise_layers_gradcheck(layer):
    x = np.random.default_rng(1).standard_normal((2, 3)) * 3 + 0.1
    assert check_gradients(lambda t: layer()(t), [x])


def test_softmax_layer_parity(torch):
    x = np.random.default_rng(2).standard_normal((2, 3, 4))
    compare_with_torch(torch, lambda t: nn.Softmax(axis=1)(t),
                       lambda t: torch.softmax(t, dim=1), [x], rtol=1e-13, atol=1e-15)
    assert check_gradients(lambda t: nn.Softmax(axis=1)(t), [x])


def test_gelu_values_and_errors():
    y = nn.GELU()(minigrad.tensor([0.0, 1.0, -1.0], dtype=np.float64))
    np.testing.assert_allclose(y.numpy(), [0.0, 0.8413447460685429, -0.15865525393145707],
                               rtol=1e-15)
    with pytest.raises(ValueError, match="approximate must be 'none' or 'tanh'"):
        nn.GELU("fast")
    with pytest.raises(ValueError, match="approximate"):
        nn.functional.gelu(minigrad.randn(2), approximate="erf")
    assert repr(nn.GELU("tanh")) == "GELU(approximate='tanh')"


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gelu_tanh_block_by_block_matches_the_formula(dtype):
    """GELU's tanh form runs in place on blocks of the flattened array: over several
    blocks, and on a non-contiguous input (one whole call), it gives the
    one-line formulas' values and derivative to rounding."""
    from minigrad.functions.activation import _BLOCK
    rng = np.random.default_rng(0)
    base = (3 * rng.standard_normal((3, _BLOCK + 7))).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    for a in (base, base[:, ::2]):
        x = minigrad.tensor(a, requires_grad=True)
        y = nn.functional.gelu(x, approximate="tanh")
        g = rng.standard_normal(a.shape).astype(dtype)
        y.backward(minigrad.tensor(g))
        c = math.sqrt(2 / math.pi)
        t = np.tanh(c * (a + 0.044715 * a ** 3))
        np.testing.assert_allclose(y.numpy(), 0.5 * a * (1 + t), rtol=tol, atol=tol)
        d = 0.5 * (1 + t) + 0.5 * a * (1 - t * t) * c * (1 + 3 * 0.044715 * a * a)
        np.testing.assert_allclose(x.grad.numpy(), g * d, rtol=tol, atol=tol)
