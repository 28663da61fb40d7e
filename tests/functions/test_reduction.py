"""Reductions: sum, mean, max, min, var over axis None / int / negative / tuple,
with and without keepdims; ties; errors; float32; parity with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad
from tests.functions import FAST, distinct_values, shape_and_axis, values
from tests.helpers import check_gradients, compare_with_torch

REDUCTIONS = {
    "sum": lambda x, axis, keepdims: x.sum(axis=axis, keepdims=keepdims),
    "mean": lambda x, axis, keepdims: x.mean(axis=axis, keepdims=keepdims),
    "max": lambda x, axis, keepdims: x.amax(dim=axis, keepdim=keepdims),
    "min": lambda x, axis, keepdims: x.amin(dim=axis, keepdim=keepdims),
    "var": lambda x, axis, keepdims: x.var(axis=axis, keepdims=keepdims, correction=0),
    "var-unbiased": lambda x, axis, keepdims: x.var(dim=axis, keepdim=keepdims),
}
NUMPY = {
    "sum": lambda a, axis, keepdims: a.sum(axis=axis, keepdims=keepdims),
    "mean": lambda a, axis, keepdims: a.mean(axis=axis, keepdims=keepdims),
    "max": lambda a, axis, keepdims: a.max(axis=axis, keepdims=keepdims),
    "min": lambda a, axis, keepdims: a.min(axis=axis, keepdims=keepdims),
    "var": lambda a, axis, keepdims: a.var(axis=axis, keepdims=keepdims),
    "var-unbiased": lambda a, axis, keepdims: a.var(axis=axis, keepdims=keepdims, ddof=1),
}


def _reduced_count(shape, axis):
    if axis is None:
        return int(np.prod(shape))
    axes = (axis,) if isinstance(axis, int) else axis
    return int(np.prod([shape[a] for a in axes]))


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@FAST
@given(data=st.data(), keepdims=st.booleans())
def test_reduction_gradcheck_and_forward(name, data, keepdims):
    shape, axis = data.draw(shape_and_axis())
    if name == "var-unbiased" and _reduced_count(shape, axis) < 2:
        return      # n - 1 = 0: no unbiased variance of one value
    if name in ("max", "min"):
        x = data.draw(distinct_values(shape))      # no ties: differentiable
    else:
        x = data.draw(values(shape))
    out = REDUCTIONS[name](minigrad.tensor(x), axis, keepdims)
    np.testing.assert_allclose(out.numpy(), NUMPY[name](x, axis, keepdims), rtol=1e-12,
                               atol=1e-14)
    assert out.dtype == np.float64
    assert check_gradients(lambda t: REDUCTIONS[name](t, axis, keepdims), [x])


def test_reduction_over_zero_dim_tensor():
    x = minigrad.tensor(3.0, dtype=np.float64, requires_grad=True)
    for name in ("sum", "mean", "max", "min"):
        x.grad = None
        out = REDUCTIONS[name](x, None, False)
        out.backward()
        assert out.shape == () and x.grad.shape == () and x.grad.item() == 1.0


@pytest.mark.parametrize("reduce, expected", [
    ("max", [[0.5, 0.0, 0.5], [0.0, 1.0, 0.0]]),
    ("min", [[0.0, 1.0, 0.0], [1 / 3, 1 / 3, 1 / 3]]),
])
def test_tied_extremes_split_the_gradient_evenly(reduce, expected, device):
    x = minigrad.tensor([[2.0, 1.0, 2.0], [4.0, 5.0, 4.0]], dtype=np.float64, device=device,
                        requires_grad=True)
    if reduce == "min":
        x = minigrad.tensor([[2.0, 1.0, 2.0], [4.0, 4.0, 4.0]], dtype=np.float64,
                            device=device, requires_grad=True)
    getattr(x, "a" + reduce)(dim=1).sum().backward()      # amax, amin
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=0, atol=1e-15)


def test_global_max_ties_over_all_axes():
    x = minigrad.tensor([[1.0, 3.0], [3.0, 3.0]], dtype=np.float64, requires_grad=True)
    x.max().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0.0, 1 / 3], [1 / 3, 1 / 3]])


def test_keepdims_shapes():
    x = minigrad.ones(2, 3, 4)
    assert x.sum(axis=(0, -1), keepdims=True).shape == (1, 3, 1)
    assert x.mean(axis=-2).shape == (2, 4)
    assert x.amax(dim=(2, 0)).shape == (3,)
    assert x.var(axis=None, keepdims=True).shape == (1, 1, 1)
    assert minigrad.sum(x, 1).shape == (2, 4) and minigrad.mean(x).shape == ()


def test_bad_axis_errors_name_axis_and_ndim():
    x = minigrad.ones(2, 3)
    with pytest.raises(ValueError, match="axis 2 is out of range.*2 dimensions"):
        x.sum(axis=2)
    with pytest.raises(ValueError, match="axis -3"):
        x.max(axis=-3)
    with pytest.raises(ValueError, match="repeated axis"):
        x.mean(axis=(1, -1))
    with pytest.raises(TypeError, match="axis must be an int"):
        x.sum(axis=1.5)
    with pytest.raises(ValueError, match=r"empty tensor of shape \(0, 3\)"):
        minigrad.zeros(0, 3).max()


@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_reductions_keep_float32(name, device):
    x = minigrad.tensor(np.arange(12.0).reshape(3, 4), dtype=np.float32, device=device,
                        requires_grad=True)
    for axis in (None, 0, (0, 1)):
        x.grad = None
        out = REDUCTIONS[name](x, axis, False)
        assert out.dtype == np.float32, f"{name} axis={axis} gave {out.dtype}"
        out.sum().backward()
        assert x.grad.dtype == np.float32


def test_full_reduction_of_float64_stays_float64_under_float32_default():
    # NumPy returns a scalar (np.float64) for a full reduction: it must keep its dtype.
    x = minigrad.tensor(np.ones((2, 3)), requires_grad=True)
    assert minigrad.get_default_dtype() == np.float32
    for out in (x.sum(), x.mean(), x.max(), x.var(), x[0, 1]):
        assert out.dtype == np.float64, out


def test_var_of_constant_has_zero_gradient():
    x = minigrad.tensor([2.0, 2.0, 2.0], dtype=np.float64, requires_grad=True)
    v = x.var()
    v.backward()
    assert v.item() == 0.0 and x.grad.numpy().tolist() == [0.0, 0.0, 0.0]


# ----------------------------------------------------------- parity with torch
@pytest.mark.parametrize("axis", [None, 0, -1, (0, 2), (-1, -3)])
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("name", ["sum", "mean", "max", "min", "var", "var-unbiased"])
def test_parity_with_torch(name, axis, keepdims, torch):
    x = np.random.default_rng(0).permutation(24).reshape(2, 3, 4) * 0.25 - 3.0
    dim = tuple(range(3)) if axis is None else axis
    torch_fns = {
        "sum": lambda t: t.sum(dim=dim, keepdim=keepdims),
        "mean": lambda t: t.mean(dim=dim, keepdim=keepdims),
        "max": lambda t: t.amax(dim=dim, keepdim=keepdims),
        "min": lambda t: t.amin(dim=dim, keepdim=keepdims),
        "var": lambda t: t.var(dim=dim, keepdim=keepdims, correction=0),
        "var-unbiased": lambda t: t.var(dim=dim, keepdim=keepdims, correction=1),
    }
    compare_with_torch(torch, lambda t: REDUCTIONS[name](t, axis, keepdims),
                       torch_fns[name], [x])


def test_parity_of_tied_max_with_torch_amax(torch, device):
    x = np.array([[1.0, 5.0, 5.0], [2.0, 2.0, 2.0]])
    compare_with_torch(torch, lambda t: t.amax(dim=1), lambda t: t.amax(dim=1), [x],
                       device=device)
    compare_with_torch(torch, lambda t: t.min(), lambda t: t.amin(), [x], device=device)


def test_max_gradient_goes_to_nan_like_torch(torch):
    x = minigrad.tensor([1.0, np.nan, 2.0], requires_grad=True)
    x.max().backward()
    t = torch.tensor([1.0, float("nan"), 2.0], requires_grad=True)
    t.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), t.grad.numpy())   # [0, 1, 0]


def test_max_gradient_goes_to_nan_and_ties_share_without_torch(float64):
    """The two parity tests above with PyTorch's values written out: a nan is
    the maximum and takes the gradient; tied maxima of amax share it evenly."""
    x = minigrad.tensor([1.0, np.nan, 2.0], requires_grad=True)
    x.max().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0.0, 1.0, 0.0])
    x = minigrad.tensor([[1.0, 5.0, 5.0], [2.0, 2.0, 2.0]], requires_grad=True)
    x.amax(dim=1).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]],
                               rtol=1e-15)
    x.grad = None
    x.min().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[1.0, 0, 0], [0, 0, 0]])


def test_max_over_a_nonempty_axis_of_an_empty_tensor_is_empty():
    x = minigrad.zeros(0, 3)
    assert x.amax(dim=1).shape == (0,) and x.max(dim=1).values.shape == (0,)
    assert x.amin(dim=1, keepdim=True).shape == (0, 1)
    assert x.min(dim=1, keepdim=True).indices.shape == (0, 1)
    with pytest.raises(ValueError, match="empty"):
        x.amax(dim=0)
    with pytest.raises(ValueError, match="empty"):
        x.max(dim=0)


def test_argmax_bad_axis_names_the_op():
    with pytest.raises(ValueError, match="argmax: axis 3 is out of range"):
        minigrad.tensor([1.0, 2.0]).argmax(axis=3)


def test_unbiased_var_of_one_value_is_nan_with_a_nan_gradient():
    # As in PyTorch: 0 / 0 in forward and in backward, not a Python ZeroDivisionError.
    x = minigrad.tensor([2.0], dtype=np.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):   # as PyTorch
        v = x.var()           # unbiased by default, as in PyTorch
    v.backward()
    assert np.isnan(v.item()) and np.isnan(x.grad.numpy()).all()
