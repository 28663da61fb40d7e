"""Dropout: statistics, eval identity, gradients, and masks that micro-batches reproduce."""
from __future__ import annotations

import copy

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad import random as mg_random
from minigrad.nn import functional as F
from tests.helpers import check_gradients


def _mask(y, x):
    return y.numpy() / x.numpy()


def test_hash_stream_is_a_pure_function():
    a = mg_random.hash_uniform(np, 1, 2, np.arange(6))
    b = mg_random.hash_uniform(np, 1, 2, np.arange(6))
    np.testing.assert_array_equal(a, b)
    assert ((a >= 0) & (a < 1)).all()
    assert not np.array_equal(a, mg_random.hash_uniform(np, 1, 3, np.arange(6)))
    # a known value: splitmix64(0) is the classic 0xE220A8397B1DCDAF
    assert int(mg_random.splitmix64(np.array([0], dtype=np.uint64))[0]) == 0xE220A8397B1DCDAF


def test_hash_uniforms_are_uniform():
    u = mg_random.hash_uniform(np, 0, 7, np.arange(200_000))
    assert abs(u.mean() - 0.5) < 0.005
    assert abs(u.var() - 1 / 12) < 0.002
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    assert np.abs(counts / 20_000 - 1).max() < 0.03


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_mask_statistics_and_scaling(p):
    x = minigrad.ones(200, 500)
    y = nn.Dropout(p)(x).numpy()
    kept = y != 0
    assert abs(kept.mean() - (1 - p)) < 0.01
    np.testing.assert_allclose(y[kept], 1 / (1 - p), rtol=1e-6)
    assert abs(y.mean() - 1) < 0.03                  # inverted scaling keeps the mean


def test_eval_and_p_zero_are_identity():
    x = minigrad.randn(4, 5)
    layer = nn.Dropout(0.5).eval()
    assert layer(x) is x
    assert nn.Dropout(0.0)(x) is x
    assert F.dropout(x, 0.5, training=False) is x


def test_dropout_gradient_is_the_mask():
    x = minigrad.randn(3, 4, requires_grad=True)
    y = nn.Dropout(0.5)(x)
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), (y.numpy() != 0) * 2.0)


def test_dropout_gradcheck():
    x = np.random.default_rng(0).standard_normal((3, 5))

    def fn(t):                  # same mask every call: a fixed generator state
        return F.dropout(t, 0.3, generator=np.random.default_rng(1))

    assert check_gradients(fn, [x])
    idx = np.arange(3)
    assert check_gradients(lambda t: F.dropout(t, 0.3, example_index=idx, step=2), [x])


def test_default_stream_advances_and_is_reset_by_seed():
    x = minigrad.ones(4, 8)
    first, second = nn.Dropout(0.5)(x).numpy(), nn.Dropout(0.5)(x).numpy()
    assert not np.array_equal(first, second)
    minigrad.manual_seed(0)
    np.testing.assert_array_equal(nn.Dropout(0.5)(x).numpy(), first)


def test_rng_state_replays_masks():
    x = minigrad.ones(6, 10)
    layer = nn.Dropout(0.4)
    minigrad.randn(3)                          # the NumPy stream is captured too
    state = mg_random.get_rng_state()
    a, noise_a = layer(x).numpy(), minigrad.randn(3).numpy()
    mg_random.set_rng_state(state)
    b, noise_b = layer(x).numpy(), minigrad.randn(3).numpy()
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(noise_a, noise_b)
    with pytest.raises(KeyError, match="offset"):
        mg_random.set_rng_state({"seed": 0, "numpy": state["numpy"]})


def test_per_example_masks_equal_across_micro_batches(device):
    x = minigrad.ones(16, 3, 5, device=device)
    layer = nn.Dropout(0.5, per_example=True)
    with nn.dropout_context(step=7, example_index=np.arange(16)):
        full = layer(x).numpy()
    parts = []
    for start in range(0, 16, 4):              # 4 micro-batches of 4 examples
        idx = np.arange(start, start + 4)
        with nn.dropout_context(step=7, example_index=idx):
            parts.append(layer(x[start:start + 4]).numpy())
    np.testing.assert_array_equal(np.concatenate(parts), full)     # bitwise
    # unequal split, indices passed directly
    split = [layer(x[:3], example_index=range(3), step=7).numpy(),
             layer(x[3:], example_index=range(3, 16), step=7).numpy()]
    np.testing.assert_array_equal(np.concatenate(split), full)


def test_per_example_masks_same_on_every_device(device):
    x = np.ones((4, 6), dtype=np.float32)
    layer = nn.Dropout(0.5, per_example=True, layer_id=3)
    ours = layer(minigrad.tensor(x, device=device), example_index=np.arange(4), step=1)
    cpu = layer(minigrad.tensor(x), example_index=np.arange(4), step=1)
    np.testing.assert_array_equal(ours.numpy(), cpu.numpy())


def test_per_example_masks_depend_on_step_layer_example_and_seed():
    x = minigrad.ones(2, 50)
    a, b = nn.Dropout(0.5, per_example=True), nn.Dropout(0.5, per_example=True)
    assert (a.layer_id, b.layer_id) == (0, 1)
    idx = np.array([0, 1])
    base = a(x, example_index=idx, step=0).numpy()
    assert not np.array_equal(base[0], base[1])                              # example
    assert not np.array_equal(base, a(x, example_index=idx, step=1).numpy())  # step
    assert not np.array_equal(base, b(x, example_index=idx, step=0).numpy())  # layer
    np.testing.assert_array_equal(base, a(x, example_index=idx, step=0).numpy())
    minigrad.manual_seed(5)
    assert not np.array_equal(base, a(x, example_index=idx, step=0).numpy())  # seed
    minigrad.manual_seed(0)
    rebuilt = nn.Dropout(0.5, per_example=True)          # ids restart after the seed
    assert rebuilt.layer_id == 0 and copy.deepcopy(b).layer_id == 1


def test_per_example_model_gradients_equal_under_accumulation():
    """A model with per-example dropout: the sum of micro-batch gradients equals the
    full-batch gradient of the summed loss (float64)."""
    minigrad.set_default_dtype(np.float64)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5, per_example=True),
                          nn.Linear(8, 3))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((12, 4)), rng.integers(0, 3, 12)
    with nn.dropout_context(step=3, example_index=np.arange(12)):
        F.cross_entropy(model(minigrad.tensor(x)), y, reduction="sum").backward()
    full = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    for start in (0, 4, 8):
        sl = slice(start, start + 4)
        with nn.dropout_context(step=3, example_index=np.arange(12)[sl]):
            F.cross_entropy(model(minigrad.tensor(x[sl])), y[sl], reduction="sum").backward()
    for g, p in zip(full, model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-12, atol=1e-15)


def test_per_example_masks_replay_on_recompute():
    x = minigrad.ones(4, 6)
    layer = nn.Dropout(0.5, per_example=True)
    state = mg_random.get_rng_state()
    with nn.dropout_context(step=2, example_index=np.arange(4)):
        a = layer(x).numpy()
        nn.Dropout(0.5)(x)                         # a default-mode draw in between
        mg_random.set_rng_state(state)
        b = layer(x).numpy()
    np.testing.assert_array_equal(a, b)


def test_dropout_errors():
    for bad in (-0.1, 1.0, 1.5, "0.5", True):
        with pytest.raises(ValueError, match=r"p must lie in \[0, 1\)"):
            nn.Dropout(bad)
    with pytest.raises(ValueError, match="p must lie"):
        F.dropout(minigrad.randn(2), 1.0)
    layer = nn.Dropout(0.5, per_example=True)
    with pytest.raises(ValueError, match="dropout_context"):
        layer(minigrad.randn(3, 2))
    with pytest.raises(ValueError, match=r"example_index has 2 entries.*3 examples"):
        layer(minigrad.randn(3, 2), example_index=[0, 1])
    with pytest.raises(ValueError, match="per_example=False"):
        nn.Dropout(0.5)(minigrad.randn(3, 2), example_index=[0, 1, 2])
    with pytest.raises(TypeError, match="step must be a non-negative int"):
        with nn.dropout_context(step=-1, example_index=[0]):
            pass
    assert "per_example=True" in repr(layer)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_a_numpy_float_p_keeps_the_input_dtype(dtype):
    """p given as np.float64 (e.g. read from an array of settings): the result
    keeps the input's dtype, as with a Python float."""
    x = minigrad.tensor(np.ones((4, 5), dtype=dtype), requires_grad=True)
    y = F.dropout(x, p=np.float64(0.4), generator=np.random.default_rng(0))
    assert y.dtype == dtype
    same = F.dropout(x, p=0.4, generator=np.random.default_rng(0))
    np.testing.assert_array_equal(y.numpy(), same.numpy())
    y.sum().backward()
    assert x.grad.dtype == dtype
