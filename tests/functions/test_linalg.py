"""Matrix multiplication: 2-d, batched with broadcasting, 1-d operands; the
shape error message; float32; parity with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad
from tests.functions import FAST, values
from tests.helpers import check_gradients, compare_with_torch


@st.composite
def matmul_shapes(draw):
    """Shapes (a, b) that numpy.matmul accepts: 1-d or n-d, broadcast batch axes."""
    n, k, m = (draw(st.integers(1, 3)) for _ in range(3))
    a_kind = draw(st.sampled_from(["1d", "2d", "batched"]))
    b_kind = draw(st.sampled_from(["1d", "2d", "batched"]))
    batch = draw(st.sampled_from([(2,), (1,), (2, 1)]))
    other_batch = tuple(1 if draw(st.booleans()) else s for s in batch)
    a = {"1d": (k,), "2d": (n, k), "batched": (*batch, n, k)}[a_kind]
    b = {"1d": (k,), "2d": (k, m), "batched": (*other_batch, k, m)}[b_kind]
    return a, b


@FAST
@given(data=st.data())
def test_matmul_gradcheck(data):
    a_shape, b_shape = data.draw(matmul_shapes())
    a, b = data.draw(values(a_shape)), data.draw(values(b_shape))
    out = minigrad.tensor(a) @ minigrad.tensor(b)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-12, atol=1e-14)
    assert check_gradients(lambda x, y: x @ y, [a, b])


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 4), (4, 2)), ((2, 3, 4), (4, 5)), ((4,), (2, 4, 3)), ((2, 1, 3, 4), (5, 4, 2)),
    ((4,), (4,)), ((3, 4), (4,)),
])
def test_matmul_gradient_shapes(a_shape, b_shape, device):
    a = minigrad.randn(*a_shape, device=device, requires_grad=True)
    b = minigrad.randn(*b_shape, device=device, requires_grad=True)
    out = minigrad.matmul(a, b)
    assert out.shape == np.matmul(np.ones(a_shape), np.ones(b_shape)).shape
    out.sum().backward()
    assert a.grad.shape == a_shape and b.grad.shape == b_shape
    assert a.grad.dtype == b.grad.dtype == out.dtype == np.float32


def test_matmul_error_names_both_shapes():
    a, b = minigrad.ones(32, 64), minigrad.ones(32, 10)
    with pytest.raises(ValueError) as info:
        a @ b
    assert str(info.value) == "matmul: shapes (32, 64) and (32, 10) do not align: 64 != 32"
    with pytest.raises(ValueError, match=r"matmul: shapes \(3,\) and \(4,\) do not align"):
        minigrad.ones(3) @ minigrad.ones(4)
    with pytest.raises(ValueError, match=r"at least 1-d.*\(\) and \(3,\)"):
        minigrad.tensor(2.0) @ minigrad.ones(3)
    with pytest.raises(ValueError, match=r"batch shapes of \(2, 3, 4\) and \(3, 4, 5\)"):
        minigrad.ones(2, 3, 4) @ minigrad.ones(3, 4, 5)


def test_matmul_with_constant_operand_skips_its_gradient():
    w = minigrad.tensor(np.eye(3), requires_grad=True)
    x = np.arange(6.0).reshape(2, 3)
    (x @ w).sum().backward()            # a NumPy array on the left: __rmatmul__
    np.testing.assert_array_equal(w.grad.numpy(), np.repeat(x.sum(0)[:, None], 3, axis=1))


@pytest.mark.parametrize("a_shape, b_shape", [
    ((3, 4), (4, 2)), ((2, 3, 4), (2, 4, 5)), ((2, 1, 3, 4), (5, 4, 2)), ((4,), (4, 3)),
    ((3, 4), (4,)), ((4,), (4,)), ((2, 3, 4), (4,)),
])
def test_parity_with_torch(a_shape, b_shape, torch, device):
    rng = np.random.default_rng(5)
    compare_with_torch(torch, lambda x, y: x @ y, torch.matmul,
                       [rng.standard_normal(a_shape), rng.standard_normal(b_shape)],
                       device=device)


def test_operands_of_different_dtypes_raise(torch):
    # PyTorch promotes nothing in matmul: "expected m1 and m2 to have the same dtype"
    a = minigrad.tensor([[1, 2]])
    b = minigrad.randn(2, 2)
    for x, y in ((a, b), (b, a.reshape(2, 1)), (b, b.double())):
        with pytest.raises(TypeError, match="same dtype, but got"):
            x @ y
    with pytest.raises(RuntimeError, match="same dtype"):
        torch.tensor([[1, 2]]) @ torch.randn(2, 2)
    assert (a.to(np.float32) @ b).dtype == np.float32
