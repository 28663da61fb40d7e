"""The engine: graph recording, the backward driver, freeing graphs, grad mode."""
from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import minigrad
from minigrad import Function
from minigrad.functions import elementwise as E


def _leaf(data, device="cpu", dtype=np.float64):
    return minigrad.tensor(np.asarray(data, dtype=dtype), device=device, requires_grad=True)


# ------------------------------------------------------------------ the driver
@pytest.mark.slow
def test_long_chain_backpropagates_without_recursion_error():
    n = 100_000
    assert sys.getrecursionlimit() < n
    x = _leaf(1.0)
    y = x
    for _ in range(n):
        y = -y
    y.backward()
    assert x.grad.item() == 1.0          # (-1)^100000


def test_backward_visits_every_function_once():
    """Linear time: each Function's backward runs exactly once, even in a graph
    where every node is used twice (2^width paths from output to input)."""
    calls = {"n": 0}

    class CountedAdd(E.Add):
        def backward(self, g):
            calls["n"] += 1
            return super().backward(g)

    for width in (10, 1000):
        calls["n"] = 0
        x = _leaf(1.0)
        y = x
        for _ in range(width):
            y = CountedAdd()(y, y * 0.5)     # a diamond per step
        y.backward()
        assert calls["n"] == width
        assert x.grad.item() == pytest.approx(1.5 ** width, rel=1e-12)


def test_a_node_used_several_times_receives_the_sum(device):
    x = _leaf([1.0, 2.0], device)
    y = x * 3
    z = y * y + y + x          # y used three times, x twice
    z.sum().backward()
    # dz/dx = 2·y·3 + 3 + 1 = 18x + 4
    np.testing.assert_array_equal(x.grad.numpy(), [22.0, 40.0])


def test_backward_adds_into_leaf_grad(device):
    x = _leaf([1.0, 2.0], device)
    (x * 2).sum().backward()
    (x * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [2.0 + 2.0, 2.0 + 4.0])
    x.zero_grad()
    assert x.grad is None


def test_second_backward_raises_by_default():
    x = _leaf([1.0, 2.0])
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="second time.*retain_graph=True"):
        y.backward()


def test_second_backward_through_freed_interior_raises():
    x = _leaf([1.0, 2.0])
    h = x.exp()
    h.sum().backward()
    with pytest.raises(RuntimeError, match="already freed"):
        (h * 2).sum().backward()


def test_retain_graph_exactly_doubles_leaf_gradients(device):
    x = _leaf([0.5, -1.0, 2.0], device)
    w = _leaf([[1.0, 2.0, 3.0]], device)
    h = (x * w).tanh()
    y = (h * h + h).sum()        # an interior node used twice: no stale sum may leak
    y.backward(retain_graph=True)
    gx, gw = x.grad.numpy().copy(), w.grad.numpy().copy()
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), 2 * gx)
    np.testing.assert_array_equal(w.grad.numpy(), 2 * gw)


def test_backward_on_non_scalar_needs_grad():
    y = _leaf([1.0, 2.0]) * 2
    with pytest.raises(ValueError, match=r"only for a tensor with one element.*\(2,\)"):
        y.backward()


def test_backward_grad_shape_must_match():
    y = _leaf([[1.0, 2.0]]) * 2
    with pytest.raises(ValueError, match=r"grad has shape \(2,\).*shape \(1, 2\)"):
        y.backward(minigrad.tensor([1.0, 1.0]))


def test_backward_without_graph_raises():
    with pytest.raises(RuntimeError, match="does not require grad"):
        minigrad.tensor([1.0]).sum().backward()


def test_backward_with_explicit_grad_and_on_a_leaf():
    x = _leaf([1.0, 2.0])
    (x * 3).backward(np.array([1.0, 10.0]))
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 30.0])
    leaf = _leaf([5.0])
    g = minigrad.tensor(np.array([2.0]))
    leaf.backward(g)
    g.data[0] = 100.0                 # leaf.grad must not alias the caller's array
    assert leaf.grad.numpy().tolist() == [2.0]


def test_gradients_are_not_aliased_between_leaves_or_with_the_caller():
    a, b = _leaf([1.0, 2.0]), _leaf([3.0, 4.0])
    g = minigrad.tensor(np.array([1.0, 1.0]))
    (a + b).backward(g)               # Add passes the same array to both inputs
    assert a.grad.data is not b.grad.data
    a.grad.data += 1
    assert b.grad.numpy().tolist() == [1.0, 1.0] and g.numpy().tolist() == [1.0, 1.0]


def test_fresh_gradient_becomes_leaf_grad_without_copy():
    seen = {}

    class Scale(Function):
        def forward(self, a):
            return a * 2

        def backward(self, g):
            out = g * 2
            seen["id"] = id(out)
            return out

    x = _leaf([1.0, 2.0])
    Scale()(x).sum().backward()
    assert id(x.grad.data) == seen["id"]
    np.testing.assert_array_equal(x.grad.numpy(), [2.0, 2.0])


def test_gradient_kept_by_a_retained_graph_is_copied():
    class ReturnsSaved(Function):
        def forward(self, a):
            self.saved = np.ones_like(a)
            return a.copy()

        def backward(self, g):
            return self.saved

    x = _leaf([1.0, 2.0])
    fn = ReturnsSaved()
    y = fn(x)
    y.backward(np.ones(2), retain_graph=True)
    x.grad.data += 5
    np.testing.assert_array_equal(fn.saved, [1.0, 1.0])
    y.backward(np.ones(2))
    np.testing.assert_array_equal(x.grad.numpy(), [7.0, 7.0])


def test_inputs_without_requires_grad_get_no_grad():
    x = _leaf([1.0])
    c = minigrad.tensor([2.0], dtype=np.float64)
    (x * c).sum().backward()
    assert c.grad is None and x.grad.item() == 2.0


def test_function_backward_with_wrong_gradient_shape_is_reported():
    class Broken(Function):
        def forward(self, a):
            return a * 1

        def backward(self, g):
            return g.sum(keepdims=True)

    with pytest.raises(RuntimeError, match=r"Broken.backward returned a gradient of shape "
                                           r"\(1,\) for an input of shape \(3,\)"):
        Broken()(_leaf([1.0, 2.0, 3.0])).sum().backward()


def test_multi_output_function():
    class Split(Function):
        def forward(self, a):
            return a[:1].copy(), a[1:].copy()

        def backward(self, g1, g2):
            if g1 is None:
                g1 = np.zeros(1)
            if g2 is None:
                g2 = np.zeros(2)
            return np.concatenate([g1, g2])

    x = _leaf([1.0, 2.0, 3.0])
    first, rest = Split()(x)
    (first * 10 + rest.sum()).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [10.0, 1.0, 1.0])
    y = _leaf([1.0, 2.0, 3.0])
    _, rest = Split()(y)
    rest.sum().backward()            # the unused output's gradient arrives as None
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 1.0, 1.0])


# ------------------------------------------------------ graphs free themselves
def test_graph_is_freed_by_reference_counting_alone():
    gc.collect()
    gc.disable()
    try:
        x = _leaf(np.ones(1000))
        h = (x * 2).exp()                     # an intermediate tensor
        saved = h.creator.out                 # Exp saves its output for backward
        h_ref, saved_ref = weakref.ref(h), weakref.ref(saved)
        fn_ref = weakref.ref(h.creator)
        y = (h * 3).sum()
        del h, saved
        # The graph keeps an Edge to h's creator, not the Tensor h: the Tensor
        # is gone, the array that Exp saved and Exp itself are still needed.
        assert h_ref() is None and saved_ref() is not None and fn_ref() is not None
        del y
        assert saved_ref() is None and fn_ref() is None
    finally:
        gc.enable()


def test_backward_releases_saved_arrays():
    gc.collect()
    gc.disable()
    try:
        x = _leaf(np.ones(1000))
        y = (x * 2).exp()
        saved_ref = weakref.ref(y.creator.out)
        z = (y * 3).sum()
        del y
        z.backward()
        assert saved_ref() is None            # the graph kept nothing after backward
        assert x.grad is not None
    finally:
        gc.enable()


def test_functions_do_not_hold_their_outputs():
    x = _leaf([1.0])
    y = x * 2
    fn = y.creator
    refs = [v for v in vars(fn).values() if v is y]
    assert not refs and y.creator is fn and fn.inputs[0] is x


# ------------------------------------------------------------------- grad mode
def test_no_grad_context_manager():
    x = _leaf([1.0])
    assert minigrad.is_grad_enabled()
    with minigrad.no_grad():
        y = x * 2
        assert not minigrad.is_grad_enabled()
    assert minigrad.is_grad_enabled()
    assert not y.requires_grad and y.creator is None


def test_no_grad_decorator_and_nesting():
    @minigrad.no_grad()
    def evaluate(t):
        assert not minigrad.is_grad_enabled()
        return t * 2

    x = _leaf([1.0])
    assert not evaluate(x).requires_grad
    assert minigrad.is_grad_enabled()
    with minigrad.no_grad():
        with minigrad.enable_grad():
            assert (x * 2).requires_grad
        assert not minigrad.is_grad_enabled()
        with minigrad.no_grad():
            pass
        assert not minigrad.is_grad_enabled()
    assert minigrad.is_grad_enabled()


def test_no_grad_restores_after_an_exception():
    with pytest.raises(KeyError):
        with minigrad.no_grad():
            raise KeyError("boom")
    assert minigrad.is_grad_enabled()

    @minigrad.no_grad()
    def fails():
        raise ValueError("boom")

    with pytest.raises(ValueError):
        fails()
    assert minigrad.is_grad_enabled()


def test_one_no_grad_object_can_be_reentered():
    guard = minigrad.no_grad()
    with guard:
        with guard:
            assert not minigrad.is_grad_enabled()
        assert not minigrad.is_grad_enabled()
    assert minigrad.is_grad_enabled()


def test_set_grad_enabled():
    minigrad.set_grad_enabled(False)
    try:
        assert not (_leaf([1.0]) * 2).requires_grad
    finally:
        minigrad.set_grad_enabled(True)
    assert (_leaf([1.0]) * 2).requires_grad


# ------------------------------------------------------------------ unbroadcast
@pytest.mark.parametrize("grad_shape, shape", [
    ((2, 3, 4), (3, 1)), ((2, 3, 4), ()), ((2, 3), (1, 3)), ((5,), (1,)), ((2, 1), (2, 1)),
])
def test_unbroadcast_sums_to_the_exact_shape(grad_shape, shape):
    g = np.random.default_rng(0).standard_normal(grad_shape)
    out = minigrad.autograd.unbroadcast(g, shape)
    assert out.shape == shape
    np.testing.assert_allclose(out.sum(), g.sum())


def test_unbroadcast_to_a_scalar_shape_gives_an_array():
    g = np.ones((2, 3), dtype=np.float32)
    out = minigrad.autograd.unbroadcast(g, ())
    assert isinstance(out, np.ndarray), (
        f"unbroadcast(g, ()) returned a {type(out).__name__}, not a 0-d array: sum with "
        "keepdims=True and then reshape, since a sum over every axis gives a NumPy scalar")
    assert out.shape == () and out.dtype == np.float32, \
        f"unbroadcast(g of float32, ()) gave shape {out.shape} and dtype {out.dtype}"
