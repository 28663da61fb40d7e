"""TensorDataset, DataLoader and split_micro_batches."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import minigrad
from minigrad import backend
from minigrad.data import DataLoader, TensorDataset, split_micro_batches

DEVICES = [
    "cpu",
    pytest.param("cuda", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not backend.cuda_is_available(), reason="no usable CUDA device"),
    ]),
]


def make_data(n=10):
    X = np.arange(n * 3, dtype=np.float32).reshape(n, 3)
    y = np.arange(n, dtype=np.int64)
    return X, y


# ------------------------------------------------------------------ TensorDataset


def test_tensor_dataset_indexing():
    X, y = make_data()
    ds = TensorDataset(X, y)
    assert len(ds) == 10
    x3, y3 = ds[3]
    np.testing.assert_array_equal(x3, X[3])
    assert y3 == 3
    xb, yb = ds[np.array([4, 1])]
    assert xb.shape == (2, 3) and yb.tolist() == [4, 1]


def test_tensor_dataset_length_mismatch_names_lengths():
    with pytest.raises(ValueError, match=r"\[10, 9\]"):
        TensorDataset(np.zeros((10, 2)), np.zeros(9))
    with pytest.raises(ValueError, match="at least one"):
        TensorDataset()
    with pytest.raises(ValueError, match="at least one axis"):
        TensorDataset(np.float32(1.0))


# ------------------------------------------------------------------ DataLoader


@pytest.mark.parametrize("device", DEVICES)
def test_loader_yields_tensors_in_order(device):
    X, y = make_data(10)
    loader = DataLoader(TensorDataset(X, y), batch_size=4, device=device)
    assert len(loader) == 3
    batches = list(loader)
    assert [b[0].shape for b in batches] == [(4, 3), (4, 3), (2, 3)]
    for xb, yb in batches:
        assert isinstance(xb, minigrad.Tensor) and isinstance(yb, minigrad.Tensor)
        assert not xb.requires_grad and not yb.requires_grad
        assert xb.dtype == np.float32 and yb.dtype == np.int64
        assert xb.device == device
    np.testing.assert_array_equal(np.concatenate([b[0].numpy() for b in batches]), X)
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in batches]), y)


def test_loader_accepts_a_tuple_of_arrays_and_drop_last():
    X, y = make_data(10)
    loader = DataLoader((X, y), batch_size=4, drop_last=True)
    assert len(loader) == 2
    assert [b[1].numpy().tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(DataLoader((X, y), batch_size=5, drop_last=True)) == 2
    assert len(DataLoader((X, y), batch_size=11)) == 1
    assert len(DataLoader((X, y), batch_size=11, drop_last=True)) == 0


def test_shuffle_is_a_new_permutation_each_epoch_and_reproducible():
    X, y = make_data(50)
    loader = DataLoader((X, y), batch_size=7, shuffle=True, seed=0)
    assert loader.epoch == 0
    epochs = []
    for _ in range(3):
        order = np.concatenate([yb.numpy() for _, yb in loader])
        assert sorted(order.tolist()) == list(range(50))  # every sample exactly once
        epochs.append(order)
    assert loader.epoch == 3
    assert not np.array_equal(epochs[0], epochs[1])
    assert not np.array_equal(epochs[1], epochs[2])
    # rows stay aligned with their labels
    for xb, yb in loader:
        np.testing.assert_array_equal(xb.numpy(), X[yb.numpy()])
    again = DataLoader((X, y), batch_size=7, shuffle=True, seed=0)
    for expected in epochs:
        np.testing.assert_array_equal(np.concatenate([yb.numpy() for _, yb in again]), expected)


def test_batches_are_copies():
    X, y = make_data(6)
    (xb, _), = list(DataLoader((X, y), batch_size=6))
    xb.data[...] = -1
    assert X.min() == 0


@pytest.mark.parametrize("bad", [0, -3])
def test_batch_size_must_be_positive(bad):
    with pytest.raises(ValueError, match=f"batch_size must be >= 1, got {bad}"):
        DataLoader(make_data(), batch_size=bad)


@pytest.mark.parametrize("bad", [2.5, "4", True, None])
def test_batch_size_must_be_an_int(bad):
    with pytest.raises(TypeError, match="batch_size"):
        DataLoader(make_data(), batch_size=bad)


# ------------------------------------------------------------------ split_micro_batches


def test_split_sizes_follow_array_split():
    x = np.arange(10)
    parts = split_micro_batches(x, 3)
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    assert [len(p) for p in split_micro_batches(x, 10)] == [1] * 10
    assert [p.tolist() for p in split_micro_batches(x, 1)] == [x.tolist()]


def test_split_a_tuple_keeps_pairs_aligned():
    X, y = make_data(7)
    parts = split_micro_batches((X, y), 2)
    assert len(parts) == 2 and all(isinstance(p, tuple) and len(p) == 2 for p in parts)
    assert parts[0][1].tolist() == [0, 1, 2, 3] and parts[1][1].tolist() == [4, 5, 6]
    for xp, yp in parts:
        np.testing.assert_array_equal(xp, X[yp])


@pytest.mark.parametrize("k", [0, -1, 6])
def test_split_rejects_empty_micro_batches(k):
    with pytest.raises(ValueError, match=rf"batch of 5 samples into k={k}"):
        split_micro_batches(np.zeros((5, 2)), k)


def test_split_rejects_misaligned_tuple_and_bad_k_type():
    with pytest.raises(ValueError, match=r"\[4, 3\]"):
        split_micro_batches((np.zeros(4), np.zeros(3)), 2)
    with pytest.raises(TypeError, match="k must be an int"):
        split_micro_batches(np.zeros(4), 2.0)
    with pytest.raises(ValueError, match="at least one axis"):
        split_micro_batches(np.float64(3.0), 1)


@given(
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=12),
               elements=st.floats(-1e3, 1e3)),
    st.data(),
)
def test_split_properties(x, data):
    n = x.shape[0]
    k = data.draw(st.integers(1, n), label="k")
    parts = split_micro_batches(x, k)
    assert len(parts) == k
    sizes = [p.shape[0] for p in parts]
    assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1
    assert sizes == sorted(sizes, reverse=True)  # the larger parts come first
    assert sizes == [len(p) for p in np.array_split(x, k)]
    np.testing.assert_array_equal(np.concatenate(parts), x)
    assert all(p.shape[1:] == x.shape[1:] for p in parts)


@given(st.integers(1, 40), st.data())
def test_split_tuple_properties(n, data):
    k = data.draw(st.integers(1, n), label="k")
    X, y = np.random.default_rng(n).normal(size=(n, 2)), np.arange(n)
    parts = split_micro_batches((X, y), k)
    np.testing.assert_array_equal(np.concatenate([p[0] for p in parts]), X)
    np.testing.assert_array_equal(np.concatenate([p[1] for p in parts]), y)


def test_split_tensor_parts_carry_gradients():
    x = minigrad.tensor(np.arange(7, dtype=np.float64), requires_grad=True)
    parts = split_micro_batches(x, 3)
    assert all(isinstance(p, minigrad.Tensor) for p in parts)
    assert [p.shape for p in parts] == [(3,), (2,), (2,)]
    for i, p in enumerate(parts):
        (p * float(i + 1)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1, 1, 1, 2, 2, 3, 3])


def test_split_loader_batch_of_tensors():
    X, y = make_data(10)
    xb, yb = next(iter(DataLoader((X, y), batch_size=10)))
    parts = split_micro_batches((xb, yb), 4)
    assert [p[0].shape[0] for p in parts] == [3, 3, 2, 2]
    np.testing.assert_array_equal(np.concatenate([p[1].numpy() for p in parts]), y)
