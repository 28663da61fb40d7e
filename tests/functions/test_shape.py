"""Shape functions and indexing: reshape, transpose, broadcast_to, squeeze /
unsqueeze, concatenate / stack, and t[index] with basic, slice, integer-array and
boolean-mask indices (repeated indices add up in backward)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad
from tests.functions import FAST, nonempty_shapes, shapes, values
from tests.helpers import check_gradients, compare_with_torch


def _t(data, device="cpu", requires_grad=True):
    return minigrad.tensor(np.asarray(data, dtype=np.float64), device=device,
                           requires_grad=requires_grad)


# ------------------------------------------------------------------ gradchecks
@FAST
@given(data=st.data())
def test_reshape_gradcheck(data):
    x = data.draw(shapes.flatmap(values))
    # Flatten (spelled -1), or reverse the axes' sizes and add two size-1 axes.
    target = (-1,) if data.draw(st.booleans()) else (1, *x.shape[::-1], 1)
    out = minigrad.tensor(x).reshape(*target)
    np.testing.assert_array_equal(out.numpy(), x.reshape(target))
    assert check_gradients(lambda t: t.reshape(target) * t.reshape(target), [x])


@FAST
@given(data=st.data())
def test_transpose_gradcheck(data):
    x = data.draw(nonempty_shapes.flatmap(values))
    axes = tuple(data.draw(st.permutations(range(x.ndim))))
    negative = tuple(a - x.ndim for a in axes)      # the same permutation, spelled < 0
    out = minigrad.tensor(x).permute(*negative)
    np.testing.assert_array_equal(out.numpy(), x.transpose(axes))
    assert check_gradients(lambda t: t.permute(*axes) ** 2, [x])
    assert check_gradients(lambda t: t.T ** 3, [x])
    d0, d1 = data.draw(st.integers(-x.ndim, x.ndim - 1)), data.draw(st.integers(0, x.ndim - 1))
    np.testing.assert_array_equal(minigrad.tensor(x).transpose(d0, d1).numpy(),
                                  np.swapaxes(x, d0, d1))        # PyTorch's: swap two dims
    assert check_gradients(lambda t: t.transpose(d0, d1) ** 2, [x])


@FAST
@given(data=st.data())
def test_broadcast_to_gradcheck(data):
    pair = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=1, min_dims=0,
                                                       max_dims=3, max_side=3))
    x = data.draw(values(pair.input_shapes[0]))
    target = pair.result_shape
    if len(target) < 3:
        target = (2, *target)          # a missing leading axis too
    out = minigrad.tensor(x).broadcast_to(target)
    assert out.shape == target
    assert check_gradients(lambda t: t.broadcast_to(target) * np.arange(
        float(np.prod(target))).reshape(target), [x])


@FAST
@given(x=shapes.flatmap(values), axis=st.integers(-1, 0))
def test_squeeze_unsqueeze_gradcheck(x, axis):
    assert check_gradients(lambda t: t.unsqueeze(axis).squeeze(axis) * 2, [x])
    assert check_gradients(lambda t: minigrad.unsqueeze(t, axis) ** 2, [x])
    if x.ndim:
        assert check_gradients(lambda t: t.reshape(1, *t.shape, 1).squeeze() ** 2, [x])


@FAST
@given(data=st.data())
def test_concatenate_and_stack_gradcheck(data):
    shape = data.draw(nonempty_shapes)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    other = list(shape)
    other[axis] = data.draw(st.integers(1, 3))
    a, b = data.draw(values(shape)), data.draw(values(tuple(other)))
    out = minigrad.concatenate([minigrad.tensor(a), minigrad.tensor(b)], axis=axis)
    np.testing.assert_array_equal(out.numpy(), np.concatenate([a, b], axis=axis))
    assert check_gradients(lambda s, t: minigrad.concatenate([s, t], axis=axis) ** 2, [a, b])
    c = data.draw(values(shape))
    stack_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    assert check_gradients(lambda s, t: minigrad.stack([s, t], axis=stack_axis) ** 2, [a, c])


INDICES = {
    "int": 1,
    "negative-int": -1,
    "slice": slice(0, 2),
    "step-slice": slice(None, None, 2),
    "tuple": (1, slice(1, None)),
    "ellipsis": (Ellipsis, 0),
    "newaxis": (None, slice(None), 1),
    "int-array": np.array([2, 0, 2]),
    "repeated": np.array([1, 1, 1, 0]),
    "two-int-arrays": (np.array([0, 2, 0]), np.array([1, 1, 1])),
    "bool-mask-rows": np.array([True, False, True]),
    "list": [0, 0, 2],
}


@pytest.mark.parametrize("name", sorted(INDICES))
@FAST
@given(x=values((3, 4)))
def test_getitem_gradcheck(name, x):
    index = INDICES[name]
    out = minigrad.tensor(x)[index]
    np.testing.assert_array_equal(out.numpy(), x[index])
    assert check_gradients(lambda t: t[index] ** 2, [x])


@FAST
@given(x=values((3, 4)))
def test_getitem_boolean_mask_of_full_shape(x):
    mask = x > 0
    assert check_gradients(lambda t: t[mask] * 3, [x])
    y = minigrad.tensor(x)
    assert check_gradients(lambda t: t[minigrad.tensor(mask)] * 3, [x])
    assert y[mask].shape == (int(mask.sum()),)


# ---------------------------------------------------------------- exact values
def test_repeated_indices_add_up(device):
    x = _t([10.0, 20.0, 30.0], device)
    x[np.array([0, 2, 0, 0])].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 0.0, 1.0])
    y = _t(np.zeros((2, 3)), device)
    y[np.array([1, 1]), np.array([2, 2])].backward(
        minigrad.tensor(np.array([1.5, 2.5]), device=device))
    np.testing.assert_array_equal(y.grad.numpy(), [[0, 0, 0], [0, 0, 4.0]])


def test_index_with_integer_tensor_and_mask(device):
    x = _t([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], device)
    rows = minigrad.tensor([2, 2], device=device)
    x[rows].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [0, 0], [2, 2]])
    x.grad = None
    x[x > 3.5].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0, 0], [0, 1], [1, 1]])


def test_basic_index_gradient_has_input_shape_and_dtype():
    x = minigrad.tensor(np.ones((2, 3, 4)), dtype=np.float32, requires_grad=True)
    x[1, :, ::2].sum().backward()
    assert x.grad.shape == (2, 3, 4) and x.grad.dtype == np.float32
    assert x.grad.numpy().sum() == 6.0


def test_transpose_and_reshape_move_gradients_exactly():
    x = _t(np.arange(6.0).reshape(2, 3))
    w = np.arange(6.0).reshape(3, 2)
    (x.T * w).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), w.T)
    x.grad = None
    x.reshape(3, 2).backward(minigrad.tensor(w))
    np.testing.assert_array_equal(x.grad.numpy(), w.reshape(2, 3))


def test_stack_and_concatenate_split_gradients():
    a, b = _t([1.0, 2.0]), _t([3.0, 4.0])
    minigrad.stack([a, b], axis=1).backward(minigrad.tensor([[1.0, 2.0], [3.0, 4.0]],
                                                             dtype=np.float64))
    assert a.grad.numpy().tolist() == [1.0, 3.0] and b.grad.numpy().tolist() == [2.0, 4.0]
    a.grad = b.grad = None
    minigrad.cat([a, b, a]).backward(minigrad.tensor(np.arange(6.0)))
    assert a.grad.numpy().tolist() == [4.0, 6.0] and b.grad.numpy().tolist() == [2.0, 3.0]


# ---------------------------------------------------------------------- errors
def test_shape_errors_name_the_shapes():
    x = minigrad.ones(2, 3)
    with pytest.raises(ValueError, match=r"shape \(2, 3\).*into shape \(4, 2\)"):
        x.reshape(4, 2)
    with pytest.raises(ValueError, match=r"not a permutation.*\(2, 3\)"):
        x.permute(0, 0)
    with pytest.raises(IndexError, match=r"transpose: dimension 2 is out of range"):
        x.transpose(0, 2)
    with pytest.raises(ValueError, match=r"cannot broadcast shape \(2, 3\) to \(3, 3\)"):
        x.broadcast_to(3, 3)
    assert x.squeeze(0).shape == (2, 3)      # not size 1: a no-op, as in PyTorch
    with pytest.raises(ValueError, match=r"concatenate: shapes \(2, 3\), \(2, 4\)"):
        minigrad.concatenate([x, minigrad.ones(2, 4)], axis=0)
    with pytest.raises(ValueError, match=r"stack: .*\(2, 3\), \(3, 2\)"):
        minigrad.stack([x, minigrad.ones(3, 2)])
    with pytest.raises(IndexError, match=r"shape \(2, 3\)"):
        x[5]
    with pytest.raises(ValueError, match="at least one tensor"):
        minigrad.stack([])


# ----------------------------------------------------------- parity with torch
def _torch_cases(torch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4))
    idx = np.array([1, 0, 1, 1])
    mask = x[0] > 0
    return {
        "reshape": (lambda t: t.reshape(4, 6), lambda t: t.reshape(4, 6), [x]),
        "transpose": (lambda t: t.transpose(0, 2), lambda t: t.transpose(0, 2), [x]),
        "permute": (lambda t: t.permute(2, 0, 1), lambda t: t.permute(2, 0, 1), [x]),
        "T": (lambda t: t[0].T, lambda t: t[0].T, [x]),
        "broadcast_to": (lambda t: t.broadcast_to(5, 2, 3, 4),
                         lambda t: t.broadcast_to(5, 2, 3, 4), [x]),
        "squeeze": (lambda t: t.reshape(2, 1, 12).squeeze(1),
                    lambda t: t.reshape(2, 1, 12).squeeze(1), [x]),
        "unsqueeze": (lambda t: t.unsqueeze(-1), lambda t: t.unsqueeze(-1), [x]),
        "concatenate": (lambda a, b: minigrad.concatenate([a, b], axis=-1),
                        lambda a, b: torch.cat([a, b], dim=-1), [x, x[..., :2].copy()]),
        "stack": (lambda a, b: minigrad.stack([a, b], axis=1),
                  lambda a, b: torch.stack([a, b], dim=1), [x, x * 2]),
        "basic-index": (lambda t: t[1, :, ::2], lambda t: t[1, :, ::2], [x]),
        "int-array": (lambda t: t[:, idx], lambda t: t[:, torch.tensor(idx)], [x]),
        "mask": (lambda t: t[0][mask], lambda t: t[0][torch.tensor(mask)], [x]),
    }


@pytest.mark.parametrize("name", ["reshape", "transpose", "permute", "T", "broadcast_to", "squeeze",
                                  "unsqueeze", "concatenate", "stack", "basic-index",
                                  "int-array", "mask"])
def test_parity_with_torch(name, torch):
    mg_fn, th_fn, arrays = _torch_cases(torch)[name]
    compare_with_torch(torch, mg_fn, th_fn, arrays)


def test_repeated_index_parity_on_device(torch, device):
    x = np.random.default_rng(4).standard_normal((5, 3))
    idx = np.array([4, 4, 0, 4, 2])
    compare_with_torch(torch, lambda t: t[idx] * 2, lambda t: t[torch.tensor(idx)] * 2,
                       [x], device=device)


@pytest.mark.parametrize("name", ["reshape", "transpose", "permute", "T", "broadcast_to", "squeeze",
                                  "unsqueeze", "concatenate", "stack", "basic-index",
                                  "int-array", "mask"])
def test_float32_stays_float32(name, device):
    mg_fn, _, arrays = _torch_cases(None)[name]
    inputs = [minigrad.tensor(a, dtype=np.float32, device=device, requires_grad=True)
              for a in arrays]
    out = mg_fn(*inputs)
    assert out.dtype == np.float32
    out.sum().backward()
    assert all(t.grad.dtype == np.float32 for t in inputs)


def test_reshape_rejects_bad_sizes():
    x = minigrad.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="reshape: .*-3"):
        x.reshape(-3)
    with pytest.raises(TypeError, match="reshape: .*ints"):
        x.reshape(1.5)


def test_concatenate_bad_axis_names_the_axis():
    a = minigrad.zeros(2, 3)
    with pytest.raises(ValueError, match="concatenate: axis 5 is out of range"):
        minigrad.concatenate([a, a], axis=5)
