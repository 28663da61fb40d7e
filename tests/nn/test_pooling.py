"""MaxPool2d and AvgPool2d: gradients against finite differences, parity with
PyTorch (ties included), and every bad-input error."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from tests.helpers import check_gradients, compare_with_torch

# Parity with PyTorch reached (float64): max pooling exact (0 difference),
# average pooling 1e-15; asserted at rtol 1e-12.


@st.composite
def pool_cases(draw):
    """(shape, kernel, stride, padding) with padding <= kernel // 2 and a fitting window."""
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, kernel[0] // 2)), draw(st.integers(0, kernel[1] // 2)))
    h = draw(st.integers(max(1, kernel[0] - 2 * padding[0]), 6))
    w = draw(st.integers(max(1, kernel[1] - 2 * padding[1]), 6))
    return (draw(st.integers(1, 2)), draw(st.integers(1, 2)), h, w), kernel, stride, padding


def distinct_values(shape, seed=0):
    """Values without ties (a permutation), so that the max is never on a kink."""
    size = int(np.prod(shape))
    return np.random.default_rng(seed).permutation(size).reshape(shape) * 0.1 - 1.0


@settings(max_examples=20, deadline=None)
@given(case=pool_cases())
def test_max_pool2d_gradcheck(case):
    shape, kernel, stride, padding = case
    assert check_gradients(lambda x: F.max_pool2d(x, kernel, stride, padding),
                           [distinct_values(shape)])


@settings(max_examples=20, deadline=None)
@given(case=pool_cases(), count_include_pad=st.booleans())
def test_avg_pool2d_gradcheck(case, count_include_pad):
    shape, kernel, stride, padding = case
    x = np.random.default_rng(0).standard_normal(shape)
    assert check_gradients(
        lambda x: F.avg_pool2d(x, kernel, stride, padding, False, count_include_pad), [x])


def test_pool_gradcheck_on_device(device):
    x = distinct_values((2, 2, 5, 6))
    assert check_gradients(lambda x: F.max_pool2d(x, 3, stride=(2, 1), padding=1), [x],
                           device=device)
    assert check_gradients(lambda x: F.avg_pool2d(x, 3, stride=2, padding=1,
                                                  count_include_pad=False), [x],
                           device=device)


@pytest.mark.parametrize("kernel, stride, padding", [
    (2, None, 0), (3, 1, 1), ((3, 2), (2, 1), (1, 0)), (3, 2, 1)])
def test_max_pool2d_matches_pytorch(torch, device, kernel, stride, padding):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    compare_with_torch(
        torch, lambda t: nn.MaxPool2d(kernel, stride, padding)(t),
        lambda t: torch.nn.MaxPool2d(kernel, stride, padding)(t), [x], device=device,
        rtol=1e-12)


@pytest.mark.parametrize("count_include_pad", [True, False])
@pytest.mark.parametrize("kernel, stride, padding", [
    (2, None, 0), (3, 1, 1), ((3, 2), (2, 1), (1, 0)), (3, 2, 1)])
def test_avg_pool2d_matches_pytorch(torch, device, kernel, stride, padding,
                                    count_include_pad):
    x = np.random.default_rng(0).standard_normal((2, 3, 7, 6))
    compare_with_torch(
        torch, lambda t: nn.AvgPool2d(kernel, stride, padding, False, count_include_pad)(t),
        lambda t: torch.nn.AvgPool2d(kernel, stride, padding,
                                     count_include_pad=count_include_pad)(t),
        [x], device=device, rtol=1e-12)


def test_max_pool2d_ties_send_the_gradient_to_the_first_maximum(torch):
    """All-equal windows: the whole gradient goes to the first entry, as in PyTorch."""
    x = np.ones((1, 1, 4, 4))
    out = compare_with_torch(torch, lambda t: F.max_pool2d(t, 2),
                             lambda t: torch.nn.functional.max_pool2d(t, 2), [x],
                             rtol=0, atol=0)
    assert out.shape == (1, 1, 2, 2)


def test_max_pool2d_tie_by_hand():
    x = minigrad.tensor(np.array([[[[1.0, 3.0], [3.0, 2.0]]]]), requires_grad=True)
    F.max_pool2d(x, 2).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0.0, 1.0], [0.0, 0.0]]]])


def test_overlapping_windows_add_up():
    """Stride 1, kernel 2 on a 1x3 row of ones: the middle input is in two windows."""
    x = minigrad.tensor(np.ones((1, 1, 1, 3)), requires_grad=True)
    F.avg_pool2d(x, (1, 2), stride=1).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[[[0.5, 1.0, 0.5]]]])


def test_max_pool2d_padding_is_never_the_maximum():
    x = minigrad.tensor(-np.ones((1, 1, 2, 2)))
    np.testing.assert_array_equal(F.max_pool2d(x, 2, stride=1, padding=1).numpy(),
                                  -np.ones((1, 1, 3, 3)))


def test_pool_keeps_float32():
    x = minigrad.randn(1, 2, 4, 4, requires_grad=True)
    for out in (F.max_pool2d(x, 2), F.avg_pool2d(x, 2)):
        assert out.dtype == np.float32
        out.sum().backward()
        assert x.grad.dtype == np.float32


@pytest.mark.parametrize("call, words", [
    (lambda: F.max_pool2d(minigrad.zeros(4, 4), 2), "4-D input (N, C, H, W)"),
    (lambda: F.avg_pool2d(minigrad.zeros(4, 4), 2), "4-D input (N, C, H, W)"),
    (lambda: F.max_pool2d(minigrad.zeros(1, 1, 4, 4), 2, padding=2), "at most half"),
    (lambda: F.avg_pool2d(minigrad.zeros(1, 1, 4, 4), 3, padding=2), "at most half"),
    (lambda: F.max_pool2d(minigrad.zeros(1, 1, 2, 2), 3), "larger than the padded input"),
    (lambda: F.avg_pool2d(minigrad.zeros(1, 1, 4, 4), 2, stride=0), "stride must be >= 1"),
    (lambda: nn.MaxPool2d(0)(minigrad.zeros(1, 1, 4, 4)), "kernel_size must be >= 1"),
])
def test_pool_errors(call, words):
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


def test_pool_kernel_type_error():
    with pytest.raises(TypeError, match="kernel_size must be an int or a pair"):
        nn.MaxPool2d(2.5)
