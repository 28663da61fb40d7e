"""The Tensor type: construction, dtypes, conversion (.numpy, .item, .detach,
.to), requires_grad rules, and comparisons."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad


def test_tensor_from_python_data_uses_default_dtypes():
    assert minigrad.tensor([1.0, 2.0]).dtype == np.float32
    assert minigrad.tensor([1, 2]).dtype == np.int64
    assert minigrad.tensor(np.ones(2, np.float64)).dtype == np.float64
    assert minigrad.tensor([1, 2], dtype=np.float64).dtype == np.float64


def test_default_dtype_float64(float64):
    assert minigrad.tensor([1.0]).dtype == np.float64
    assert minigrad.randn(2).dtype == np.float64 and minigrad.zeros(2).dtype == np.float64
    assert (minigrad.ones(2, dtype=np.float32) * 2.0).dtype == np.float32


def test_set_default_dtype_rejects_integers():
    with pytest.raises(TypeError, match="floating dtype.*int64"):
        minigrad.set_default_dtype(np.int64)


def test_tensor_copies_its_input():
    a = np.zeros(3)
    t = minigrad.tensor(a)
    a[0] = 5.0
    assert t.numpy()[0] == 0.0


def test_tensor_rejects_non_numeric_data():
    with pytest.raises(TypeError, match="cannot make a tensor"):
        minigrad.tensor(["a", "b"])
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        minigrad.tensor([1.0], device="tpu")


def test_integer_tensors_cannot_require_grad():
    with pytest.raises(TypeError, match="only floating-point tensors.*int64"):
        minigrad.tensor([1, 2], requires_grad=True)
    t = minigrad.tensor([1, 2])
    with pytest.raises(TypeError, match="int64"):
        t.requires_grad = True
    with pytest.raises(TypeError, match="bool"):
        minigrad.tensor([True]).requires_grad_()


def test_interior_tensor_cannot_drop_requires_grad():
    y = minigrad.tensor([1.0], requires_grad=True) * 2
    with pytest.raises(RuntimeError, match="detach"):
        y.requires_grad = False


def test_attributes(device):
    t = minigrad.zeros(2, 3, device=device, requires_grad=True)
    assert t.shape == (2, 3) and t.ndim == 2 and t.dtype == np.float32
    assert t.device == device and t.requires_grad and t.is_leaf and t.grad is None
    assert len(t) == 2 and t.size() == (2, 3) and t.size(-1) == 3 and t.numel() == 6
    y = t * 2
    assert not y.is_leaf and type(y.creator).__name__ == "Mul"
    assert "grad_fn=<Mul>" in repr(y)


def test_numpy_returns_a_numpy_array(device):
    t = minigrad.tensor([[1.0, 2.0]], device=device)
    out = t.numpy()
    assert isinstance(out, np.ndarray) and out.tolist() == [[1.0, 2.0]]
    assert t.tolist() == [[1.0, 2.0]]


def test_item():
    assert minigrad.tensor([[2.5]]).item() == 2.5
    assert isinstance(minigrad.tensor(3).item(), int)
    with pytest.raises(ValueError, match=r"one element.*shape \(2,\)"):
        minigrad.tensor([1.0, 2.0]).item()
    assert float(minigrad.tensor(1.5)) == 1.5 and int(minigrad.tensor(7)) == 7


def test_detach_shares_data_and_cuts_the_graph():
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    assert d.is_leaf and not d.requires_grad and d.grad is None
    assert d.data is y.data
    (d * x).sum().backward()                 # no gradient flows through d
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_to_same_device_and_dtype_returns_self(device):
    t = minigrad.ones(2, device=device)
    assert t.to(device) is t and t.to(dtype=np.float32) is t


def test_to_changes_dtype_differentiably():
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(np.float64)
    assert y.dtype == np.float64 and x.double().dtype == np.float64
    (y * y).sum().backward()
    assert x.grad.dtype == np.float32
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 4.0])


def test_to_an_integer_dtype_gives_a_constant_as_in_pytorch():
    # x.long() of a tensor that requires grad is an integer tensor without a graph.
    x = minigrad.tensor([1.5, -2.5], requires_grad=True)
    y = x.to(np.int64)
    assert y.dtype == np.int64 and not y.requires_grad and y.is_leaf
    assert y.tolist() == [1, -2]


def test_to_cuda_and_back(device):
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.to(device)
    assert y.device == device
    (y * 3).sum().backward()
    assert x.grad.device == "cpu"
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_mixing_devices_is_a_clear_error(device):
    a, b = minigrad.ones(2), minigrad.ones(2, device=device)
    if device == "cpu":
        assert (a + b).device == "cpu"
        return
    with pytest.raises(RuntimeError, match="different devices"):
        a + b


def test_data_is_assignable():
    t = minigrad.tensor([1.0, 2.0])
    t.data = np.array([3.0, 4.0], dtype=np.float32)
    assert t.numpy().tolist() == [3.0, 4.0]
    t.data = minigrad.tensor([5.0])
    assert t.numpy().tolist() == [5.0]
    with pytest.raises(TypeError, match="NumPy or CuPy array"):
        t.data = [1.0]


def test_comparisons_give_boolean_tensors_without_graph():
    x = minigrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    mask = x > 1.5
    assert mask.dtype == np.bool_ and not mask.requires_grad
    assert mask.numpy().tolist() == [False, True, True]
    assert (x == 2.0).numpy().tolist() == [False, True, False]
    assert (x <= minigrad.tensor([1.0, 1.0, 1.0])).numpy().tolist() == [True, False, False]


def test_truth_value_of_many_elements_is_ambiguous():
    with pytest.raises(ValueError, match="ambiguous"):
        bool(minigrad.ones(2))
    assert bool(minigrad.ones(1))


def test_numpy_array_on_the_left_uses_tensor_operators():
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    y = np.array([3.0, 4.0], dtype=np.float32) * x
    assert isinstance(y, minigrad.Tensor) and y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 4.0])


def test_integer_with_floating_operand_takes_the_floating_dtype():
    """PyTorch's promotion rule (NumPy would give float64 for int64 * float32)."""
    t = minigrad.tensor([1, 2])
    assert (t * 1.5).dtype == np.float32
    assert (t * 2).dtype == np.int64
    w = minigrad.tensor([0.5, 0.25], requires_grad=True)
    out = t * w + minigrad.tensor([True, False])
    assert out.dtype == np.float32
    out.sum().backward()
    assert w.grad.dtype == np.float32 and w.grad.numpy().tolist() == [1.0, 2.0]


def test_creation_functions(device):
    assert minigrad.zeros((2, 3), device=device).numpy().sum() == 0
    assert minigrad.ones(2, 3, device=device).numpy().sum() == 6
    assert minigrad.randn(4, 5, device=device).shape == (4, 5)
    assert minigrad.rand(3, device=device).dtype == np.float32
    minigrad.manual_seed(7)
    a = minigrad.randn(3).numpy()
    minigrad.manual_seed(7)
    np.testing.assert_array_equal(minigrad.randn(3).numpy(), a)
    assert minigrad.arange(3).numpy().tolist() == [0, 1, 2]
    assert minigrad.zeros_like(minigrad.ones(2)).numpy().tolist() == [0.0, 0.0]


def test_ragged_nested_list_is_a_clear_error():
    with pytest.raises(ValueError, match="ragged"):
        minigrad.tensor([[1.0, 2.0], [3.0]])


def test_object_numpy_array_is_rejected():
    with pytest.raises(TypeError, match="dtype object"):
        minigrad.tensor(np.array([1, 2], dtype=object))


def test_complex_tensors_cannot_require_grad():
    # complex gradients need conjugates (Wirtinger calculus), which minigrad's
    # Functions do not implement: refuse instead of giving wrong gradients
    z = minigrad.tensor([1 + 2j])
    assert z.dtype == np.complex128
    with pytest.raises(TypeError, match="floating"):
        minigrad.tensor([1 + 2j], requires_grad=True)


def test_arange_with_a_float_step_takes_the_default_dtype_as_in_pytorch():
    assert minigrad.arange(0, 1, 0.25).dtype == np.float32
    assert minigrad.arange(0, 1, 0.25).tolist() == [0.0, 0.25, 0.5, 0.75]
    assert minigrad.arange(3).dtype == np.int64
    assert minigrad.arange(0, 1, 0.5, dtype=np.float64).dtype == np.float64
