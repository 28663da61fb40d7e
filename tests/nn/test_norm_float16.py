"""Normalization layers in float16 compute their statistics in float32, as
PyTorch does: with a standard deviation above 256, (x - μ)² and σ² exceed
float16's largest value (65504)."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad import nn

LAYERS = {
    "LayerNorm": (lambda: nn.LayerNorm(3), lambda t: t.nn.LayerNorm(3)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), lambda t: t.nn.BatchNorm1d(4)),
    "GroupNorm": (lambda: nn.GroupNorm(2, 4), lambda t: t.nn.GroupNorm(2, 4)),
}


def _data():
    rng = np.random.default_rng(0)
    x = (rng.standard_normal((8, 4, 3)) * 300 + 100).astype(np.float16)
    g = rng.standard_normal(x.shape).astype(np.float16)
    return x, g


@pytest.mark.parametrize("name", LAYERS)
def test_float16_wide_values_normalize_like_torch(name, torch):
    x, g = _data()
    make, make_torch = LAYERS[name]
    layer, reference = make(), make_torch(torch).half()
    layer.to(np.float16)
    mx, tx = minigrad.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    y, ty = layer(mx), reference(tx)
    y.backward(minigrad.tensor(g))
    ty.backward(torch.tensor(g))
    assert y.dtype == np.float16 and mx.grad.dtype == np.float16
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), atol=2e-3)
    np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), atol=2e-3)


def test_float16_running_variance_of_wide_values_matches_torch(torch):
    """A batch variance above 65504 blends in float32 (as PyTorch), not into inf."""
    x, _ = _data()
    layer, reference = nn.BatchNorm1d(4), torch.nn.BatchNorm1d(4).half()
    layer.to(np.float16)
    layer(minigrad.tensor(x))
    reference(torch.tensor(x))
    np.testing.assert_allclose(layer.running_var.numpy(), reference.running_var.numpy(),
                               rtol=1e-3)
