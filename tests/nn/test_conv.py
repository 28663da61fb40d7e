"""Conv2d: gradients against finite differences, parity with PyTorch, initialization
and every bad-input error."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from tests.helpers import check_gradients

# Float64 parity with PyTorch reached: 1e-12 relative (asserted below); float32: 1e-5.


@st.composite
def conv_cases(draw):
    """Small conv problems: (N, C, H, W), (O, KH, KW), stride, padding, dilation."""
    n, c, o = draw(st.integers(1, 2)), draw(st.integers(1, 3)), draw(st.integers(1, 3))
    kh, kw = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 1)))
    # the input must be at least as large as the dilated kernel minus the padding
    h = draw(st.integers(max(1, dilation[0] * (kh - 1) + 1 - 2 * padding[0]), 6))
    w = draw(st.integers(max(1, dilation[1] * (kw - 1) + 1 - 2 * padding[1]), 6))
    return (n, c, h, w), (o, c, kh, kw), stride, padding, dilation


@settings(max_examples=20, deadline=None)
@given(case=conv_cases(), with_bias=st.booleans())
def test_conv2d_gradcheck(case, with_bias):
    x_shape, w_shape, stride, padding, dilation = case
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape)]
    if with_bias:
        arrays.append(rng.standard_normal(w_shape[0]))
    assert check_gradients(
        lambda x, w, b=None: F.conv2d(x, w, b, stride, padding, dilation), arrays)


def test_conv2d_gradcheck_on_device(device):
    rng = np.random.default_rng(1)
    arrays = [rng.standard_normal((2, 2, 5, 6)), rng.standard_normal((3, 2, 3, 2)),
              rng.standard_normal(3)]
    assert check_gradients(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1,
                                                    dilation=(1, 2)), arrays, device=device)


def _copy_conv(torch, layer):
    ref = torch.nn.Conv2d(layer.in_channels, layer.out_channels, layer.kernel_size,
                          layer.stride, layer.padding, layer.dilation,
                          bias=layer.bias is not None,
                          dtype=getattr(torch, str(layer.weight.dtype)))
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(layer.weight.numpy()))
        if layer.bias is not None:
            ref.bias.copy_(torch.from_numpy(layer.bias.numpy()))
    return ref


@pytest.mark.parametrize("options", [
    dict(kernel_size=3, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2)),
    dict(kernel_size=1, bias=False),
    dict(kernel_size=5, stride=3, padding=2, dilation=2),
])
@pytest.mark.parametrize("dtype, rtol, atol", [(np.float64, 1e-12, 1e-12),
                                               (np.float32, 1e-5, 1e-5)])
def test_conv2d_matches_pytorch(torch, device, options, dtype, rtol, atol):
    layer = nn.Conv2d(3, 4, dtype=dtype, **options).to(device)
    ref = _copy_conv(torch, layer)
    x = np.random.default_rng(0).standard_normal((2, 3, 9, 8)).astype(dtype)
    xm = minigrad.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out, out_ref = layer(xm), ref(xt)
    np.testing.assert_allclose(out.numpy(), out_ref.detach().numpy(), rtol=rtol, atol=atol)
    assert out.dtype == dtype and out.shape == tuple(out_ref.shape)
    g = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    out.backward(minigrad.tensor(g, device=device))
    out_ref.backward(torch.from_numpy(g))
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(layer.weight.grad.numpy(), ref.weight.grad.numpy(),
                               rtol=rtol, atol=atol)
    assert layer.weight.grad.dtype == dtype
    if layer.bias is not None:
        np.testing.assert_allclose(layer.bias.grad.numpy(), ref.bias.grad.numpy(),
                                   rtol=rtol, atol=atol)


def test_conv2d_by_hand():
    """A 1-channel 3x3 input with a 2x2 kernel of ones sums each 2x2 window."""
    x = minigrad.tensor(np.arange(9.0).reshape(1, 1, 3, 3))
    w = minigrad.tensor(np.ones((1, 1, 2, 2)))
    out = F.conv2d(x, w, minigrad.tensor(np.array([10.0])))
    np.testing.assert_array_equal(out.numpy(), [[[[18.0, 22.0], [30.0, 34.0]]]])


def test_conv2d_initialization_is_pytorch_default_and_seeded():
    minigrad.manual_seed(3)
    layer = nn.Conv2d(4, 8, 3)
    bound = 1 / math.sqrt(4 * 3 * 3)
    w, b = layer.weight.numpy(), layer.bias.numpy()
    assert w.shape == (8, 4, 3, 3) and b.shape == (8,)
    assert w.dtype == np.float32
    assert np.abs(w).max() <= bound and np.abs(b).max() <= bound
    # U(-b, b) has standard deviation b/√3
    assert abs(w.std() - bound / math.sqrt(3)) < 0.15 * bound
    minigrad.manual_seed(3)
    again = nn.Conv2d(4, 8, 3)
    np.testing.assert_array_equal(again.weight.numpy(), w)
    np.testing.assert_array_equal(again.bias.numpy(), b)
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    assert nn.Conv2d(4, 8, 3, bias=False).bias is None


@pytest.mark.parametrize("call, error, words", [
    (lambda: F.conv2d(minigrad.zeros(8, 8), minigrad.zeros(2, 3, 3, 3)),
     ValueError, "4-D input"),
    (lambda: F.conv2d(minigrad.zeros(1, 3, 8, 8), minigrad.zeros(2, 3, 3)),
     ValueError, "4-D weight"),
    (lambda: F.conv2d(minigrad.zeros(1, 2, 8, 8), minigrad.zeros(4, 3, 3, 3)),
     ValueError, "has 2 channels, but weight of shape (4, 3, 3, 3) expects 3"),
    (lambda: F.conv2d(minigrad.zeros(1, 3, 8, 8), minigrad.zeros(4, 3, 3, 3),
                      minigrad.zeros(3)), ValueError, "expected shape (4,)"),
    (lambda: F.conv2d(minigrad.zeros(1, 3, 2, 2), minigrad.zeros(4, 3, 3, 3)),
     ValueError, "larger than the padded input (2x2)"),
    (lambda: F.conv2d(minigrad.zeros(1, 3, 8, 8), minigrad.zeros(4, 3, 3, 3), stride=0),
     ValueError, "stride must be >= 1"),
    (lambda: F.conv2d(minigrad.zeros(1, 3, 8, 8), minigrad.zeros(4, 3, 3, 3), padding=-1),
     ValueError, "padding must be >= 0"),
    (lambda: F.conv2d(minigrad.zeros(1, 3, 8, 8), minigrad.zeros(4, 3, 3, 3),
                      stride=(1, 2, 3)), TypeError, "pair of ints"),
    (lambda: F.conv2d(minigrad.zeros(1, 3, 8, 8, dtype=np.float64),
                      minigrad.zeros(4, 3, 3, 3, dtype=np.float32)),
     TypeError, "input dtype float64 differs from weight dtype float32"),
    (lambda: nn.Conv2d(0, 4, 3), ValueError, "in_channels must be a positive int"),
    (lambda: nn.Conv2d(3, 4, 0), ValueError, "kernel_size must be >= 1"),
    (lambda: nn.Conv2d(3, 4, 3)(minigrad.zeros(1, 4, 8, 8)), ValueError,
     "has 4 channels"),
])
def test_conv2d_errors(call, error, words):
    with pytest.raises(error) as info:
        call()
    assert words in str(info.value)


def test_small_cnn_matches_pytorch(torch, float64):
    """Conv2d, BatchNorm2d, MaxPool2d, GroupNorm, AvgPool2d, Linear in one model:
    loss, every parameter gradient and the running statistics equal PyTorch's."""
    def build(m):
        return m.Sequential(m.Conv2d(1, 4, 3, padding=1), m.BatchNorm2d(4), m.ReLU(),
                            m.MaxPool2d(2), m.Conv2d(4, 6, 3, stride=2, padding=1),
                            m.GroupNorm(2, 6), m.AvgPool2d(2, stride=1, padding=1),
                            m.Flatten(), m.Linear(6 * 3 * 3, 3))
    model, ref = build(nn), build(torch.nn).double()
    with torch.no_grad():
        for (name, p), (ref_name, q) in zip(model.named_parameters(),
                                            ref.named_parameters()):
            assert name == ref_name
            q.copy_(torch.from_numpy(p.numpy()))
    rng = np.random.default_rng(7)
    x = rng.standard_normal((5, 1, 8, 8))
    y = rng.integers(0, 3, size=5)
    loss = F.cross_entropy(model(minigrad.tensor(x)), minigrad.tensor(y))
    ref_loss = torch.nn.functional.cross_entropy(ref(torch.from_numpy(x)),
                                                 torch.from_numpy(y))
    loss.backward()
    ref_loss.backward()
    np.testing.assert_allclose(loss.item(), ref_loss.item(), rtol=1e-12)
    for (name, p), (_, q) in zip(model.named_parameters(), ref.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)
    np.testing.assert_allclose(model[1].running_var.numpy(), ref[1].running_var.numpy(),
                               rtol=1e-12)
