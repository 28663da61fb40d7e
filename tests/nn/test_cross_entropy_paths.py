"""cross_entropy when no position is ignored: the short path equals the general one bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad.nn import functional as F
from tests.helpers import compare_with_torch


def _loss_and_grad(logits, target, **kwargs):
    z = minigrad.tensor(logits, requires_grad=True)
    loss = F.cross_entropy(z, target, **kwargs)
    loss.backward()
    return loss.numpy(), z.grad.numpy()


@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_nothing_ignored_equals_the_general_path_bit_for_bit(reduction, dtype, smoothing):
    rng = np.random.default_rng(3)
    logits = rng.standard_normal((7, 5)).astype(dtype)
    target = rng.integers(0, 4, 7)                    # class 4 never occurs
    short = _loss_and_grad(logits, target, reduction=reduction, label_smoothing=smoothing)
    # ignore_index=4 is a class, so the general path (with a mask) runs; nothing is ignored
    general = _loss_and_grad(logits, target, reduction=reduction, label_smoothing=smoothing,
                             ignore_index=4)
    np.testing.assert_array_equal(short[0], general[0])
    np.testing.assert_array_equal(short[1], general[1])
    assert short[1].dtype == dtype


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 0])
def test_parity_without_ignored_positions(torch, reduction, ignore_index, device):
    rng = np.random.default_rng(4)
    logits = rng.standard_normal((6, 4))
    target = rng.integers(1, 4, 6)                     # never 0, never -100
    compare_with_torch(
        torch, lambda z: F.cross_entropy(z, target, reduction=reduction,
                                         ignore_index=ignore_index),
        lambda z: torch.nn.functional.cross_entropy(z, torch.tensor(target),
                                                    reduction=reduction,
                                                    ignore_index=ignore_index),
        [logits], device=device, rtol=1e-12, atol=1e-14)


def test_empty_batch_gives_nan_mean_and_zero_gradient():
    z = minigrad.tensor(np.zeros((0, 3)), requires_grad=True)
    loss = F.cross_entropy(z, np.zeros(0, dtype=np.int64))
    assert np.isnan(loss.item())
    loss.backward()
    assert z.grad.shape == (0, 3)
