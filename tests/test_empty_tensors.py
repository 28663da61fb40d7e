"""Empty tensors (a length-0 axis, a batch of 0) behave as in NumPy and
PyTorch: empty results, sum 0, mean nan, clear errors where there is no answer."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.nn import functional as F


def leaf(*shape, device="cpu"):
    return minigrad.tensor(np.zeros(shape), device=device, requires_grad=True)


def run_quietly(fn):
    """Call ``fn`` with every warning turned into an error: no stray
    'Mean of empty slice' or 'divide by zero'."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return fn()


@pytest.mark.parametrize("op", [F.softmax, F.log_softmax])
def test_softmax_along_a_length_0_axis(op, device):
    """Empty in, empty out, silently (PyTorch gives shape (3, 0) too: checked
    where it is installed)."""
    x = leaf(3, 0, device=device)
    out = run_quietly(lambda: op(x, axis=1))
    assert out.shape == (3, 0)
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        ref = getattr(torch, op.__name__)(torch.zeros(3, 0, dtype=torch.float64), 1)
        assert tuple(ref.shape) == (3, 0)
    run_quietly(lambda: out.sum().backward())
    assert x.grad.shape == (3, 0)
    assert op(leaf(0, 4, device=device), axis=1).shape == (0, 4)


def test_sum_and_mean_over_empty_axes(torch, device):
    x = leaf(0, 3, device=device)
    s = run_quietly(lambda: x.sum(axis=0))
    m = run_quietly(lambda: x.mean(axis=0))
    t = torch.zeros(0, 3, dtype=torch.float64)
    np.testing.assert_array_equal(s.numpy(), t.sum(0).numpy())        # 0
    np.testing.assert_array_equal(m.numpy(), t.mean(0).numpy())       # nan, nan, nan
    assert np.isnan(run_quietly(lambda: x.mean()).item())
    assert run_quietly(lambda: x.sum()).item() == 0.0
    run_quietly(lambda: (s.sum() + m.sum()).backward())
    assert x.grad.shape == (0, 3)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):   # as PyTorch
        assert np.isnan(x.var(axis=0).numpy()).all()
    assert x.mean(axis=1).shape == (0,)          # reduce a non-empty axis of an empty tensor


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_max_over_an_empty_axis_raises_clearly(reduce):
    x = leaf(0, 3)
    with pytest.raises(ValueError, match=rf"{reduce}: cannot reduce an empty tensor of "
                                         r"shape \(0, 3\)"):
        getattr(x, reduce)(axis=0)
    assert getattr(x, reduce)(axis=1).values.shape == (0,)
    with pytest.raises(ValueError, match=r"argmax: cannot take the argmax over an empty axis"):
        x.argmax(axis=0)
    assert x.argmax(axis=1).shape == (0,)


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.BatchNorm1d(3), (0, 3)),
    (lambda: nn.BatchNorm1d(3), (0, 3, 4)),
    (lambda: nn.BatchNorm2d(3), (0, 3, 2, 2)),
    (lambda: nn.GroupNorm(2, 4), (0, 4, 3)),
    (lambda: nn.GroupNorm(2, 4), (0, 4)),
    (lambda: nn.LayerNorm(3), (0, 3)),
])
def test_norm_layers_on_a_batch_of_0(torch, float64, make, shape):
    layer = make()                           # float64 parameters, as the input
    x = leaf(*shape)
    out = run_quietly(lambda: layer(x))
    assert out.shape == shape
    run_quietly(lambda: out.sum().backward())
    assert x.grad.shape == shape
    np.testing.assert_array_equal(layer.weight.grad.numpy(), 0.0)
    np.testing.assert_array_equal(layer.bias.grad.numpy(), 0.0)
    ref_layer = getattr(torch.nn, type(layer).__name__)(*(
        (layer.num_groups, layer.num_channels) if isinstance(layer, nn.GroupNorm)
        else (shape[-1],) if isinstance(layer, nn.LayerNorm) else (layer.num_features,)))
    assert tuple(ref_layer(torch.zeros(shape)).shape) == shape
    if hasattr(layer, "running_mean"):       # PyTorch leaves the statistics alone
        np.testing.assert_array_equal(layer.running_mean.numpy(), 0.0)
        np.testing.assert_array_equal(layer.running_var.numpy(), 1.0)


def test_batchnorm_empty_micro_batch_with_merged_statistics():
    layer = nn.BatchNorm1d(2)
    nn.set_merge_running_stats(layer)
    layer(minigrad.tensor(np.array([[1.0, 2.0], [3.0, 6.0]], np.float32)))
    layer(minigrad.tensor(np.zeros((0, 2), np.float32)))
    assert layer.apply_merged_running_stats()
    np.testing.assert_allclose(layer.running_mean.numpy(), [0.2, 0.4], rtol=1e-6)


def test_group_norm_with_one_value_per_group_raises_as_pytorch(torch):
    for shape in [(1, 4), (1, 4, 1)]:
        with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
            nn.GroupNorm(4, 4)(minigrad.randn(*shape))
        with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
            torch.nn.GroupNorm(4, 4)(torch.randn(*shape))
    # Two examples: PyTorch computes it (every value is its group's mean: x̂ = 0)
    out = nn.GroupNorm(4, 4)(minigrad.randn(2, 4))
    np.testing.assert_array_equal(out.numpy(), 0.0)
    torch.nn.GroupNorm(4, 4)(torch.randn(2, 4))


def test_batchnorm_one_value_per_channel_still_raises():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        nn.BatchNorm1d(3)(minigrad.randn(1, 3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses_on_a_batch_of_0(torch, reduction):
    tf = torch.nn.functional
    cases = [
        (lambda z: F.cross_entropy(z, np.zeros(0, np.int64), reduction=reduction),
         lambda z: tf.cross_entropy(z, torch.zeros(0, dtype=torch.long), reduction=reduction),
         (0, 3)),
        (lambda z: F.nll_loss(z, np.zeros(0, np.int64), reduction=reduction),
         lambda z: tf.nll_loss(z, torch.zeros(0, dtype=torch.long), reduction=reduction),
         (0, 3)),
        (lambda z: F.mse_loss(z, np.zeros((0, 3)), reduction=reduction),
         lambda z: tf.mse_loss(z, torch.zeros(0, 3, dtype=torch.float64), reduction=reduction),
         (0, 3)),
        (lambda z: F.binary_cross_entropy_with_logits(z, np.zeros((0, 3)),
                                                       reduction=reduction),
         lambda z: tf.binary_cross_entropy_with_logits(
             z, torch.zeros(0, 3, dtype=torch.float64), reduction=reduction), (0, 3)),
        (lambda z: F.binary_cross_entropy(z, np.zeros((0, 3)), reduction=reduction),
         lambda z: tf.binary_cross_entropy(z, torch.zeros(0, 3, dtype=torch.float64),
                                           reduction=reduction), (0, 3)),
    ]
    for ours, theirs, shape in cases:
        z = leaf(*shape)
        out = run_quietly(lambda: ours(z))
        ref = theirs(torch.zeros(shape, dtype=torch.float64, requires_grad=True))
        np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())   # nan, 0 or empty
        run_quietly(lambda: out.sum().backward())
        assert z.grad.shape == shape


def test_layers_on_a_batch_of_0(torch, device):
    x = leaf(0, 2, 5, 5, device=device)
    for layer, expected in [(nn.Conv2d(2, 3, 3, device=device), (0, 3, 3, 3)),
                            (nn.Conv2d(2, 4, 3, padding="same", groups=2, device=device),
                             (0, 4, 5, 5)),
                            (nn.MaxPool2d(2, ceil_mode=True), (0, 2, 3, 3)),
                            (nn.AvgPool2d(2), (0, 2, 2, 2))]:
        out = run_quietly(lambda: layer(x.to(dtype=np.float32)))
        assert out.shape == expected
        run_quietly(lambda: out.sum().backward())
    assert tuple(torch.nn.Conv2d(2, 3, 3)(torch.zeros(0, 2, 5, 5)).shape) == (0, 3, 3, 3)
    lin = nn.Linear(3, 2, device=device)
    out = lin(leaf(0, 3, device=device).to(dtype=np.float32))
    out.sum().backward()
    np.testing.assert_array_equal(lin.weight.grad.numpy(), 0.0)
    assert nn.Embedding(5, 2)(np.zeros(0, np.int64)).shape == (0, 2)
