"""``inplace=True`` of the activations and of dropout (PyTorch's meaning: the
input is overwritten and returned, the gradient still flows), and the
PyTorch arguments added with it: avg_pool2d's divisor_override,
``div_(rounding_mode=)``, ``cumsum(dtype=)``."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.nn import functional as F

X = np.linspace(-7.0, 7.0, 12).reshape(3, 4)
ACTIVATIONS = {          # name: a call with inplace=True, given either functional module
    "relu": lambda F, h: F.relu(h, inplace=True),
    "relu6": lambda F, h: F.relu6(h, inplace=True),
    "leaky_relu": lambda F, h: F.leaky_relu(h, 0.2, True),
    "elu": lambda F, h: F.elu(h, 0.5, True),
    "hardtanh": lambda F, h: F.hardtanh(h, -2.0, 3.0, True),
    "silu": lambda F, h: F.silu(h, inplace=True),
    "mish": lambda F, h: F.mish(h, inplace=True),
    "hardswish": lambda F, h: F.hardswish(h, inplace=True),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_inplace_activation_matches_torch(torch, name):
    call = ACTIVATIONS[name]
    results = []
    for lib, functional in ((minigrad, F), (torch, torch.nn.functional)):
        x = lib.tensor(X, requires_grad=True)
        h = x * 1.5                                   # an interior tensor, as in a network
        out = call(functional, h)
        assert out is h
        (h * h).sum().backward()                      # h now holds the activation
        results.append((h.detach().numpy(), x.grad.numpy()))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(results[0][1], results[1][1], rtol=1e-12, atol=1e-12)


LAYERS = {              # name: a layer with inplace=True, given either nn module
    "ReLU": lambda nn: nn.ReLU(inplace=True),
    "LeakyReLU": lambda nn: nn.LeakyReLU(0.1, inplace=True),
    "ELU": lambda nn: nn.ELU(inplace=True),
    "Hardtanh": lambda nn: nn.Hardtanh(-1.0, 2.0, True),
    "ReLU6": lambda nn: nn.ReLU6(True),
    "SiLU": lambda nn: nn.SiLU(True),
    "Mish": lambda nn: nn.Mish(True),
    "Hardswish": lambda nn: nn.Hardswish(True),
}


@pytest.mark.parametrize("name", LAYERS)
def test_inplace_layers_overwrite_their_input(torch, name):
    mine, theirs = LAYERS[name](nn), LAYERS[name](torch.nn)
    h, th = minigrad.tensor(X.copy()), torch.tensor(X.copy())
    assert mine(h) is h and theirs(th) is th
    np.testing.assert_allclose(h.numpy(), th.numpy(), rtol=1e-12, atol=1e-12)
    assert "inplace=True" in repr(mine) and "inplace" not in repr(type(mine)())


def test_inplace_on_a_leaf_that_requires_grad_is_refused():
    x = minigrad.tensor(X, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        F.relu(x, inplace=True)
    with minigrad.no_grad():                          # allowed without a graph
        assert F.relu(x, inplace=True) is x
    assert (x.numpy() >= 0).all()


def test_inplace_dropout():
    minigrad.manual_seed(0)
    x = minigrad.tensor(np.ones((50, 40)), requires_grad=True)
    h = x * 1
    out = F.dropout(h, 0.5, inplace=True)
    assert out is h
    kept = h.numpy() != 0
    np.testing.assert_array_equal(h.numpy()[kept], 2.0)
    h.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2.0 * kept)
    layer = nn.Dropout(0.5, inplace=True)
    g = minigrad.tensor(np.ones((4, 4)))
    assert layer(g) is g and "inplace=True" in repr(layer)


def test_avg_pool2d_divisor_override_matches_torch(torch):
    from tests.helpers import compare_with_torch
    x = np.random.default_rng(3).standard_normal((2, 2, 5, 6))
    for kwargs in ({"divisor_override": 3}, {"divisor_override": 2, "padding": 1,
                                               "stride": 2, "ceil_mode": True}):
        compare_with_torch(torch, lambda t: F.avg_pool2d(t, 3, **kwargs),
                           lambda t: torch.nn.functional.avg_pool2d(t, 3, **kwargs), [x])
    layer = nn.AvgPool2d(2, divisor_override=1)
    np.testing.assert_allclose(layer(minigrad.tensor(x)).numpy(),
                               torch.nn.AvgPool2d(2, divisor_override=1)(torch.tensor(x)))
    with pytest.raises(ValueError, match="divisor_override must not be zero"):
        F.avg_pool2d(minigrad.tensor(x), 2, divisor_override=0)


def test_div_rounding_mode_in_place_and_cumsum_dtype(torch):
    for mode in ("floor", "trunc"):
        a, ta = minigrad.tensor([5, 7, -3]), torch.tensor([5, 7, -3])
        assert a.div_(2, rounding_mode=mode) is a
        np.testing.assert_array_equal(a.numpy(), ta.div_(2, rounding_mode=mode).numpy())
        f, tf = minigrad.tensor([5.5, -7.25]), torch.tensor([5.5, -7.25])
        np.testing.assert_array_equal(f.div_(2.0, rounding_mode=mode).numpy(),
                                      tf.div_(2.0, rounding_mode=mode).numpy())
    out = minigrad.tensor([1, 2, 3]).cumsum(0, dtype=minigrad.float64)
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out.numpy(), [1.0, 3.0, 6.0])
