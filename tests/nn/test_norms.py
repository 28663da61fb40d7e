"""LayerNorm and GroupNorm: gradients against finite differences, parity with
PyTorch, and every bad-input error."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from tests.helpers import check_gradients, compare_with_torch

# Parity with PyTorch reached (float64): outputs and all gradients within 1e-12
# relative (asserted); float32: 1e-5 (asserted).


# ----------------------------------------------------------------- LayerNorm
@settings(max_examples=15, deadline=None)
@given(lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
       normalized=st.lists(st.integers(1, 4), min_size=1, max_size=2),
       affine=st.booleans(), scale=st.sampled_from([1e-2, 1.0, 1e2]))
def test_layer_norm_gradcheck(lead, normalized, affine, scale):
    shape = tuple(lead) + tuple(normalized)
    if int(np.prod(normalized)) == 1:
        normalized = normalized + [2]           # one value alone normalizes to 0
        shape = shape + (2,)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape) * scale - 1.0]
    if affine:
        arrays += [rng.standard_normal(normalized), rng.standard_normal(normalized)]
    assert check_gradients(
        lambda x, w=None, b=None: F.layer_norm(x, tuple(normalized), w, b), arrays,
        rtol=1e-4)


def test_layer_norm_gradcheck_on_device(device):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((2, 3, 4)), rng.standard_normal(4), rng.standard_normal(4)]
    assert check_gradients(lambda x, w, b: F.layer_norm(x, 4, w, b), arrays, device=device)


@pytest.mark.parametrize("shape, normalized", [((4, 6), 6), ((2, 3, 5), (3, 5)),
                                               ((2, 3, 5), (5,))])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype, rtol, atol", [(np.float64, 1e-12, 1e-12),
                                               (np.float32, 1e-5, 1e-5)])
def test_layer_norm_matches_pytorch(torch, device, shape, normalized, affine, dtype, rtol,
                                    atol):
    rng = np.random.default_rng(2)
    layer = nn.LayerNorm(normalized, eps=1e-4, elementwise_affine=affine, dtype=dtype)
    ref = torch.nn.LayerNorm(normalized, eps=1e-4, elementwise_affine=affine,
                             dtype=getattr(torch, np.dtype(dtype).name))
    if affine:
        for p, q in ((layer.weight, ref.weight), (layer.bias, ref.bias)):
            p.data[...] = rng.standard_normal(p.shape).astype(dtype)
            with torch.no_grad():
                q.copy_(torch.from_numpy(p.numpy()))
    _compare(torch, layer.to(device), ref, rng.standard_normal(shape).astype(dtype) * 3 + 1,
             device, rtol, atol)


def test_layer_norm_uses_biased_variance():
    y = nn.LayerNorm(2, eps=0.0)(minigrad.tensor([[1.0, 3.0]])).numpy()
    np.testing.assert_allclose(y, [[-1.0, 1.0]], rtol=1e-6)


# ----------------------------------------------------------------- GroupNorm
@settings(max_examples=15, deadline=None)
@given(groups_and_channels=st.sampled_from([(1, 2), (2, 2), (2, 4), (3, 6), (1, 3)]),
       spatial=st.lists(st.integers(1, 3), min_size=0, max_size=2),
       n=st.integers(1, 2), affine=st.booleans())
def test_group_norm_gradcheck(groups_and_channels, spatial, n, affine):
    g, c = groups_and_channels
    shape = (n, c) + tuple(spatial)
    if c // g * int(np.prod(spatial)) == 1:
        shape = shape + (2,)                      # each group needs two values
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(shape) * 2 + 0.5]
    if affine:
        arrays += [rng.standard_normal(c), rng.standard_normal(c)]
    assert check_gradients(lambda x, w=None, b=None: F.group_norm(x, g, w, b), arrays,
                           rtol=1e-4)


def test_group_norm_gradcheck_on_device(device):
    rng = np.random.default_rng(4)
    arrays = [rng.standard_normal((2, 4, 3, 2)), rng.standard_normal(4),
              rng.standard_normal(4)]
    assert check_gradients(lambda x, w, b: F.group_norm(x, 2, w, b), arrays, device=device)


@pytest.mark.parametrize("groups, shape", [(2, (3, 4, 5, 2)), (1, (2, 6, 3)), (6, (2, 6, 2)),
                                           (3, (2, 6, 2, 2))])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype, rtol, atol", [(np.float64, 1e-12, 1e-12),
                                               (np.float32, 1e-5, 1e-5)])
def test_group_norm_matches_pytorch(torch, device, groups, shape, affine, dtype, rtol, atol):
    rng = np.random.default_rng(5)
    c = shape[1]
    layer = nn.GroupNorm(groups, c, affine=affine, dtype=dtype)
    ref = torch.nn.GroupNorm(groups, c, affine=affine,
                             dtype=getattr(torch, np.dtype(dtype).name))
    if affine:
        for p, q in ((layer.weight, ref.weight), (layer.bias, ref.bias)):
            p.data[...] = rng.standard_normal(c).astype(dtype)
            with torch.no_grad():
                q.copy_(torch.from_numpy(p.numpy()))
    x = rng.standard_normal(shape).astype(dtype) * 2 - 1
    _compare(torch, layer.to(device), ref, x, device, rtol, atol)


def test_group_norm_with_one_group_per_channel_is_instance_norm():
    x = minigrad.tensor(np.random.default_rng(6).standard_normal((2, 3, 4)))
    y = nn.GroupNorm(3, 3, affine=False, eps=0.0)(x).numpy()
    np.testing.assert_allclose(y.mean(axis=2), 0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=2), 1, rtol=1e-12)


def _compare(torch, layer, ref, x, device, rtol, atol):
    xm = minigrad.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out, out_ref = layer(xm), ref(xt)
    np.testing.assert_allclose(out.numpy(), out_ref.detach().numpy(), rtol=rtol, atol=atol)
    assert out.dtype == x.dtype
    g = np.random.default_rng(7).standard_normal(x.shape).astype(x.dtype)
    out.backward(minigrad.tensor(g, device=device))
    out_ref.backward(torch.from_numpy(g))
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=atol)
    for name, p in layer.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), getattr(ref, name).grad.numpy(),
                                   rtol=rtol, atol=atol, err_msg=name)
        assert p.grad.dtype == x.dtype


# ------------------------------------------------------------------- errors
@pytest.mark.parametrize("call, error, words", [
    (lambda: nn.LayerNorm(4)(minigrad.zeros(2, 3)), ValueError,
     "expected an input of shape (*, 4), got shape (2, 3)"),
    (lambda: nn.LayerNorm((2, 3))(minigrad.zeros(3,)), ValueError, "(*, 2, 3)"),
    (lambda: F.layer_norm(minigrad.zeros(2, 3), 3, minigrad.ones(4)), ValueError,
     "weight has shape (4,)"),
    (lambda: nn.LayerNorm(0), ValueError, "positive sizes"),
    (lambda: nn.LayerNorm("a"), TypeError, "int or a tuple of ints"),
    (lambda: nn.GroupNorm(4, 6), ValueError, "num_channels (6) must be divisible by "
                                             "num_groups (4)"),
    (lambda: nn.GroupNorm(0, 6), ValueError, "num_groups must be a positive int"),
    (lambda: nn.GroupNorm(2, 4)(minigrad.zeros(2, 6, 3)), ValueError,
     "expected an input (N, 4, *), got shape (2, 6, 3)"),
    (lambda: F.group_norm(minigrad.zeros(2, 6, 3), 4), ValueError,
     "number of channels 6"),
    (lambda: F.group_norm(minigrad.zeros(6), 2), ValueError, "(N, C, *)"),
    (lambda: F.group_norm(minigrad.zeros(2, 6, 3), 2, bias=minigrad.zeros(3)), ValueError,
     "bias has shape (3,)"),
])
def test_norm_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


def test_parameters_and_state():
    layer = nn.LayerNorm((2, 3))
    assert layer.weight.shape == (2, 3) and layer.bias.shape == (2, 3)
    np.testing.assert_array_equal(layer.weight.numpy(), np.ones((2, 3)))
    assert nn.LayerNorm(3, bias=False).bias is None
    assert list(nn.LayerNorm(3, elementwise_affine=False).named_parameters()) == []
    group = nn.GroupNorm(2, 4)
    assert list(group.state_dict()) == ["weight", "bias"]
    assert list(nn.GroupNorm(2, 4, affine=False).named_parameters()) == []


def test_layer_norm_with_weight_but_no_bias():
    x = minigrad.randn(2, 3, requires_grad=True)
    w = minigrad.randn(3, requires_grad=True)
    F.layer_norm(x, 3, w).sum().backward()
    assert w.grad.shape == (3,) and x.grad.shape == (2, 3)


def test_group_norm_without_bias_matches_torch(torch):
    """GroupNorm(bias=False): a learned scale and no shift, as PyTorch 2.13."""
    mine = nn.GroupNorm(2, 4, bias=False, dtype=np.float64)
    theirs = torch.nn.GroupNorm(2, 4, bias=False, dtype=torch.float64)
    assert mine.bias is None and theirs.bias is None
    assert [name for name, _ in mine.named_parameters()] == ["weight"]
    x = np.random.default_rng(4).standard_normal((3, 4, 5))
    with torch.no_grad():
        theirs.weight.copy_(torch.linspace(0.5, 2.0, 4, dtype=torch.float64))
    mine.weight.data[...] = np.linspace(0.5, 2.0, 4)
    compare_with_torch(torch, mine, theirs, [x])
