"""The new operations that give no gradient: isclose/allclose, nonzero,
the bitwise and shift operators, scatter(value=).  Values stated here,
and compared with PyTorch when it is installed."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad

A = np.array([[5, -3, 0], [12, 7, -128]], dtype=np.int64)
B = np.array([[3, 6, -1], [10, 1, 2]], dtype=np.int64)


def test_isclose_allclose_values():
    a = minigrad.tensor([1.0, float("inf"), float("nan"), 1.0, 0.0])
    b = minigrad.tensor([1.0 + 1e-6, float("inf"), float("nan"), 1.1, 1e-9])
    assert a.isclose(b).tolist() == [True, True, False, False, True]
    assert minigrad.isclose(a, b, equal_nan=True).tolist() == [True, True, True, False, True]
    assert minigrad.isclose(a, b, rtol=0.2, equal_nan=True).all().item()
    assert not minigrad.allclose(a, b) and minigrad.allclose(a[:2], b[:2])
    assert minigrad.tensor([1, 2]).isclose(minigrad.tensor([1, 3])).tolist() == [True, False]
    with pytest.raises(TypeError, match="same dtype"):
        minigrad.tensor([1, 2]).isclose(minigrad.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="rtol and atol must be >= 0"):
        a.isclose(b, atol=-1.0)


def test_nonzero_values():
    x = minigrad.tensor([[0, 3, 0], [4, 0, 5]])
    assert x.nonzero().tolist() == [[0, 1], [1, 0], [1, 2]]
    assert x.nonzero().dtype == np.int64
    rows, cols = minigrad.nonzero(x, as_tuple=True)
    assert rows.tolist() == [0, 1, 1] and cols.tolist() == [1, 0, 2]
    assert minigrad.zeros(0, 3).nonzero().shape == (0, 2)
    assert minigrad.tensor(2.0).nonzero().shape == (1, 0)
    assert minigrad.tensor(0.0).nonzero().shape == (0, 0)
    assert [t.tolist() for t in minigrad.tensor(2.0).nonzero(as_tuple=True)] == [[0]]


def test_bitwise_operators_values():
    a, b = minigrad.tensor(A), minigrad.tensor(B)
    assert (a & b).tolist() == (A & B).tolist()
    assert (a | b).tolist() == (A | B).tolist()
    assert (a ^ b).tolist() == (A ^ B).tolist()
    assert (~a).tolist() == (~A).tolist()
    assert (a & 6).tolist() == (A & 6).tolist() and (6 | a).tolist() == (6 | A).tolist()
    assert minigrad.bitwise_xor(a, 1).tolist() == (A ^ 1).tolist()
    t, f = minigrad.tensor([True, False]), minigrad.tensor([True, True])
    assert (t & f).tolist() == [True, False] and (~t).tolist() == [False, True]
    assert (t | f).dtype == np.bool_
    assert (minigrad.tensor([1, 2], dtype=np.uint8) & minigrad.tensor([3, 3])).dtype == np.int64
    with pytest.raises(TypeError, match="bitwise_and: expected integer or bool tensors"):
        minigrad.tensor([1.0]) & minigrad.tensor([1.0])
    with pytest.raises(TypeError, match="bitwise_not"):
        ~minigrad.tensor([1.5])


def test_shifts_values():
    x = minigrad.tensor([1, -8, 3])
    assert (x << 2).tolist() == [4, -32, 12]
    assert (x >> 1).tolist() == [0, -4, 1]                      # arithmetic, as PyTorch
    assert minigrad.bitwise_left_shift(x, minigrad.tensor([0, 1, 64])).tolist() == [1, -16, 0]
    assert (x >> 64).tolist() == [0, -1, 0]                     # past the width
    assert (minigrad.tensor([1], dtype=np.uint8) << 9).tolist() == [0]
    assert (2 << minigrad.tensor([1, 2])).tolist() == [4, 8]
    assert (minigrad.tensor([True]) << 1).tolist() == [2]       # bool with an int: int64
    assert (x << -1).tolist() == [0, 0, 0]
    with pytest.raises(TypeError, match="shifts need integer tensors"):
        minigrad.tensor([True]) << minigrad.tensor([True])


def test_scatter_value_keyword():
    x = minigrad.zeros(2, 3, requires_grad=True)
    idx = minigrad.tensor([[2], [0]])
    out = x.scatter(1, idx, value=7.5)
    assert out.tolist() == [[0.0, 0.0, 7.5], [7.5, 0.0, 0.0]]
    out.sum().backward()
    assert x.grad.tolist() == [[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]]
    assert minigrad.scatter(minigrad.zeros(3), 0, minigrad.tensor([1]), value=2.0).tolist() == \
        [0.0, 2.0, 0.0]
    with pytest.raises(TypeError, match="src must be a Tensor or a number, got None"):
        x.scatter(1, idx)
    with pytest.raises(TypeError, match="give src or value=, not both"):
        x.scatter(1, idx, 1.0, value=2.0)


def test_parity_with_torch(torch):
    a, b = minigrad.tensor(A), minigrad.tensor(B)
    ta, tb = torch.tensor(A), torch.tensor(B)
    for mine, theirs in (((a & b), (ta & tb)), ((a | 3), (ta | 3)), ((a ^ b), (ta ^ tb)),
                         ((~a), (~ta)), ((a << 3), (ta << 3)), ((a >> 2), (ta >> 2)),
                         (a.bitwise_right_shift(b.abs()), ta.bitwise_right_shift(tb.abs())),
                         (a.nonzero(), ta.nonzero()), (a.isclose(b), ta.isclose(tb))):
        assert mine.tolist() == theirs.tolist()
    x = np.array([1.0, np.inf, np.nan, 1.0, -0.0, 1e-9])
    y = np.array([1.0 + 1e-6, np.inf, np.nan, 1.1, 0.0, 0.0])
    for kw in ({}, {"equal_nan": True}, {"rtol": 0.0, "atol": 1e-8}):
        assert minigrad.tensor(x).isclose(minigrad.tensor(y), **kw).tolist() == \
            torch.tensor(x).isclose(torch.tensor(y), **kw).tolist()
    got = minigrad.zeros(2, 3).scatter(1, minigrad.tensor([[2], [0]]), value=7.5)
    want = torch.zeros(2, 3).scatter(1, torch.tensor([[2], [0]]), value=7.5)
    assert got.tolist() == want.tolist()
