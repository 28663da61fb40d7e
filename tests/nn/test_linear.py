"""Linear: fused forward/backward, gradcheck, PyTorch parity, default init."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from tests.helpers import check_gradients, compare_with_torch

leading = st.lists(st.integers(1, 3), min_size=0, max_size=2)


@settings(max_examples=15, deadline=None)
@given(lead=leading, n_in=st.integers(1, 4), n_out=st.integers(1, 4), bias=st.booleans())
def test_linear_gradcheck(lead, n_in, n_out, bias):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((*lead, n_in))
    w = rng.standard_normal((n_out, n_in))
    arrays = [x, w] + ([rng.standard_normal(n_out)] if bias else [])
    assert check_gradients(lambda *a: F.linear(*a), arrays)


def test_linear_skips_unneeded_gradients():
    x = minigrad.randn(3, 2)                       # no grad for the input
    lin = nn.Linear(2, 4)
    lin(x).sum().backward()
    assert x.grad is None and lin.weight.grad is not None
    np.testing.assert_allclose(lin.bias.grad.numpy(), np.full(4, 3.0))


def test_linear_parity_with_torch(torch, device):
    torch.set_default_dtype(torch.float64)
    try:
        ref = torch.nn.Linear(5, 3)
    finally:
        torch.set_default_dtype(torch.float32)
    lin = nn.Linear(5, 3, dtype=np.float64, device=device)
    lin.load_state_dict({k: v.detach().numpy() for k, v in ref.state_dict().items()})
    x = np.random.default_rng(1).standard_normal((2, 4, 5))
    xm = minigrad.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    y, yt = lin(xm), ref(xt)
    np.testing.assert_allclose(y.numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-14)
    v = np.random.default_rng(2).standard_normal(y.shape)
    y.backward(minigrad.tensor(v, device=device))
    yt.backward(torch.tensor(v))
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lin.weight.grad.numpy(), ref.weight.grad.numpy(),
                               rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(lin.bias.grad.numpy(), ref.bias.grad.numpy(),
                               rtol=1e-12, atol=1e-14)


def test_functional_linear_parity_no_bias(torch):
    rng = np.random.default_rng(3)
    compare_with_torch(torch, lambda x, w: F.linear(x, w),
                       lambda x, w: torch.nn.functional.linear(x, w),
                       [rng.standard_normal((4, 3)), rng.standard_normal((2, 3))])


def test_default_init_bounds_and_seeding():
    minigrad.manual_seed(0)
    lin = nn.Linear(400, 300)
    bound = 1 / math.sqrt(400)
    w, b = lin.weight.numpy(), lin.bias.numpy()
    assert w.shape == (300, 400) and b.shape == (300,)
    assert w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # uniform on [-bound, bound]: mean 0, variance bound²/3, fills the range
    assert abs(w.mean()) < 0.01 * bound
    assert abs(w.var() / (bound ** 2 / 3) - 1) < 0.02
    assert np.abs(w).max() > 0.99 * bound
    minigrad.manual_seed(0)
    again = nn.Linear(400, 300)
    np.testing.assert_array_equal(again.weight.numpy(), w)
    assert not np.array_equal(nn.Linear(400, 300).weight.numpy(), w)


def test_default_init_matches_torch_distribution(torch):
    ref = torch.nn.Linear(50, 40)
    lin = nn.Linear(50, 40)
    for name in ("weight", "bias"):
        ours = getattr(lin, name).numpy()
        theirs = getattr(ref, name).detach().numpy()
        bound = 1 / math.sqrt(50)
        assert np.abs(theirs).max() <= bound and np.abs(ours).max() <= bound


def test_linear_on_device(device):
    lin = nn.Linear(3, 2, device=device)
    assert lin.weight.device == device
    minigrad.manual_seed(0)
    cpu = nn.Linear(3, 2)
    np.testing.assert_array_equal(lin.weight.numpy(), cpu.weight.numpy())


def test_linear_errors():
    with pytest.raises(ValueError, match="in_features must be a positive int"):
        nn.Linear(0, 2)
    with pytest.raises(ValueError, match="out_features"):
        nn.Linear(2, 2.5)
    with pytest.raises(ValueError, match=r"shape \(3, 4\).*in_features=2"):
        nn.Linear(2, 3)(minigrad.randn(3, 4))
    with pytest.raises(TypeError, match="expected a Tensor"):
        F.linear(np.zeros((2, 2)), nn.Linear(2, 2).weight)
    with pytest.raises(TypeError, match="floating"):
        nn.Linear(2, 2, dtype=np.int64)


def test_bias_false():
    lin = nn.Linear(3, 2, bias=False)
    assert lin.bias is None and [n for n, _ in lin.named_parameters()] == ["weight"]
    assert "bias=False" in repr(lin)
    x = minigrad.randn(4, 3, requires_grad=True)
    lin(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.tile(lin.weight.numpy().sum(0), (4, 1)),
                               rtol=1e-6)
