"""Conv2d groups and padding="same"/"valid"; MaxPool2d ceil_mode and dilation;
AvgPool2d ceil_mode: gradcheck in float64 and parity with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from tests.helpers import check_gradients, compare_with_torch


def distinct(shape, seed=0):
    """Values without ties, so the max is never on a kink."""
    size = int(np.prod(shape))
    return np.random.default_rng(seed).permutation(size).reshape(shape) * 0.1 - 1.0


@st.composite
def pool_cases(draw, with_dilation=True):
    kernel = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    stride = (draw(st.integers(1, 3)), draw(st.integers(1, 3)))
    padding = (draw(st.integers(0, kernel[0] // 2)), draw(st.integers(0, kernel[1] // 2)))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2))) if with_dilation else (1, 1)
    span = [dilation[a] * (kernel[a] - 1) + 1 for a in (0, 1)]
    h = draw(st.integers(max(1, span[0] - 2 * padding[0]), 7))
    w = draw(st.integers(max(1, span[1] - 2 * padding[1]), 7))
    return (draw(st.integers(1, 2)), 2, h, w), kernel, stride, padding, dilation


@settings(max_examples=25, deadline=None)
@given(case=pool_cases(), ceil_mode=st.booleans())
def test_max_pool2d_ceil_mode_dilation_gradcheck(case, ceil_mode):
    shape, kernel, stride, padding, dilation = case
    x = minigrad.tensor(distinct(shape))        # no window of padding taps only (-inf)
    assume(np.isfinite(F.max_pool2d(x, kernel, stride, padding, dilation,
                                    ceil_mode).numpy()).all())
    assert check_gradients(lambda x: F.max_pool2d(x, kernel, stride, padding, dilation,
                                                  ceil_mode), [distinct(shape)])


@settings(max_examples=25, deadline=None)
@given(case=pool_cases(), ceil_mode=st.booleans())
def test_max_pool2d_ceil_mode_dilation_parity(case, ceil_mode):
    torch = pytest.importorskip("torch")
    shape, kernel, stride, padding, dilation = case
    # A dilated window can hold padding taps only: its maximum is -inf and
    # where its gradient goes is arbitrary (PyTorch sends it to an input
    # outside the window), so those cases are left out.
    x = minigrad.tensor(distinct(shape))
    assume(np.isfinite(F.max_pool2d(x, kernel, stride, padding, dilation,
                                    ceil_mode).numpy()).all())
    compare_with_torch(
        torch, lambda x: F.max_pool2d(x, kernel, stride, padding, dilation, ceil_mode),
        lambda x: torch.nn.functional.max_pool2d(x, kernel, stride, padding, dilation,
                                                 ceil_mode=ceil_mode),
        [distinct(shape)], rtol=1e-12, atol=1e-14)


@settings(max_examples=25, deadline=None)
@given(case=pool_cases(with_dilation=False), count_include_pad=st.booleans())
def test_avg_pool2d_ceil_mode_parity_and_gradcheck(case, count_include_pad):
    torch = pytest.importorskip("torch")
    shape, kernel, stride, padding, _ = case
    x = np.random.default_rng(1).standard_normal(shape)
    fn = lambda t: F.avg_pool2d(t, kernel, stride, padding, True,  # noqa: E731
                                count_include_pad)
    compare_with_torch(
        torch, fn,
        lambda t: torch.nn.functional.avg_pool2d(t, kernel, stride, padding, ceil_mode=True,
                                                 count_include_pad=count_include_pad),
        [x], rtol=1e-12, atol=1e-14)
    assert check_gradients(fn, [x])


def test_ceil_mode_output_sizes_and_modules(torch, device):
    x = distinct((1, 1, 5, 5))
    # floor: 2x2, ceil: 3x3 (the last window holds one row / column of input)
    assert F.max_pool2d(minigrad.tensor(x), 2).shape == (1, 1, 2, 2)
    pool = nn.MaxPool2d(2, ceil_mode=True)
    assert pool(minigrad.tensor(x)).shape == (1, 1, 3, 3)
    # the last window would start in the right padding only: PyTorch drops it
    assert F.max_pool2d(minigrad.tensor(distinct((1, 1, 4, 4))), 2, 2, padding=1,
                        ceil_mode=True).shape == (1, 1, 3, 3)
    compare_with_torch(torch, lambda t: nn.MaxPool2d(3, 2, 1, dilation=2, ceil_mode=True)(t),
                       lambda t: torch.nn.MaxPool2d(3, 2, 1, dilation=2, ceil_mode=True)(t),
                       [distinct((2, 3, 8, 7))], device=device, rtol=1e-12)
    compare_with_torch(torch, lambda t: nn.AvgPool2d(3, 2, 1, ceil_mode=True)(t),
                       lambda t: torch.nn.AvgPool2d(3, 2, 1, ceil_mode=True)(t),
                       [distinct((2, 3, 6, 6))], device=device, rtol=1e-12)
    assert "ceil_mode=True" in repr(pool)


# --------------------------------------------------------------------- conv2d
@st.composite
def conv_cases(draw):
    groups = draw(st.integers(1, 3))
    c, o = groups * draw(st.integers(1, 2)), groups * draw(st.integers(1, 2))
    kh, kw = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    dilation = (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    padding = draw(st.sampled_from(["same", "valid", 0, 1, (1, 2)]))
    stride = (1, 1) if padding == "same" else (draw(st.integers(1, 2)), draw(st.integers(1, 2)))
    h = draw(st.integers(dilation[0] * (kh - 1) + 1, 8))
    w = draw(st.integers(dilation[1] * (kw - 1) + 1, 8))
    return (draw(st.integers(1, 2)), c, h, w), (o, c // groups, kh, kw), stride, padding, \
        dilation, groups


@settings(max_examples=25, deadline=None)
@given(case=conv_cases(), with_bias=st.booleans())
def test_conv2d_groups_and_same_padding_gradcheck(case, with_bias):
    x_shape, w_shape, stride, padding, dilation, groups = case
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape)]
    if with_bias:
        arrays.append(rng.standard_normal(w_shape[0]))
    assert check_gradients(
        lambda x, w, b=None: F.conv2d(x, w, b, stride, padding, dilation, groups), arrays)


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
@settings(max_examples=25, deadline=None)
@given(case=conv_cases())
def test_conv2d_groups_and_same_padding_parity(case):
    torch = pytest.importorskip("torch")
    x_shape, w_shape, stride, padding, dilation, groups = case
    rng = np.random.default_rng(3)
    arrays = [rng.standard_normal(x_shape), rng.standard_normal(w_shape),
              rng.standard_normal(w_shape[0])]
    out = compare_with_torch(
        torch, lambda x, w, b: F.conv2d(x, w, b, stride, padding, dilation, groups),
        lambda x, w, b: torch.nn.functional.conv2d(x, w, b, stride, padding, dilation,
                                                   groups),
        arrays, rtol=1e-10, atol=1e-12)
    if padding == "same":
        assert out.shape[2:] == x_shape[2:]


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")
def test_conv2d_same_even_kernel_pads_more_after(torch, device):
    """A 4x2 kernel pads 1 above and 2 below, 0 left and 1 right (PyTorch's rule)."""
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((1, 2, 5, 4)), rng.standard_normal((3, 2, 4, 2))
    out = compare_with_torch(
        torch, lambda a, b: F.conv2d(a, b, padding="same"),
        lambda a, b: torch.nn.functional.conv2d(a, b, padding="same"),
        [x, w], device=device, rtol=1e-12, atol=1e-13)
    explicit = F.conv2d(minigrad.tensor(np.pad(x, ((0, 0), (0, 0), (1, 2), (0, 1)))),
                        minigrad.tensor(w))
    np.testing.assert_allclose(out.numpy(), explicit.numpy(), rtol=1e-12)


def test_conv2d_module_groups_and_padding(torch):
    layer = nn.Conv2d(4, 6, 3, padding="same", groups=2, dtype=np.float64)
    assert layer.weight.shape == (6, 2, 3, 3)
    ref = torch.nn.Conv2d(4, 6, 3, padding="same", groups=2, dtype=torch.float64)
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(layer.weight.numpy()))
        ref.bias.copy_(torch.tensor(layer.bias.numpy()))
    x = np.random.default_rng(5).standard_normal((2, 4, 5, 5))
    np.testing.assert_allclose(layer(minigrad.tensor(x)).numpy(),
                               ref(torch.tensor(x)).detach().numpy(), rtol=1e-12)
    # PyTorch's initialization bound: 1/sqrt(fan_in), fan_in = C_in/groups·KH·KW = 18
    assert np.abs(layer.weight.numpy()).max() <= 1 / np.sqrt(18)
    assert "groups=2" in repr(layer) and "'same'" in repr(layer)
    # PyTorch's positional order: ..., dilation, groups, bias
    assert nn.Conv2d(4, 6, 3, 1, 1, 1, 2, False).groups == 2
    assert nn.Conv2d(4, 6, 3, 1, 1, 1, 2, False).bias is None
    assert nn.Conv2d(2, 2, 3, padding="valid")(minigrad.randn(1, 2, 5, 5)).shape == \
        (1, 2, 3, 3)


@pytest.mark.parametrize("call, match", [
    (lambda: nn.Conv2d(4, 6, 3, groups=4), "out_channels \\(6\\) must be divisible"),
    (lambda: nn.Conv2d(3, 6, 3, groups=2), "in_channels \\(3\\) must be divisible"),
    (lambda: nn.Conv2d(2, 2, 3, groups=0), "groups must be a positive int"),
    (lambda: nn.Conv2d(2, 2, 3, stride=2, padding="same"), "not supported for strided"),
    (lambda: nn.Conv2d(2, 2, 3, padding="full"), "'same' or 'valid'"),
    (lambda: F.conv2d(minigrad.randn(1, 4, 5, 5), minigrad.randn(6, 2, 3, 3), groups=3),
     "expects 6 input channels \\(groups=3\\)"),
    (lambda: F.conv2d(minigrad.randn(1, 4, 5, 5), minigrad.randn(5, 2, 3, 3), groups=2),
     "not divisible by groups=2"),
])
def test_conv2d_option_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
