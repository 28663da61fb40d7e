"""NumPy interop: ``np.asarray(tensor)`` (NumPy 2's dtype/copy arguments),
``ndarray op tensor`` giving a Tensor, NumPy functions on tensors, and on the
GPU one device error for every binary op and comparison with a NumPy array."""
from __future__ import annotations

import operator

import numpy as np
import pytest

import minigrad

BINARY_OPS = [operator.add, operator.sub, operator.mul, operator.truediv, operator.pow,
              operator.matmul]
COMPARISONS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


def test_asarray_gives_the_data_without_a_copy():
    t = minigrad.tensor([[1.0, 2.0], [3.0, 4.0]])
    a = np.asarray(t)
    assert type(a) is np.ndarray and a.dtype == np.float32 and a.shape == (2, 2)
    assert np.shares_memory(a, t.data)              # as torch.Tensor.numpy() on the CPU
    assert np.asarray(minigrad.tensor(3.0)).shape == ()
    assert np.asarray(minigrad.tensor([1, 2])).dtype == np.int64
    # no longer an object array of 0-d tensors
    assert np.asarray([minigrad.tensor(1.0), minigrad.tensor(2.0)]).dtype == np.float32


def test_array_dtype_and_copy_arguments():
    t = minigrad.tensor([1.0, 2.0])
    converted = np.asarray(t, dtype=np.float64)
    assert converted.dtype == np.float64 and not np.shares_memory(converted, t.data)
    copied = np.array(t, copy=True)
    assert not np.shares_memory(copied, t.data)
    np.testing.assert_array_equal(copied, [1.0, 2.0])
    assert np.shares_memory(np.asarray(t, copy=False), t.data)
    with pytest.raises(ValueError, match="needs a copy, but copy=False"):
        np.asarray(t, dtype=np.float64, copy=False)
    # the protocol as NumPy 2 calls it, directly
    assert t.__array__(dtype=None, copy=None) is t.data


@pytest.mark.parametrize("op", BINARY_OPS + COMPARISONS)
def test_ndarray_op_tensor_gives_a_tensor(op):
    a = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)
    t = minigrad.tensor([[0.5, 2.0], [1.5, 5.0]])
    left, right = op(a, t), op(t, a)
    assert isinstance(left, minigrad.Tensor) and isinstance(right, minigrad.Tensor)
    np.testing.assert_allclose(left.numpy(), op(a, t.numpy()), rtol=1e-6)
    np.testing.assert_allclose(right.numpy(), op(t.numpy(), a), rtol=1e-6)


def test_ndarray_plus_tensor_keeps_the_graph():
    t = minigrad.tensor([1.0, 2.0], requires_grad=True)
    out = np.array([10.0, 20.0], dtype=np.float32) * t
    out.sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [10.0, 20.0])


def test_numpy_functions_on_tensors():
    t = minigrad.tensor([1.0, 2.0, 3.0])
    assert isinstance(np.sum(t), minigrad.Tensor) and np.sum(t).item() == 6.0
    assert np.mean(t).item() == 2.0 and np.max(t).item() == 3.0 and np.min(t).item() == 1.0
    assert np.mean(t, dtype=np.float64).dtype == np.float64
    np.testing.assert_allclose(np.exp(t), np.exp([1.0, 2.0, 3.0]), rtol=1e-6)
    assert np.stack([t, t]).shape == (2, 3)
    with pytest.raises(TypeError, match="out= is not supported"):
        np.sum(t, out=np.zeros(()))


@pytest.mark.parametrize("op", BINARY_OPS + COMPARISONS)
def test_gpu_tensor_with_a_numpy_array_raises_the_device_error(op, device):
    t = minigrad.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    a = np.array([[1.0, 1.0], [2.0, 2.0]], dtype=np.float32)
    if device == "cpu":
        assert isinstance(op(t, a), minigrad.Tensor)
        return
    for call in (lambda: op(t, a), lambda: op(a, t)):
        with pytest.raises(RuntimeError, match="tensors are on different devices"):
            call()
    # a Python number is no device: comparing with it works
    assert isinstance(t < 2.5, minigrad.Tensor)


def test_gpu_tensor_refuses_implicit_conversion(device):
    t = minigrad.tensor([1.0, 2.0], device=device)
    if device == "cpu":
        np.testing.assert_array_equal(np.asarray(t), [1.0, 2.0])
        return
    with pytest.raises(TypeError, match=r"call \.numpy\(\)"):
        np.asarray(t)
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])


def test_numpy_function_of_a_tensor_requiring_grad_raises(torch):
    with pytest.raises(RuntimeError):               # PyTorch: "Can't call numpy() on Tensor
        np.exp(torch.tensor([1.0], requires_grad=True))   # that requires grad"
    with pytest.raises(RuntimeError, match="requires grad"):
        np.exp(minigrad.tensor([1.0], requires_grad=True))


@pytest.mark.parametrize("convert", [np.asarray, np.array, np.exp, lambda t: np.add(t, 1.0),
                                     lambda t: np.matmul(t, np.ones((2, 1))),
                                     lambda t: np.concatenate([t, t])])
def test_every_implicit_conversion_of_a_tensor_requiring_grad_raises(convert):
    t = minigrad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="requires grad"):
        convert(t)
    for ok in (t.detach(), minigrad.tensor([1.0, 2.0])):     # no graph: converts as before
        np.testing.assert_array_equal(np.asarray(ok), [1.0, 2.0])
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])      # explicit: leaves the graph
