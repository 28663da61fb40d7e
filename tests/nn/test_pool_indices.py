"""max_pool2d(return_indices=True) / MaxPool2d(return_indices=True) and
max_unpool2d / MaxUnpool2d: indices in PyTorch's convention (the position
in the flattened H·W input plane), values and gradients against PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from tests.helpers import check_gradients
from tests.nn.test_conv_pool_options import distinct, pool_cases


@settings(max_examples=25, deadline=None)
@given(case=pool_cases(), ceil_mode=st.booleans())
def test_max_pool2d_indices_match_torch(case, ceil_mode):
    """Every window option (kernel, stride, padding, dilation, ceil_mode),
    including windows that hold padding taps only, where PyTorch points at
    the window's first real entry."""
    torch = pytest.importorskip("torch")
    shape, kernel, stride, padding, dilation = case
    x = distinct(shape)
    out, idx = F.max_pool2d(minigrad.tensor(x), kernel, stride, padding, dilation,
                            ceil_mode, return_indices=True)
    ref, ref_idx = torch.nn.functional.max_pool2d(torch.tensor(x), kernel, stride, padding,
                                                  dilation, ceil_mode, return_indices=True)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    assert idx.dtype == np.int64 and not idx.requires_grad
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())


@pytest.mark.parametrize("fill", [-np.inf, np.iinfo(np.int32).min])
def test_windows_without_a_real_maximum_point_at_their_first_real_entry(torch, fill):
    x = np.full((1, 1, 7, 7), fill, dtype=np.float64 if fill == -np.inf else np.int32)
    x[0, 0, 6, 6] = 1
    for dilation in (1, 2):
        _, idx = F.max_pool2d(minigrad.tensor(x), 3, 2, 1, dilation, return_indices=True)
        _, ref = torch.nn.functional.max_pool2d(torch.tensor(x), 3, 2, 1, dilation,
                                                return_indices=True)
        np.testing.assert_array_equal(idx.numpy(), ref.numpy())


def test_module_returns_output_and_indices(torch):
    x = distinct((2, 3, 6, 5))
    out, idx = nn.MaxPool2d(2, return_indices=True)(minigrad.tensor(x, requires_grad=True))
    ref, ref_idx = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    np.testing.assert_array_equal(idx.numpy(), ref_idx.numpy())
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    out.sum().backward()                     # the output still carries the graph
    # the indices pick the maxima out of the flattened input
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, idx.numpy().reshape(2, 3, -1), 2),
                                  out.numpy().reshape(2, 3, -1))


@pytest.mark.parametrize("kernel, stride, padding, shape, sizes", [
    (2, None, 0, (2, 3, 6, 4), [None, (6, 4), (2, 3, 6, 4)]),
    (3, 2, 1, (1, 2, 7, 6), [(7, 6), (1, 2, 7, 6)]),      # the default, 7x5, is too small
    ((3, 2), (2, 1), (1, 0), (2, 1, 7, 5), [None, (7, 5)])])
def test_max_unpool2d_matches_torch(torch, kernel, stride, padding, shape, sizes):
    x = distinct(shape)
    pooled, idx = F.max_pool2d(minigrad.tensor(x), kernel, stride, padding,
                               return_indices=True)
    th_idx = torch.tensor(idx.numpy())
    for output_size in sizes:
        p = minigrad.tensor(pooled.numpy(), requires_grad=True)
        tp = torch.tensor(pooled.numpy(), requires_grad=True)
        out = F.max_unpool2d(p, idx, kernel, stride, padding, output_size)
        ref = torch.nn.functional.max_unpool2d(tp, th_idx, kernel, stride, padding,
                                               output_size)
        np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
        g = np.random.default_rng(0).standard_normal(out.shape)
        out.backward(minigrad.tensor(g))
        ref.backward(torch.tensor(g))
        np.testing.assert_array_equal(p.grad.numpy(), tp.grad.numpy())
    layer = nn.MaxUnpool2d(kernel, stride, padding)
    ref = torch.nn.MaxUnpool2d(kernel, stride, padding)(torch.tensor(pooled.numpy()), th_idx,
                                                        shape[-2:])
    np.testing.assert_array_equal(layer(pooled, idx, shape[-2:]).numpy(), ref.numpy())


def test_max_unpool2d_gradcheck():
    x = distinct((2, 2, 5, 4))
    pooled, idx = F.max_pool2d(minigrad.tensor(x), 2, return_indices=True)
    assert check_gradients(lambda p: F.max_unpool2d(p, idx, 2, output_size=(5, 4)) ** 2,
                           [pooled.numpy()])


def test_max_unpool2d_errors():
    pooled, idx = F.max_pool2d(minigrad.tensor(distinct((1, 1, 7, 6))), 3, 2, 1,
                               return_indices=True)
    with pytest.raises(IndexError, match=r"indices must lie in \[0, 35\)"):
        F.max_unpool2d(pooled, idx, 3, 2, 1)             # default size 7x5: too small
    with pytest.raises(ValueError, match="output_size .* within a stride"):
        F.max_unpool2d(pooled, idx, 3, 2, 1, output_size=(9, 6))
    with pytest.raises(ValueError, match="indices of shape"):
        F.max_unpool2d(pooled, idx[:, :, :1], 3, 2, 1)
    with pytest.raises(TypeError, match="indices must be an integer Tensor"):
        F.max_unpool2d(pooled, pooled, 3, 2, 1)
