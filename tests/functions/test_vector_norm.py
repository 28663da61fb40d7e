"""minigrad.linalg.vector_norm and Tensor.norm: gradcheck, PyTorch parity, the
zero vector (gradient 0 for every ord), errors."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

import minigrad
from minigrad.linalg import vector_norm
from tests.functions import FAST, distinct_values, shape_and_axis
from tests.helpers import check_gradients, compare_with_torch

ORDS = [2, 1, 3, 0.5, 1.5, np.inf, -np.inf]


@FAST
@given(data=shape_and_axis().flatmap(
    lambda sa: distinct_values(sa[0]).map(lambda x: (x + 0.05, sa[1]))))
def test_vector_norm_gradcheck(data):
    x, axis = data      # distinct entries, none at 0: every ord is differentiable
    for ord in ORDS:
        for keepdims in (False, True):
            assert check_gradients(lambda t: vector_norm(t, ord, axis, keepdims), [x])


@pytest.mark.parametrize("ord", ORDS)
@pytest.mark.parametrize("axis", [None, 1, (0, 2), -1])
def test_vector_norm_parity(torch, ord, axis, device):
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    x[0, 1, 2] = 0.0
    keepdims = axis == 1
    compare_with_torch(
        torch, lambda t: vector_norm(t, ord, axis, keepdims),
        lambda t: torch.linalg.vector_norm(t, ord, dim=axis, keepdim=keepdims),
        [x], device=device, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("ord", ORDS)
def test_gradient_at_the_zero_vector_is_zero(torch, ord, device):
    x = minigrad.tensor(np.zeros((2, 3)), device=device, requires_grad=True)
    x.norm(ord, dim=1).sum().backward()
    assert not np.isnan(x.grad.numpy()).any()
    np.testing.assert_array_equal(x.grad.numpy(), 0.0)
    t = torch.zeros((2, 3), dtype=torch.float64, requires_grad=True)
    torch.linalg.vector_norm(t, ord, dim=1).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), 0.0)


def test_tensor_norm_defaults_and_dtype():
    x = minigrad.tensor([[3.0, 4.0], [0.0, 0.0]], requires_grad=True)
    n = x.norm()
    assert n.dtype == np.float32 and n.item() == pytest.approx(5.0)
    np.testing.assert_allclose(x.norm(dim=1, keepdim=True).numpy(), [[5.0], [0.0]])
    np.testing.assert_allclose(x.norm(p=np.inf, dim=0).numpy(), [3.0, 4.0])
    np.testing.assert_array_equal(x.norm(p=0, dim=1).numpy(), [2.0, 0.0])   # non-zeros
    x.norm(dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


def test_vector_norm_errors():
    x = minigrad.tensor([1.0, 2.0])
    with pytest.raises(ValueError, match="ord must be >= 0"):
        vector_norm(x, -1)
    with pytest.raises(TypeError, match="ord must be a number"):
        vector_norm(x, "fro")
    with pytest.raises(TypeError, match="floating-point"):
        vector_norm(minigrad.tensor([1, 2]))
    with pytest.raises(ValueError, match="out of range"):
        vector_norm(x, axis=1)
    with pytest.raises(ValueError, match="empty"):
        vector_norm(minigrad.tensor(np.zeros((0, 2))), np.inf, axis=0)
    assert vector_norm(minigrad.tensor(np.zeros((0, 2))), 2, axis=0).numpy().tolist() == [0, 0]


@pytest.mark.parametrize("ord", [2, 1, 0.5, float("inf")])
def test_float16_norm_sums_in_float32_as_torch(ord, torch):
    """300² + 400² overflows float16 (max 65504); PyTorch accumulates half
    precision in float32 and returns 500 in float16, with finite gradients."""
    x = np.array([300.0, 400.0], dtype=np.float16)
    t = torch.tensor(x, requires_grad=True)
    want = torch.linalg.vector_norm(t, ord=ord)
    want.backward()
    m = minigrad.tensor(x, requires_grad=True)
    got = vector_norm(m, ord=ord)
    got.backward()
    assert got.dtype == np.float16 and m.grad.dtype == np.float16
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-3)
    np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=2e-3)
