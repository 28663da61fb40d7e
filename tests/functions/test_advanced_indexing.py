"""Every index form NumPy treats as advanced: lists and tuples inside a tuple
index, nested sequences, integer and boolean arrays, Tensors, booleans, mixed
with slices, None and Ellipsis.  The forward equals NumPy's ``a[index]``, except
that ints mixed with arrays select first (PyTorch's rule); and an Ellipsis
that spans no axis separates nothing (PyTorch's rules); the
gradient counts how often each position is selected, computed here from
NumPy's own indexing of the position numbers (np.bincount), independently of
the scatter-add minigrad uses."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad.functions.shape import normalize_index, select_ints_first


def _reference_grad(shape, index, upstream):
    """d sum(upstream * a[index]) / d a from NumPy's own indexing semantics."""
    size = int(np.prod(shape))
    positions = _pytorch_order(np.arange(size).reshape(shape), index)
    return np.bincount(np.ravel(positions), weights=np.ravel(upstream),
                       minlength=size).reshape(shape)


def _pytorch_order(a, index):
    """``a[index]`` with PyTorch's rules: where ints and arrays are mixed, the
    ints select first (NumPy would broadcast them with the arrays), and an
    Ellipsis spanning no axis does not separate two arrays (checked against
    PyTorch itself in test_random_index_matches_torch)."""
    if isinstance(index, tuple):
        index = normalize_index(index, np, a.ndim)
    split = select_ints_first(index) if isinstance(index, tuple) else None
    return a[index] if split is None else a[split[0]][split[1]]


def _check(shape, index, device="cpu", mg_index=None):
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    expected = _pytorch_order(a, index)
    t = minigrad.tensor(a, device=device, requires_grad=True)
    out = t[index if mg_index is None else mg_index]
    np.testing.assert_array_equal(out.numpy(), expected)
    up = np.random.default_rng(1).standard_normal(expected.shape)
    out.backward(minigrad.tensor(up, device=device))
    np.testing.assert_allclose(t.grad.numpy(), _reference_grad(shape, index, up),
                               rtol=1e-12, atol=1e-12)


def test_tuple_inside_a_tuple_index_is_a_sequence():
    x = minigrad.ones((2, 2), requires_grad=True)
    x[((0, 0), slice(None))].sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[2, 2], [0, 0]])


FIXED = {
    "list": (5,), "nested list": (5,), "tuple in tuple": (3, 4), "list and slice": (3, 4),
    "two lists broadcast": (3, 4), "nested lists in tuple": (3, 4), "list after ellipsis": (2, 3, 4),
    "None and list": (3, 4), "bool list": (4,), "bool array and slice": (3, 4),
    "scalar True": (3,), "scalar False": (3,), "empty list": (3,), "0-d int array": (4,),
    "negative repeated": (4,), "split advanced": (2, 3, 4),
}
INDEX = {
    "list": [0, 0, 4, 0],
    "nested list": [[0, 1], [1, 1]],
    "tuple in tuple": ((0, 0, 2), (1, 1, 3)),
    "list and slice": ([2, 0, 2], slice(None)),
    "two lists broadcast": ([[0], [2]], [1, 1, 3]),
    "nested lists in tuple": (slice(1, None), [[0, 0], [3, 3]]),
    "list after ellipsis": (Ellipsis, [1, 1]),
    "None and list": (None, [1, 1], slice(None, None, -1)),
    "bool list": [True, False, True, True],
    "bool array and slice": (slice(None), np.array([True, False, True, True])),
    "scalar True": True,
    "scalar False": False,
    "empty list": [],
    "0-d int array": np.array(2),
    "negative repeated": [-1, 3, -1],
    "split advanced": ([1, 1], slice(None), [0, 0]),
}


@pytest.mark.parametrize("name", INDEX)
def test_fixed_index_forms(name, device):
    _check(FIXED[name], INDEX[name], device)


def test_tensor_indices_and_tensors_inside_lists():
    i = minigrad.tensor(np.array([1, 1, 0]))
    j = minigrad.tensor(np.array([2, 2, 2]))
    _check((3, 4), (np.array([1, 1, 0]), np.array([2, 2, 2])), mg_index=(i, j))
    _check((3, 4), ([1, 1],), mg_index=[minigrad.tensor(np.array(1)), 1])
    mask = minigrad.tensor(np.array([True, False, True]))
    _check((3, 4), np.array([True, False, True]), mg_index=mask)


@pytest.mark.parametrize("bad", [[0.5, 1.0], ["a"], {"a": 1}, 1.5])
def test_bad_index_is_a_clear_error(bad):
    with pytest.raises(IndexError, match="index|indices"):
        minigrad.ones((3,))[bad]


def _index_parts(shape):
    """One index part per axis: int, slice, list (repeats allowed), or bool mask."""
    parts = []
    for n in shape:
        parts.append(st.one_of(
            st.integers(-n, n - 1),
            st.builds(slice, st.none() | st.integers(-n, n), st.none() | st.integers(-n, n),
                      st.sampled_from([None, 1, 2, -1])),
            st.lists(st.integers(-n, n - 1), min_size=1, max_size=4),
            st.lists(st.booleans(), min_size=n, max_size=n).map(np.array),
        ))
    return st.tuples(*parts)


@st.composite
def shapes_and_indices(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    parts = list(draw(_index_parts(shape)))
    # drop trailing parts, or insert an Ellipsis (matching no axis) anywhere;
    # insert None anywhere
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), Ellipsis)
    else:
        parts = parts[:draw(st.integers(1, len(parts)))]
    if draw(st.booleans()):
        parts.insert(draw(st.integers(0, len(parts))), None)
    # lists of equal length broadcast; make every list part the same length
    lists = [p for p in parts if isinstance(p, list)]
    if lists:
        k = min(len(p) for p in lists)
        parts = [p[:k] if isinstance(p, list) else p for p in parts]
    masks = [p for p in parts if isinstance(p, np.ndarray)]
    if masks and (lists or len(masks) > 1):       # keep broadcasting valid: one mask alone
        parts = [slice(None) if isinstance(p, np.ndarray) else p for p in parts]
    return shape, tuple(parts)


@settings(max_examples=60, deadline=None)
@given(shapes_and_indices())
def test_random_index_matches_numpy(case):
    shape, index = case
    _check(shape, index)


@settings(max_examples=30, deadline=None)
@given(shapes_and_indices())
def test_random_index_matches_torch(case):
    torch = pytest.importorskip("torch")
    shape, index = case
    if any(isinstance(p, slice) and (p.step or 1) < 0 for p in index):
        return                                   # PyTorch has no negative steps
    if any(isinstance(p, slice) and ((p.start or 0) < 0 or (p.stop or 0) < 0) for p in index):
        return
    a = np.random.default_rng(0).standard_normal(shape)
    t = minigrad.tensor(a, requires_grad=True)
    out = t[index]
    th_index = tuple(torch.tensor(p) if isinstance(p, (list, np.ndarray)) else p for p in index)
    ta = torch.tensor(a, requires_grad=True)
    ref = ta[th_index]
    # Ints mixed with arrays select first, as in PyTorch (x[0, :, [1, 2]] on
    # (2, 3, 4) is (3, 2); NumPy would give (2, 3)): the same shape and values.
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    (out * out).sum().backward()
    (ref * ref).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), ta.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_int_slice_array_follows_pytorch(torch):
    x = np.arange(24.0).reshape(2, 3, 4)
    t = minigrad.tensor(x, requires_grad=True)
    out = t[0, :, [1, 2]]
    ref = torch.tensor(x)[0, :, [1, 2]]
    assert out.shape == tuple(ref.shape) == (3, 2)
    np.testing.assert_array_equal(out.numpy(), ref.numpy())
    y = np.arange(9.0).reshape(1, 3, 3)             # same shape, values not transposed
    np.testing.assert_array_equal(minigrad.tensor(y)[0, :, [0, 1, 2]].numpy(),
                                  torch.tensor(y)[0, :, [0, 1, 2]].numpy())


# t[index] = value follows the same order: the ints select first (PyTorch's
# index_put_), for the values written and for both gradients.

def _setitem_pair(torch, shape, index, value_shape, seed=0):
    """minigrad's and PyTorch's ``(x * 1)[index] = v`` (x, v requiring grad):
    the results and the gradients of x and v for one random upstream."""
    rng = np.random.default_rng(seed)
    x, v = rng.standard_normal(shape), rng.standard_normal(value_shape)
    up = rng.standard_normal(shape)
    th_index = tuple(torch.tensor(p) if isinstance(p, (list, np.ndarray)) else p
                     for p in index)
    results = []
    for lib, idx, make in ((minigrad, index, minigrad.tensor), (torch, th_index, torch.tensor)):
        tx, tv = make(x, requires_grad=True), make(v, requires_grad=True)
        y = tx * 1
        y[idx] = tv
        (y * make(up)).sum().backward()
        results.append([np.asarray(y.detach().numpy()), tx.grad.numpy(), tv.grad.numpy()])
    return results


SETITEM = {
    "int, slice, list": ((2, 3, 4), (0, slice(None), [1, 2]), (3, 2)),
    "same shape, transposed": ((1, 3, 3), (0, slice(None), [0, 1, 2]), (3, 3)),
    "list, slice, int": ((2, 3, 4), ([1, 0], slice(None), 3), (2, 3)),
    "int, ellipsis, list": ((2, 3, 4), (1, Ellipsis, [3, 0]), (3, 2)),
    "int, slice, two lists": ((2, 3, 4, 5), (1, slice(None), [0, 2], [4, 1]), (3, 2)),
    "int, slice, mask": ((2, 3, 4), (0, slice(None), np.array([True, False, True, True])),
                         (3, 3)),
    "broadcast value": ((2, 3, 4), (0, slice(None), [1, 2]), (2,)),
    "ints adjacent to list": ((2, 3, 4), (1, [0, 2], 3), (2,)),
}


@pytest.mark.parametrize("name", SETITEM)
def test_setitem_mixed_ints_and_arrays_follows_pytorch(name, torch):
    shape, index, value_shape = SETITEM[name]
    (y, gx, gv), (ty, tgx, tgv) = _setitem_pair(torch, shape, index, value_shape)
    np.testing.assert_array_equal(y, ty)
    np.testing.assert_array_equal(gx, tgx)
    np.testing.assert_allclose(gv, tgv, rtol=1e-12, atol=1e-12)


def test_setitem_transposed_case_is_not_numpys(torch):
    """For a (1, 3, 3) tensor NumPy's x[0, :, [0, 1, 2]] = v writes v's
    transpose (the shapes coincide, so nothing fails): minigrad writes v."""
    v = np.arange(9.0).reshape(3, 3)
    t = minigrad.zeros((1, 3, 3), dtype=np.float64)
    t[0, :, [0, 1, 2]] = v
    np.testing.assert_array_equal(t.numpy()[0], v)
    numpy_way = np.zeros((1, 3, 3))
    numpy_way[0, :, [0, 1, 2]] = v
    np.testing.assert_array_equal(numpy_way[0], v.T)


def test_setitem_value_of_numpys_shape_is_a_clear_error():
    t = minigrad.zeros((2, 3, 4))
    with pytest.raises(ValueError, match=r"selected shape \(3, 2\)"):
        t[0, :, [1, 2]] = np.ones((2, 3))


@settings(max_examples=30, deadline=None)
@given(shapes_and_indices())
def test_random_setitem_matches_torch(case):
    torch = pytest.importorskip("torch")
    shape, index = case
    if any(isinstance(p, slice) and ((p.step or 1) < 0 or (p.start or 0) < 0
                                     or (p.stop or 0) < 0) for p in index):
        return                                   # PyTorch has no negative steps
    # a one-element value: repeated positions write the same number, so the
    # result does not depend on which write lands last
    (y, gx, gv), (ty, tgx, tgv) = _setitem_pair(torch, shape, index, (1,))
    np.testing.assert_array_equal(y, ty)
    np.testing.assert_array_equal(gx, tgx)
    np.testing.assert_allclose(gv, tgv, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape, index", [
    ((1, 1, 1), (None, 0, [0, 0], Ellipsis, [0, 0])),    # found by the random test
    ((1, 1, 1), (None, [0, 0], Ellipsis, [0, 0], 0)),
    ((2, 3), ([0, 1], Ellipsis, [1, 2])),                # the Ellipsis spans no axis
    ((2, 3, 4), ([0, 1], Ellipsis, [1, 2])),             # it spans one: arrays go first
])
def test_an_empty_ellipsis_separates_no_arrays_as_in_torch(shape, index):
    torch = pytest.importorskip("torch")
    a = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    t = minigrad.tensor(a, requires_grad=True)
    out = t[index]
    ta = torch.tensor(a, requires_grad=True)
    ref = ta[tuple(torch.tensor(p) if isinstance(p, list) else p for p in index)]
    np.testing.assert_array_equal(out.numpy(), ref.detach().numpy())
    up = np.random.default_rng(0).standard_normal(ref.shape)
    out.backward(minigrad.tensor(up))
    ref.backward(torch.tensor(up))
    np.testing.assert_array_equal(t.grad.numpy(), ta.grad.numpy())
    x = minigrad.tensor(np.zeros(shape))
    tx = torch.zeros(shape, dtype=torch.float64)
    x[index] = minigrad.tensor(up)
    tx[tuple(torch.tensor(p) if isinstance(p, list) else p for p in index)] = torch.tensor(up)
    np.testing.assert_array_equal(x.numpy(), tx.numpy())
